// Package evolve is the evolutionary search: a database of programs with
// islands and an elite archive, a prompt sampler with a pool of templates
// and two-stage meta-prompting, an ensemble of models (with an optional
// bandit), a fast error catcher with a fix loop, and the environment's
// evaluator. Proposals and evaluations run in separate bounded pools; every
// decision is stored before it is acted on, so that a run killed at any
// moment resumes where it stood.
//
// New starts a run, Resume continues one; Engine.Run runs it until a
// budget, a drain or a cancellation. What a run holds is read back by
// internal/runview, never by the engine.
// docs/evolve.md describes the algorithm, the configuration and the
// guarantees.
package evolve
