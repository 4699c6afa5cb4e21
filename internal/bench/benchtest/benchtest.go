// Package benchtest helps test the reproduction benchmark without
// training anything: an evaluator whose verdicts and times are written in
// the programs it judges, and a fake model that edits those programs.
package benchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
)

// Class is the fingerprint class of every evaluation the Evaluator makes.
const Class = "cpu|fake|1 threads|test"

var (
	timeRE = regexp.MustCompile(`(?m)^TIME = ([0-9.]+)`)
	lossRE = regexp.MustCompile(`(?m)^LOSS = ([0-9.]+)`)
	failRE = regexp.MustCompile(`(?m)^raise (\w+)`)
)

// Program returns a program the Evaluator judges acceptable in ms
// milliseconds with val loss loss; name is a comment that makes programs
// with the same figures differ.
func Program(name string, ms, loss float64) []byte {
	return fmt.Appendf(nil, "# %s\nimport frontier_harness as fh\nTIME = %g\nLOSS = %g\n", name, ms, loss)
}

// Evaluator judges a program by what it says: TIME = ms is its train time,
// LOSS = x its val loss (acceptable at or under the track's target, else
// loss_too_high), and a line "raise Name" makes it fail with an error and
// a traceback; a fast check alone (FastOnly) is fast_ok. It records every evaluation in Store, when set, as the real
// evaluator does (running first, then finished). Evaluate may be called
// from several goroutines.
type Evaluator struct {
	Store eval.Store
	// Before, when set, is called before each evaluation with its number
	// (1, 2, ...), after the evaluation is recorded as running: a test can
	// stop the process there.
	Before func(n int64)
	// After is called once an evaluation is recorded as finished, before
	// Evaluate returns.
	After func(n int64)

	n     atomic.Int64
	mu    sync.Mutex
	calls []eval.Request
}

// Requests returns the requests received so far.
func (e *Evaluator) Requests() []eval.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]eval.Request(nil), e.calls...)
}

// Evaluate implements the evaluator interface of bench and scaffold.
func (e *Evaluator) Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error) {
	e.mu.Lock()
	e.calls = append(e.calls, req)
	e.mu.Unlock()
	n := e.n.Add(1)
	trackHash, err := eval.SpecHash(req.Track)
	if err != nil {
		return nil, err
	}
	res := &eval.Result{Schema: eval.Schema, Seed: req.Seed, Verification: "full", FingerprintClass: Class,
		Track:   eval.TrackInfo{Name: req.Track.Name, Hash: trackHash, Target: req.Track.TargetValLoss},
		Program: eval.ProgramInfo{Name: req.Name, Hash: store.Hash(req.Program), Bytes: len(req.Program)}}
	var rec *store.Evaluation
	if e.Store != nil {
		if _, err := e.Store.PutProgram(ctx, req.Program, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: res.Program.Hash, Track: req.Track.Name, TrackHash: trackHash, Seed: req.Seed, FastOnly: req.FastOnly}
		if err := e.Store.CreateEvaluation(ctx, rec); err != nil {
			return nil, err
		}
		res.EvaluationID = rec.ID
	}
	if e.Before != nil {
		e.Before(n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	judge(req, res)
	if rec != nil {
		doc, _ := json.Marshal(res)
		rec.Verdict, rec.Reason, rec.ValLoss, rec.TrainTimeMs = string(res.Verdict), res.Reason, res.Metrics.ValLoss, res.Metrics.TrainTimeMs
		rec.FingerprintClass, rec.Result = Class, doc
		if err := e.Store.FinishEvaluation(context.WithoutCancel(ctx), rec, nil); err != nil {
			return nil, err
		}
	}
	if e.After != nil {
		e.After(n)
	}
	return res, nil
}

func judge(req eval.Request, res *eval.Result) {
	src := string(req.Program)
	if m := failRE.FindStringSubmatch(src); m != nil {
		res.Verdict, res.Reason = eval.Error, "the program raised "+m[1]
		res.Traceback = "Traceback (most recent call last):\n  File \"train.py\", line 5, in <module>\n" + m[1] + ": it failed"
		return
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
	if req.FastOnly {
		res.Verdict, res.Reason = eval.FastOK, "the fast check ran"
		return
	}
	res.Metrics = eval.Metrics{ValLoss: loss, TrainTimeMs: ms, Steps: 10, StepAvgMs: ms / 10}
	if loss <= req.Track.TargetValLoss {
		res.Verdict, res.Reason = eval.Acceptable, "val loss under the target"
	} else {
		res.Verdict, res.Reason = eval.LossTooHigh, "val loss above the target"
	}
}
