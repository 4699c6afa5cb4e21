// Package edit turns a language model's answer into a new version of a
// program.
//
// An answer holds either aider-style SEARCH/REPLACE blocks
//
//	<<<<<<< SEARCH
//	old lines
//	=======
//	new lines
//	>>>>>>> REPLACE
//
// or a whole new program in a code fence. [Parse] reads either form out of
// real model output (prose, markdown fences, file-name lines, CRLF, cut
// answers) into an [Edit]; [Apply] applies it to the parent program and
// reports, for each block, how its SEARCH text was found: exactly, ignoring
// trailing whitespace, ignoring a uniform indentation shift, or as the one
// window of high similarity. An ambiguous match is never applied and a block
// is never dropped: any failure fails the whole edit with an [*ApplyError]
// (or a [*ParseError]) whose message names the block, says why, shows the
// nearest lines of the program and says what to do, so it can be handed back
// to the model as it is.
//
// Protected regions are spans of a program between the comment lines
//
//	# frontier:protected begin NAME
//	# frontier:protected end NAME
//
// An edit may not change them ([Regions], [CheckProtected],
// [RestoreProtected]). An empty SEARCH appends its REPLACE text to the end of
// the program, or inserts it before the line
//
//	# frontier:insert-here
//
// when the program has exactly one such line.
//
// [Diff] renders a unified diff with line counts, and [Hash] and
// [NormalizedHash] give content hashes for deduplication.
package edit
