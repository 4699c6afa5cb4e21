package evolve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// ConfirmRequest is a series asked for from outside a search (frontier
// runs confirm): a member of a run against another, n runs of each in
// alternation.
type ConfirmRequest struct {
	Run           *store.Run
	Track         *track.Spec
	CandidateID   int64
	BaselineID    int64
	Pairs         int
	Seed          int
	Evaluator     SeriesEvaluator
	CandidateName string
	// Together runs the two programs of each pair at once
	// (eval.RepeatRequest.Together).
	Together bool
}

// ErrNoSeries is returned when the series could not run at all.
var ErrNoSeries = errors.New("the series could not run")

// Confirm runs the series of req and records its outcome as a claim of the
// run (source "cli"), failed and rejected ones too, so that every reader of
// the run shows it. It returns the claim and the evaluator's result.
func Confirm(ctx context.Context, st Store, req ConfirmRequest) (*store.Confirmation, *eval.Result, error) {
	kids, err := st.Children(ctx, req.Run.ID)
	if err != nil {
		return nil, nil, err
	}
	byID := map[int64]*store.Child{}
	for _, c := range kids {
		byID[c.ID] = c
	}
	cand, base := byID[req.CandidateID], byID[req.BaselineID]
	if cand == nil || base == nil || cand.ProgramHash == "" || base.ProgramHash == "" {
		return nil, nil, fmt.Errorf("run %s has no programs #%d and #%d to compare", req.Run.Name, req.CandidateID, req.BaselineID)
	}
	if cand.ProgramHash == base.ProgramHash {
		return nil, nil, fmt.Errorf("#%d and #%d are the same program: nothing to compare", cand.ID, base.ID)
	}
	candSrc, err := st.Program(ctx, cand.ProgramHash)
	if err != nil {
		return nil, nil, err
	}
	baseSrc, err := st.Program(ctx, base.ProgramHash)
	if err != nil {
		return nil, nil, err
	}
	nan := math.NaN()
	cl := &store.Confirmation{RunID: req.Run.ID, Claim: runs.Claim{ChildID: cand.ID, BaselineID: base.ID, Method: runs.MethodSeries,
		State: runs.ClaimRunning, Source: "cli", Pairs: req.Pairs, Alpha: req.Track.Verification.Alpha, TimeMs: nan, BaselineMs: nan,
		TimeSD: nan, BaselineSD: nan, LossMean: nan, LossSD: nan, Speedup: nan, SpeedupLo: nan, SpeedupHi: nan, TimeP: nan,
		LossP: nan, NoiseCV: nan}}
	j := &journal{st: st, run: req.Run}
	if err := j.claimsChanged(ctx, cl); err != nil {
		return nil, nil, err
	}
	started := time.Now()
	res, serr := req.Evaluator.EvaluateRepeats(ctx, eval.RepeatRequest{
		Request: eval.Request{Track: req.Track, Program: candSrc, Name: req.CandidateName, Seed: req.Seed},
		N:       req.Pairs, Baseline: baseSrc, Together: req.Together,
	})
	wctx := context.WithoutCancel(ctx)
	if serr != nil && ctx.Err() != nil {
		cl.State, cl.Reason, cl.FinishedAt = runs.ClaimFailed, "interrupted: "+serr.Error(), time.Now()
		for _, h := range []string{cand.ProgramHash, base.ProgramHash} {
			_ = j.evaluationsInterrupted(wctx, h, started.Add(-time.Second))
		}
		return cl, nil, errors.Join(serr, j.claimsChanged(wctx, cl))
	}
	cl.State, cl.Reason = FillClaim(cl, res, serr)
	cl.FinishedAt = time.Now()
	if err := j.claimsChanged(wctx, cl); err != nil {
		return cl, res, err
	}
	if serr != nil {
		return cl, nil, fmt.Errorf("%w: %w", ErrNoSeries, serr)
	}
	return cl, res, nil
}
