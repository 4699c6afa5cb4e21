// Package benchtest helps test the reproduction benchmark without
// training anything: a scripted evaluator (evaltest.Scripted) whose
// verdicts and times are written in the programs it judges, and a fake
// model that edits those programs.
package benchtest

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
)

// Class is the fingerprint class of every evaluation NewEvaluator makes.
const Class = "cpu|fake|1 threads|test"

var (
	timeRE = regexp.MustCompile(`(?m)^TIME = ([0-9.]+)`)
	lossRE = regexp.MustCompile(`(?m)^LOSS = ([0-9.]+)`)
	failRE = regexp.MustCompile(`(?m)^raise (\w+)`)
)

// Program returns a program the evaluator judges acceptable in ms
// milliseconds with val loss loss; name is a comment that makes programs
// with the same figures differ.
func Program(name string, ms, loss float64) []byte {
	return fmt.Appendf(nil, "# %s\nimport frontier_harness as fh\nTIME = %g\nLOSS = %g\n", name, ms, loss)
}

// NewEvaluator returns an evaluator that judges a program by what it says
// (Outcome) and records every evaluation in st, when set, as the real
// evaluator does; it keeps every request (Requests).
func NewEvaluator(st eval.Store) *evaltest.Scripted {
	return &evaltest.Scripted{Store: st, Class: Class, Keep: true, Else: Outcome}
}

// Outcome is what a program says it measures: TIME = ms is its train
// time, LOSS = x its val loss (acceptable at or under the track's target,
// else loss_too_high), and a line "raise Name" makes it fail with an
// error and a traceback; a fast check alone (FastOnly) is fast_ok.
func Outcome(req eval.Request, _ string) evaltest.Outcome {
	src := string(req.Program)
	if m := failRE.FindStringSubmatch(src); m != nil {
		return evaltest.Outcome{Crash: m[1], Reason: "the program raised " + m[1],
			Traceback: "Traceback (most recent call last):\n  File \"train.py\", line 5, in <module>\n" + m[1] + ": it failed"}
	}
	if req.FastOnly {
		return evaltest.Outcome{Reason: "the fast check ran"}
	}
	ms, loss := 1000.0, req.Track.TargetValLoss-0.05
	if m := timeRE.FindStringSubmatch(src); m != nil {
		ms, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := lossRE.FindStringSubmatch(src); m != nil {
		loss, _ = strconv.ParseFloat(m[1], 64)
	}
	// The seed moves the time a little, as on a real machine, so that
	// repeats have a spread.
	ms *= 1 + 0.001*float64(req.Seed%7)
	o := evaltest.Outcome{ValLoss: loss, TrainTimeMs: ms, Steps: 10, Reason: "val loss under the target"}
	if loss > req.Track.TargetValLoss {
		o.Reason = "val loss above the target"
	}
	return o
}
