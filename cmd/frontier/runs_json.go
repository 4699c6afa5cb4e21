package main

import (
	"github.com/frontier-bench/frontier/internal/report"
)

// The JSON of the commands that read a search (runs, runs show, runs
// child, runs diff, runs best) and of those that end one (evolve, demo).
// The words are internal/runs' (states, verdicts, origins, stages, claim
// states), times are in milliseconds, a speedup is the fraction of the
// baseline's time saved (runs.Speedup), and programs and claims have the
// report's shapes (docs/report.md). docs/cli.md documents every shape.
//
// A run, a run's summary and a member's story are runview's documents
// (runview.RunRow, RunDoc, MemberDoc), which the dashboard's API serves
// too: the two cannot disagree. What only the CLI prints is here.

// runsDiffJSON is runs diff --json: a member's program against the
// reference and against its parent.
type runsDiffJSON struct {
	Run     string         `json:"run"`
	Member  report.Program `json:"member"`
	Against []diffJSON     `json:"against"`
}

type diffJSON struct {
	// Label is "reference" or "parent".
	Label   string         `json:"label"`
	Member  report.Program `json:"member"`
	Added   int            `json:"added"`
	Removed int            `json:"removed"`
	// Diff is the unified diff, empty when the programs are the same.
	Diff string `json:"diff"`
}

// runsBestJSON is runs best --json: the program written, and why it is
// the one.
type runsBestJSON struct {
	Run    string         `json:"run"`
	Member report.Program `json:"member"`
	// Kind is "record" (a confirmed claim's program), "reference" (no
	// claim was confirmed), "fastest" (--fastest: a single timing) or
	// "best" (nothing is acceptable: the best by the run's objective).
	Kind     string `json:"kind"`
	Evidence string `json:"evidence"`
	// Output is the file written (-o); without one, Source is the program.
	Output string `json:"output,omitempty"`
	Source string `json:"source,omitempty"`
}
