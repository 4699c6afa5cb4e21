// Package fromstore reads an evolution run from the database into the
// report's Data: the run's settings, every child the search created, the
// reference as measured in the run, and the best program with its source
// and telemetry.
//
// It is the one place that knows both the store's rows and the report's
// data model, so neither package has to know the other. It reads the store
// only: what it needs of a run is in the run's columns and the shared
// vocabulary of internal/runs, never in the engine's configuration.
package fromstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Store is what a report reads: a run, its members and iterations, and
// the programs, evaluations and telemetry they point at. store.Store is
// one.
type Store interface {
	Run(ctx context.Context, ref string) (*store.Run, error)
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	Program(ctx context.Context, hash string) ([]byte, error)
	Telemetry(ctx context.Context, evaluationID int64) ([]byte, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
}

// Load reads run ref (an id or a name) from st. A run that is still going
// loads as it stands: children without a verdict show as pending.
func Load(ctx context.Context, st Store, ref string) (*report.Data, error) {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return nil, err
	}
	models, err := run.ModelList()
	if err != nil {
		return nil, err
	}
	children, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	iters, err := st.Iterations(ctx, run.ID)
	if err != nil {
		return nil, err
	}

	d := &report.Data{Run: report.Run{
		ID:            strconv.FormatInt(run.ID, 10),
		Name:          run.Name,
		Track:         run.Track,
		TargetValLoss: run.TargetValLoss,
		LossFloor:     run.LossFloor,
		StartedAt:     run.StartedAt,
		EndedAt:       run.FinishedAt,
		StopReason:    run.StopReason,
		StopDetail:    run.StopDetail,
		Objective:     run.Objective,
		Sessions:      run.Sessions,
	}}
	for _, m := range models {
		d.Run.Models = append(d.Run.Models, m.Name)
	}
	d.Run.MetaPromptFrom = metaPromptFrom(run, iters)

	byID := make(map[int64]*store.Child, len(children))
	var ref0 *store.Child
	for _, c := range children {
		byID[c.ID] = c
		if c.Origin == runs.OriginReference && ref0 == nil {
			ref0 = c
		}
	}
	if ref0 != nil {
		d.Reference = report.Point{ValLoss: ref0.ValLoss, TrainTimeMs: ref0.TrainTimeMs, StepAvgMs: ref0.StepAvgMs}
		if ref0.EvaluationID != 0 {
			e, err := st.Evaluation(ctx, ref0.EvaluationID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if e != nil {
				d.Run.FingerprintClass = e.FingerprintClass
				d.Reference.Conditions = e.Conditions
			}
		}
	}

	for _, c := range children {
		if c.Origin.IsCopy() || c.Origin == runs.OriginReference {
			continue
		}
		p := Program(c, byID)
		if c.EvaluationID != 0 && c.Verdict.Valid() {
			// The load behind its time, beside it.
			e, err := st.Evaluation(ctx, c.EvaluationID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if e != nil {
				p.Conditions = e.Conditions
			}
		}
		d.Programs = append(d.Programs, p)
	}
	stored, err := st.Confirmations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	claims := make([]runs.Claim, len(stored))
	for i, c := range stored {
		claims[i] = c.Claim
		d.Claims = append(d.Claims, Claim(c.Claim))
	}
	// The record, as the engine and runs show read it: the best program is
	// the record's, the reference when no claim was confirmed.
	var best *store.Child
	var refOut runs.Outcome
	if ref0 != nil && ref0.State == runs.Done {
		refOut = ref0.Outcome()
	}
	if rec := runs.RecordOf(claims, refOut); rec.ID != 0 && byID[rec.ID] != nil {
		best = byID[rec.ID]
		d.Record = &report.Record{ID: rec.ID, Reference: rec.Claim == nil, TrainTimeMs: rec.Ms,
			Evidence: "the reference: no claim to beat it was confirmed"}
		if rec.Claim != nil {
			sp, basis := rec.VsReference(claims, ref0.ID)
			d.Record.Evidence = fmt.Sprintf("%s vs the reference %s; %s", runs.FormatSpeedup(sp), basis, rec.Claim.Evidence())
		}
	}

	if best != nil {
		b, err := loadBest(ctx, st, best, ref0, byID)
		if err != nil {
			return nil, fmt.Errorf("run %s: best program #%d: %w", run.Name, best.ID, err)
		}
		d.Best = b
	}
	return d, nil
}

// Program maps a member of a run to the report's row (also the row of
// runs show --json).
func Program(c *store.Child, byID map[int64]*store.Child) report.Program {
	reason := c.Reason
	if reason == "" && c.Error != "" {
		reason, _, _ = strings.Cut(strings.TrimSpace(c.Error), "\n")
	}
	p := report.Program{
		ID: c.ID, Hash: c.ProgramHash, Iteration: c.Iteration, Island: c.Island, ParentID: original(c.ParentID, byID),
		Model: c.Model, Stage: string(c.Stage), Verdict: string(c.Verdict), Reason: reason,
		ValLoss: c.ValLoss, TrainTimeMs: c.TrainTimeMs, StepAvgMs: c.StepAvgMs, Score: c.Score,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CostUSD: c.CostUSD, FixAttempts: c.FixAttempts,
		Duplicate: c.Verdict == runs.Duplicate, CreatedAt: c.CreatedAt,
	}
	if !c.Origin.IsCopy() {
		p.SourceID = c.SourceID
	}
	// A child the fix loop repaired reached its full run through a fix:
	// its stage is "fix", and the stage of its first prompt is kept.
	if c.FixAttempts > 0 && c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID {
		p.PromptStage, p.Stage = p.Stage, report.StageFix
	}
	return p
}

// original follows copies (seeds, migrants) back to the program they copy,
// and maps the reference to 0: the report names programs the search
// created, and a parent that is the reference is "none".
func original(id int64, byID map[int64]*store.Child) int64 {
	for range 64 { // copies of copies are short chains; the bound guards a corrupt loop
		c := byID[id]
		switch {
		case c == nil:
			return id
		case c.Origin == runs.OriginReference:
			return 0
		case c.Origin.IsCopy() && c.SourceID != 0:
			id = c.SourceID
		default:
			return id
		}
	}
	return id
}

// Claim maps a stored claim to the report's: unknown numbers are left
// out (encoding/json has no NaN).
func Claim(c runs.Claim) report.Claim {
	opt := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	val := func(x float64) float64 {
		if runs.Measured(x) {
			return x
		}
		return 0
	}
	return report.Claim{ID: c.ID, ChildID: c.ChildID, BaselineID: c.BaselineID, Method: string(c.Method), State: string(c.State),
		Source: c.Source, Pairs: c.Pairs, Alpha: c.Alpha, SingleMs: val(c.SingleMs), TimeMs: val(c.TimeMs), BaselineMs: val(c.BaselineMs),
		Speedup: opt(c.Speedup), SpeedupLo: opt(c.SpeedupLo), SpeedupHi: opt(c.SpeedupHi), TimeP: opt(c.TimeP), LossP: opt(c.LossP),
		Evidence: c.Evidence(), Reason: c.Reason}
}

// metaPromptFrom is the first iteration that used meta-prompting; for a
// run that has not reached it yet, the planned one; -1 when the run never
// meta-prompts (turned off, or no model that writes ideas).
func metaPromptFrom(run *store.Run, iters []*store.Iteration) int {
	first := -1
	for _, it := range iters {
		if it.Stage == runs.StageMeta && (first < 0 || it.Iteration < first) {
			first = it.Iteration
		}
	}
	if first >= 0 {
		return first
	}
	return run.MetaStart
}

// loadBest reads the best child's source and telemetry, and the
// reference's for comparison. Missing telemetry leaves tables empty (the
// report says so); a database error fails the load.
func loadBest(ctx context.Context, st Store, best, ref *store.Child, byID map[int64]*store.Child) (*report.Best, error) {
	src, err := st.Program(ctx, best.ProgramHash)
	if err != nil {
		return nil, err
	}
	b := &report.Best{Program: Program(best, byID), Source: string(src)}
	t, err := telemetry(ctx, st, best.EvaluationID)
	if err != nil {
		return nil, err
	}
	if t != nil {
		b.Sections, b.Curve, b.Vals = t.Sections, t.Steps, t.Vals
		if t.TopOps != nil {
			b.TopOps = []harness.TopOps{*t.TopOps}
		}
	}
	if ref == nil {
		return b, nil
	}
	if ref.ProgramHash != "" {
		rsrc, err := st.Program(ctx, ref.ProgramHash)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		b.ReferenceSource = string(rsrc)
	}
	rt, err := telemetry(ctx, st, ref.EvaluationID)
	if err != nil {
		return nil, err
	}
	if rt != nil {
		b.ReferenceSections, b.ReferenceCurve = rt.Sections, rt.Steps
	}
	return b, nil
}

// telemetry reads an evaluation's telemetry; nil when there is none.
func telemetry(ctx context.Context, st Store, evalID int64) (*harness.Telemetry, error) {
	if evalID == 0 {
		return nil, nil
	}
	raw, err := st.Telemetry(ctx, evalID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return harness.ReadTelemetry(bytes.NewReader(raw))
}
