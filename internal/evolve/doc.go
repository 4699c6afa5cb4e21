// Package evolve is the evolutionary search: a database of programs with
// islands and an elite archive, a prompt sampler, LLM proposers and the
// environment as evaluator.
package evolve
