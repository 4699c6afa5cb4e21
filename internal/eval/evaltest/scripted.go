package evaltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
)

// Scripted is an evaluator that runs nothing: a test writes what each
// program measures, by its hash or by what its source says, and the
// searches above eval are tested in milliseconds. With a Store it records
// every evaluation as the real evaluator does: the program, the
// evaluation as running before anything is judged, then its result, or
// interrupted when its context ends first. Set its fields before the
// first call; Evaluate may be called from several goroutines.
type Scripted struct {
	// Rules decide a program's outcome: the first that matches it.
	Rules []Rule
	// Else is the outcome of a program no rule matches, given its
	// request and its hash (store.Hash); nil is acceptable at the track's
	// target loss in one second.
	Else func(req eval.Request, hash string) Outcome
	// Store, when set, records the evaluations.
	Store eval.Store
	// Key, when set and Store is not, replaces store.Hash as the
	// program's hash: what Rules' Hash match, what Else receives, what
	// the result reports. A benchmark sets a cheap one, so that its
	// evaluator costs next to nothing: SHA-256 of a 100 KB program, for
	// a fast check and a full run, was a tenth of BenchmarkEngine's CPU
	// time a child. Records (Store) always carry the true hash.
	Key func(src []byte) string
	// Class is the fingerprint class of every result and record.
	Class string
	// Conditions, when set, are recorded with every evaluation: the load
	// it ran under.
	Conditions *store.Conditions
	// Keep keeps every request for Requests. A benchmark of many
	// evaluations leaves it off: it would keep every program.
	Keep bool
	// Before, when set, is called with the number of each evaluation (1,
	// 2, ...) once it is recorded as running, before it is judged: a test
	// can stop the process there. After is called once it is recorded as
	// finished, before Evaluate returns.
	Before, After func(n int64)

	n          atomic.Int64
	fast, full atomic.Int64
	mu         sync.Mutex
	kept       []eval.Request
}

// Rule gives the programs it matches an outcome.
type Rule struct {
	// Hash matches the program whose store.Hash it is.
	Hash string
	// Source, when set, matches the programs it returns true for.
	Source func(src []byte) bool
	Outcome
}

// Contains is a Rule's Source that matches the programs that contain s.
func Contains(s string) func(src []byte) bool {
	return func(src []byte) bool { return bytes.Contains(src, []byte(s)) }
}

// Outcome is what the evaluation of one program establishes.
type Outcome struct {
	// Crash, when set, is the error the program raises ("NameError: name
	// 'x' is not defined"): its fast check and its full run end in the
	// verdict error, with Traceback.
	Crash     string
	Traceback string
	// Verdict is a full run's; "" is acceptable at or under the track's
	// target loss and loss_too_high above it.
	Verdict eval.Verdict
	// Reason replaces the reason written for the verdict.
	Reason string
	// ValLoss and TrainTimeMs are what a full run measures, in Steps
	// steps (60 when zero).
	ValLoss, TrainTimeMs float64
	Steps                int
	// FastDelay and FullDelay are how long a fast check and a full run
	// take; the evaluation ends with an error when its context ends first.
	FastDelay, FullDelay time.Duration
	// Gate, when set, holds each full run until it receives from Gate or
	// Gate is closed: a test catches a search with evaluations in flight.
	Gate <-chan struct{}
	// Err, when set, is what Evaluate returns, before it records
	// anything: the evaluator failed, not the program.
	Err error
}

// FastChecks returns how many fast checks were asked for so far, and
// FullRuns how many full runs, each counted as it starts.
func (s *Scripted) FastChecks() int64 { return s.fast.Load() }

// FullRuns returns how many full runs were asked for so far.
func (s *Scripted) FullRuns() int64 { return s.full.Load() }

// Requests returns the requests received so far, in order, when Keep is
// set.
func (s *Scripted) Requests() []eval.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]eval.Request(nil), s.kept...)
}

// outcome is the outcome s gives the program of req.
func (s *Scripted) outcome(req eval.Request, hash string) Outcome {
	for _, r := range s.Rules {
		if (r.Hash != "" && r.Hash == hash) || (r.Source != nil && r.Source(req.Program)) {
			return r.Outcome
		}
	}
	if s.Else != nil {
		return s.Else(req, hash)
	}
	return Outcome{ValLoss: req.Track.TargetValLoss, TrainTimeMs: 1000}
}

// Evaluate judges req by the script.
func (s *Scripted) Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error) {
	if req.FastOnly {
		s.fast.Add(1)
	} else {
		s.full.Add(1)
	}
	if s.Keep {
		s.mu.Lock()
		s.kept = append(s.kept, req)
		s.mu.Unlock()
	}
	var hash string
	if s.Key != nil && s.Store == nil {
		hash = s.Key(req.Program)
	} else {
		hash = store.Hash(req.Program)
	}
	o := s.outcome(req, hash)
	if o.Err != nil {
		return nil, o.Err
	}
	trackHash, err := eval.SpecHash(req.Track)
	if err != nil {
		return nil, err
	}
	res := &eval.Result{Schema: eval.Schema, Seed: req.Seed, Verification: "full", FingerprintClass: s.Class,
		Track:   eval.TrackInfo{Name: req.Track.Name, Hash: trackHash, Target: req.Track.TargetValLoss},
		Program: eval.ProgramInfo{Name: req.Name, Hash: hash, Bytes: len(req.Program)}}
	var rec *store.Evaluation
	if s.Store != nil {
		if _, err := s.Store.PutProgram(ctx, req.Program, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: hash, Track: req.Track.Name, TrackHash: trackHash, Seed: req.Seed, FastOnly: req.FastOnly}
		if err := s.Store.CreateEvaluation(ctx, rec); err != nil {
			return nil, err
		}
		res.EvaluationID = rec.ID
	}
	n := s.n.Add(1)
	if s.Before != nil {
		s.Before(n)
	}
	if err := wait(ctx, req, o); err != nil {
		if rec != nil {
			rec.State, rec.Reason = store.StateInterrupted, "interrupted: "+err.Error()
			if ferr := s.Store.FinishEvaluation(context.WithoutCancel(ctx), rec, nil); ferr != nil {
				return nil, fmt.Errorf("%w (and marking it interrupted: %v)", err, ferr)
			}
		}
		return nil, err
	}
	judge(req, o, res)
	if rec != nil {
		doc, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		m := res.Metrics
		rec.Verdict, rec.Reason, rec.Result, rec.FingerprintClass, rec.Conditions = string(res.Verdict), res.Reason, doc, s.Class, s.Conditions
		rec.ValLoss, rec.TrainTimeMs, rec.StepAvgMs, rec.Steps = m.ValLoss, m.TrainTimeMs, m.StepAvgMs, m.Steps
		if err := s.Store.FinishEvaluation(context.WithoutCancel(ctx), rec, nil); err != nil {
			return nil, err
		}
	}
	if s.After != nil {
		s.After(n)
	}
	return res, nil
}

// wait takes the time o says req's phase takes.
func wait(ctx context.Context, req eval.Request, o Outcome) error {
	d := o.FullDelay
	if req.FastOnly {
		d = o.FastDelay
	}
	if !req.FastOnly && o.Gate != nil {
		select {
		case <-o.Gate:
		case <-ctx.Done():
			return fmt.Errorf("evaluation canceled: %w", ctx.Err())
		}
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("evaluation canceled: %w", ctx.Err())
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("evaluation canceled: %w", err)
	}
	return nil
}

// judge writes o's verdict for req's phase into res.
func judge(req eval.Request, o Outcome, res *eval.Result) {
	reason := func(r string) string {
		if o.Reason != "" {
			return o.Reason
		}
		return r
	}
	switch {
	case o.Crash != "":
		res.Verdict, res.Reason, res.Traceback = eval.Error, reason("the program raised "+o.Crash), o.Traceback
		return
	case req.FastOnly:
		res.Verdict, res.Reason = eval.FastOK, reason("fast check passed")
		return
	}
	steps := o.Steps
	if steps == 0 {
		steps = 60
	}
	step := o.TrainTimeMs / float64(steps)
	res.Metrics = eval.Metrics{ValLoss: o.ValLoss, TrainTimeMs: o.TrainTimeMs, Steps: steps, StepAvgMs: step, Score: step * o.ValLoss}
	res.Verdict = o.Verdict
	switch {
	case res.Verdict != "":
		res.Reason = reason(string(res.Verdict))
	case o.ValLoss <= req.Track.TargetValLoss:
		res.Verdict, res.Reason = eval.Acceptable, reason("val loss at or under the target")
	default:
		res.Verdict, res.Reason = eval.LossTooHigh, reason("val loss above the target")
	}
}
