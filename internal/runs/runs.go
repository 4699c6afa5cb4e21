// Package runs is the vocabulary of a search's records, shared by those
// that write them (the evaluator, the evolution engine, the benchmark),
// the store that keeps them, and everything that reads them (the read
// model runview, the CLI's runs commands, the report, the dashboard):
// where a member came from (Origin, Stage), where it stands (State), what
// became of it (Verdict, which eval.Verdict is, and its Class); how
// members rank under an objective (Outcome, Ranks, Improves) and the
// aggregates over them (Tally); a claim that a program is faster, how it
// was tested and the record it makes (Claim, Method, ClaimState, Standing,
// Record); and the machine's state while a timing was taken (Conditions).
// Each word and each aggregate is defined here once; the package imports
// nothing of the module.
package runs

// State is where a member of a run stands.
type State string

// Member states, in the order a child passes through them.
const (
	Queued     State = "queued"     // waits for a proposal (or a first evaluation for the reference)
	Fast       State = "fast"       // has a program that waits for (or is in) its fast check
	Fix        State = "fix"        // failed to apply or its fast check; waits for a fix from its model
	Ready      State = "ready"      // passed the fast check; waits for its full evaluation
	Evaluating State = "evaluating" // in its full evaluation
	Done       State = "done"       // has its final verdict
)

// Origin is where a member came from.
type Origin string

// Origins.
const (
	OriginReference Origin = "reference" // the track's reference program
	OriginSeed      Origin = "seed"      // a copy of the reference that seeds another island
	OriginMigrant   Origin = "migrant"   // a copy that migrated from another island
	OriginLLM       Origin = "llm"       // proposed by a language model
	OriginMutate    Origin = "mutate"    // proposed by the non-LLM mutate baseline
	OriginReplay    Origin = "replay"    // proposed from recorded answers
)

// IsCopy reports whether a member of this origin copies another member (an
// island's seed or a migrant) rather than being a program of its own.
func (o Origin) IsCopy() bool { return o == OriginSeed || o == OriginMigrant }

// Stage is the kind of prompt (or proposer) that made a child; an
// iteration's stage is the kind it sampled.
type Stage string

// Stages.
const (
	StageReference Stage = "reference" // the reference's iteration 0
	StageTemplate  Stage = "template"  // one prompt from the template pool
	StageMeta      Stage = "meta"      // a meta-prompted idea, then its implementation
	StageMutate    Stage = "mutate"    // the non-LLM mutate baseline
)

// Verdict is what became of a member: the evaluator's verdict, or one the
// engine gives to a child that was never evaluated.
type Verdict string

// The evaluator's verdicts (eval.Verdict is this type) and the engine's
// own.
const (
	Acceptable  Verdict = "acceptable"
	LossTooHigh Verdict = "loss_too_high"
	Invalid     Verdict = "invalid"
	Error       Verdict = "error"
	Timeout     Verdict = "timeout"
	NoResult    Verdict = "no_result"
	FastOK      Verdict = "fast_ok" // a fast check's, never a child's final verdict

	// Duplicate: the child's program is one the run knows already (after
	// normalizing whitespace); it is not evaluated again, and its SourceID
	// points at the original.
	Duplicate Verdict = "duplicate"
	// ApplyFailed: the model's answers never applied to the program,
	// fixes included.
	ApplyFailed Verdict = "apply_failed"
	// NoProposal: the proposer gave no program (the model call failed, or
	// a mutation found nothing to change).
	NoProposal Verdict = "no_proposal"
)

// Valid reports whether the program ran to its end and was measured
// (acceptable or loss too high).
func (v Verdict) Valid() bool { return v == Acceptable || v == LossTooHigh }

// Class groups verdicts as the paper's breakdown does (Fig. 3c), plus the
// children that were never evaluated.
type Class string

// Classes. Only Buggy, TooHigh and ClassAcceptable are evaluated programs;
// rates count those alone.
const (
	Pending         Class = "pending"       // no final verdict yet
	ClassNone       Class = "no_proposal"   // no program: the proposal itself failed
	ClassDuplicate  Class = "duplicate"     // not evaluated: a known program
	Buggy           Class = "buggy"         // error, timeout, invalid, no_result, apply_failed, or anything unknown
	TooHigh         Class = "loss_too_high" // ran correctly but the loss is above the target
	ClassAcceptable Class = "acceptable"    // loss at or under the target
)

// Classes lists the classes, pending first and acceptable last.
var Classes = []Class{Pending, ClassNone, ClassDuplicate, Buggy, TooHigh, ClassAcceptable}

// ClassOf returns the class of a verdict. A verdict it does not know
// counts as buggy: it is not a completed, valid run. No verdict yet, and a
// fast check's fast_ok, are pending.
func ClassOf(v Verdict) Class {
	switch v {
	case "", FastOK, "pending", "running":
		return Pending
	case NoProposal:
		return ClassNone
	case Duplicate:
		return ClassDuplicate
	case Acceptable:
		return ClassAcceptable
	case LossTooHigh:
		return TooHigh
	}
	return Buggy
}
