// Package evolve is the evolutionary search: a database of programs with
// islands and an elite archive, a prompt sampler with a pool of templates
// and two-stage meta-prompting, an ensemble of models (with an optional
// bandit), a fast error catcher with a fix loop, confirmation series for
// candidate records, and the environment's evaluator. Proposals and
// evaluations run in separate bounded pools; every decision is stored
// before it is acted on, so that a run killed at any moment resumes where
// it stood.
//
// New starts a run, Resume continues one; Engine.Run (loop.go) runs it
// until a budget, a drain or a cancellation, publishing a Status snapshot
// (status.go) as it goes. The CLI's evolve command and the benchmark's
// evolve scaffold (internal/bench) both drive it. Confirm (series.go) runs
// one confirmation series from outside a search (frontier runs confirm).
// What a run holds is read back by internal/runview, never by the engine.
//
// The Engine is a coordinator over parts that each own their state, one
// file each: population (members, islands, archive), sampler (sample.go:
// every random choice), scheduler (schedule.go: queues, slots, what runs),
// claimBook (claims.go: candidate records and their series), outcomes
// (what the children came to), session (stopping and why), spend (the
// model budget), workers (work.go: proposals and evaluations in
// goroutines; proposal.go: a proposal from its prompt to its program, the
// prompter next to its templates), and the journal (every write to the
// store). A part shows its books through its methods (report fills its
// share of the status); the coordinator reads no part's fields.
// transitions.go and confirm.go say what the coordinator does with a
// worker's result; resume.go rebuilds every part from what the journal
// wrote.
//
// docs/evolve.md describes the algorithm, the configuration and the
// guarantees.
package evolve
