package runner

import (
	"regexp"
	"strconv"
	"strings"
)

// Bounds on what pythonError returns: a traceback of a deep recursion or
// an exception with a megabyte message must not bloat every Result.
const (
	maxTracebackBytes = 16 << 10
	maxErrorLineBytes = 1 << 10
)

const tracebackHeader = "Traceback (most recent call last):"

// exceptionLine matches the last line of a traceback whose header was lost
// (it fell into the dropped middle of a huge stderr): "ValueError: x",
// "torch.OutOfMemoryError: ...", "KeyboardInterrupt".
var exceptionLine = regexp.MustCompile(`^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)(?::\s.*)?$`)

// pythonError finds the last Python error in a stderr capture and returns
// its traceback (bounded) and its final line. The tail is searched before
// the head because the last error is the one that ended the program.
func pythonError(stderr Output) (traceback, errorLine string) {
	if stderr.Dropped == 0 {
		return lastPythonError(stderr.Head + stderr.Tail)
	}
	if tb, line := lastPythonError(stderr.Tail); line != "" {
		return tb, line
	}
	return lastPythonError(stderr.Head)
}

// lastPythonError recognises, in this order of preference by position (the
// one that starts last wins):
//
//   - a traceback: from the last "Traceback (most recent call last):" to
//     the exception line and its continuation lines. Lines are matched
//     with the header's prefix removed, so "[rank0]: " prefixes added by
//     torchrun and the "  | " margins of exception groups work too;
//   - a SyntaxError (also IndentationError, TabError) reported without a
//     header, as Python does for the main script: the `File "...", line N`
//     line, the source and caret, and the error line;
//   - an interpreter message: "python3: can't open file ..." or
//     "python3: No module named x" (python -m), or "Fatal Python error: ...";
//   - as a last resort, a lone exception line.
func lastPythonError(s string) (traceback, errorLine string) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}

	// Each later kind of error is looked for after the end of the
	// previous one, so a SyntaxError inside a traceback stays part of it.
	tbStart, tbEnd, tb, tbLine := -1, -1, "", ""
	for i := len(lines) - 1; i >= 0; i-- {
		if k := strings.Index(lines[i], tracebackHeader); k >= 0 {
			tbStart = i
			var n int
			tb, tbLine, n = readTraceback(lines[i:], lines[i][:k])
			tbEnd = i + n
			break
		}
	}

	synStart, syn, synLine := -1, "", ""
	for i := len(lines) - 1; i > tbEnd; i-- {
		if isSyntaxErrorLine(lines[i]) {
			synStart, syn, synLine = syntaxError(lines, i)
			break
		}
	}

	msgStart, msgLine := -1, ""
	for i := len(lines) - 1; i > max(tbEnd, synStart); i-- {
		if isInterpreterMessage(lines[i]) {
			msgStart, msgLine = i, lines[i]
			break
		}
	}

	switch {
	case msgStart >= 0:
		return "", bound(msgLine, maxErrorLineBytes)
	case synStart >= 0:
		return boundTraceback(syn), bound(synLine, maxErrorLineBytes)
	case tbStart >= 0 && tbLine != "":
		return boundTraceback(tb), bound(tbLine, maxErrorLineBytes)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if exceptionLine.MatchString(lines[i]) {
			return "", bound(lines[i], maxErrorLineBytes)
		}
	}
	return "", ""
}

// readTraceback reads a traceback that starts at lines[0]. Frame lines are
// indented; the first unindented line is the exception, followed by its
// continuation lines (multi-line messages) up to a blank line. last is the
// index of the last line read.
func readTraceback(lines []string, prefix string) (traceback, errorLine string, last int) {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(lines[0], prefix))
	excAt := -1
	for i := 1; i < len(lines); i++ {
		l, ok := strings.CutPrefix(lines[i], prefix)
		if !ok {
			if excAt >= 0 {
				break
			}
			continue // interleaved output from another process or thread
		}
		if excAt >= 0 && (strings.TrimSpace(l) == "" || i-excAt > 20) {
			break
		}
		b.WriteByte('\n')
		b.WriteString(l)
		last = i
		if excAt < 0 && l != "" && l[0] != ' ' && l[0] != '\t' {
			excAt = i
			errorLine = l
		}
	}
	return b.String(), errorLine, last
}

var syntaxErrorNames = []string{"SyntaxError", "IndentationError", "TabError"}

func isSyntaxErrorLine(l string) bool {
	for _, n := range syntaxErrorNames {
		if strings.HasPrefix(l, n+":") || l == n {
			return true
		}
	}
	return false
}

// syntaxError reads back from the error line at lines[i] to the
// `File "...", line N` line that names the offending source.
func syntaxError(lines []string, i int) (start int, traceback, errorLine string) {
	start = i
	for j := i - 1; j >= 0 && j >= i-6; j-- {
		if strings.HasPrefix(strings.TrimLeft(lines[j], " "), `File "`) {
			start = j
			break
		}
	}
	return start, strings.Join(lines[start:i+1], "\n"), lines[i]
}

// interpreterMessage matches what the interpreter itself prints before any
// code runs: "/usr/bin/python3: can't open file '/x.py': [Errno 2] ..." and
// "python3: No module named foo" (python -m foo).
var interpreterMessage = regexp.MustCompile(`^(\S+): (?:can't open file |No module named )`)

func isInterpreterMessage(l string) bool {
	if m := interpreterMessage.FindStringSubmatch(l); m != nil {
		// "ModuleNotFoundError: No module named 'x'" ends a traceback.
		return !strings.HasSuffix(m[1], "Error")
	}
	return strings.HasPrefix(l, "Fatal Python error: ")
}

// boundTraceback keeps the header and the innermost frames, which are the
// ones that say what went wrong.
func boundTraceback(tb string) string {
	if len(tb) <= maxTracebackBytes {
		return tb
	}
	first, rest, _ := strings.Cut(tb, "\n")
	keep := maxTracebackBytes - len(first) - 64
	if keep < 0 {
		return bound(tb, maxTracebackBytes)
	}
	tail := rest[len(rest)-keep:]
	if k := strings.IndexByte(tail, '\n'); k >= 0 {
		tail = tail[k+1:]
	}
	cut := len(rest) - len(tail)
	return first + "\n  [... " + strconv.Itoa(cut) + " bytes of frames dropped ...]\n" + tail
}

// bound cuts s to at most n bytes on a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(trimPartialRuneEnd([]byte(s[:n]))) + "..."
}
