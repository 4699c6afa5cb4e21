package runview

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

// ReportReader is what a run's report reads: a run, its members, claims
// and iterations, and the programs, evaluations and telemetry they point
// at. store.Store is one.
type ReportReader interface {
	Run(ctx context.Context, ref string) (*store.Run, error)
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
	ProgramReader
}

// ProgramReader reads what a program's page shows besides its row: its
// source, its evaluations and their telemetry.
type ProgramReader interface {
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	Program(ctx context.Context, hash string) ([]byte, error)
	Telemetry(ctx context.Context, evaluationID int64) ([]byte, error)
}

// LoadReport reads run ref (an id or a name) into the static report's
// data. A run that is still going loads as it stands: children without a
// verdict show as pending.
func LoadReport(ctx context.Context, st ReportReader, ref string) (*report.Data, error) {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return nil, err
	}
	members, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	claims, err := st.Confirmations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	iters, err := st.Iterations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	s, err := summarizeMembers(run, members, claims)
	if err != nil {
		return nil, err
	}
	d := ReportOf(s, metaPromptFrom(run, iters))
	if r := s.Reference; r != nil && r.EvaluationID != 0 {
		e, err := st.Evaluation(ctx, r.EvaluationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if e != nil {
			d.Run.FingerprintClass = e.FingerprintClass
			d.Reference.Conditions = e.Conditions
		}
	}
	// The load behind each measured time, beside it: ReportOf made one
	// program per child, in order.
	for i, c := range s.Children {
		if c.EvaluationID == 0 || !c.Verdict.Valid() || i >= len(d.Programs) {
			continue
		}
		e, err := st.Evaluation(ctx, c.EvaluationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if e != nil {
			d.Programs[i].Conditions = e.Conditions
		}
	}
	if s.Record != nil {
		b, err := LoadBest(ctx, st, s, s.Record)
		if err != nil {
			return nil, fmt.Errorf("run %s: best program #%d: %w", run.Name, s.Record.ID, err)
		}
		d.Best = b
	}
	return d, nil
}

// ReportOf is the report's data of a summary, without the best program's
// source and telemetry (LoadBest reads those): the run, the reference as
// measured in the run, every child the search created, the claims and the
// record. metaFrom is the first iteration that meta-prompted, else the
// planned one, else -1.
func ReportOf(s *Summary, metaFrom int) *report.Data {
	run := s.Run
	d := &report.Data{Run: report.Run{
		ID:             strconv.FormatInt(run.ID, 10),
		Name:           run.Name,
		Track:          run.Track,
		TargetValLoss:  run.TargetValLoss,
		LossFloor:      run.LossFloor,
		StartedAt:      run.StartedAt,
		EndedAt:        run.FinishedAt,
		StopReason:     run.StopReason,
		StopDetail:     run.StopDetail,
		Objective:      run.Objective,
		Sessions:       run.Sessions,
		MetaPromptFrom: metaFrom,
	}}
	for _, m := range s.Models {
		d.Run.Models = append(d.Run.Models, m.Name)
	}
	if r := s.Reference; r != nil {
		d.Reference = report.Point{ValLoss: r.ValLoss, TrainTimeMs: r.TrainTimeMs, StepAvgMs: r.StepAvgMs}
	}
	for _, c := range s.Children {
		d.Programs = append(d.Programs, Program(c, s.byID))
	}
	for _, c := range s.Claims {
		d.Claims = append(d.Claims, Claim(c.Claim))
	}
	if s.Record != nil {
		d.Record = &report.Record{ID: s.Record.ID, Reference: s.RecordClaim == nil, TrainTimeMs: s.RecordMs, Evidence: RecordEvidence(s)}
	}
	return d
}

// RecordEvidence says what a run's record rests on, in one line.
func RecordEvidence(s *Summary) string {
	if s.RecordClaim == nil {
		return "the reference: no claim to beat it was confirmed"
	}
	return fmt.Sprintf("%s vs the reference %s; %s", runs.FormatSpeedup(s.RecordSpeedup), s.RecordBasis, s.RecordClaim.Evidence())
}

// MetaFrom is the first iteration that used meta-prompting; for a run that
// has not reached it yet, the planned one; -1 when the run never
// meta-prompts (turned off, or no model that writes ideas).
func (s *Summary) MetaFrom() int {
	if s.MetaStart >= 0 {
		return s.MetaStart
	}
	return s.Run.MetaStart
}

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

// Program maps a member of a run to the report's row, which is also the
// row of a program in the CLI's and the dashboard's JSON.
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
	if repaired(c) {
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

// Claim maps a stored claim to the report's: unknown numbers are left out
// (encoding/json has no NaN).
func Claim(c runs.Claim) report.Claim {
	val := func(x float64) float64 {
		if runs.Measured(x) {
			return x
		}
		return 0
	}
	return report.Claim{ID: c.ID, ChildID: c.ChildID, BaselineID: c.BaselineID, Method: string(c.Method), State: string(c.State),
		Source: c.Source, Pairs: c.Pairs, Alpha: c.Alpha, SingleMs: val(c.SingleMs), TimeMs: val(c.TimeMs), BaselineMs: val(c.BaselineMs),
		Speedup: finite(c.Speedup), SpeedupLo: finite(c.SpeedupLo), SpeedupHi: finite(c.SpeedupHi), TimeP: finite(c.TimeP), LossP: finite(c.LossP),
		Evidence: c.Evidence(), Reason: c.Reason}
}

// finite is x, or nil when it is not a number encoding/json can write.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// LoadBest reads a member's source and telemetry, and the reference's for
// comparison, as the report shows its best program. Missing telemetry
// leaves tables empty; a database error fails the load.
func LoadBest(ctx context.Context, st ProgramReader, s *Summary, best *store.Child) (*report.Best, error) {
	src, err := st.Program(ctx, best.ProgramHash)
	if err != nil {
		return nil, err
	}
	b := &report.Best{Program: Program(best, s.byID), Source: string(src)}
	t, err := ReadTelemetry(ctx, st, best.EvaluationID)
	if err != nil {
		return nil, err
	}
	if t != nil {
		b.Sections, b.Curve, b.Vals = t.Sections, t.Steps, t.Vals
		if t.TopOps != nil {
			b.TopOps = []harness.TopOps{*t.TopOps}
		}
	}
	ref := s.Reference
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
	rt, err := ReadTelemetry(ctx, st, ref.EvaluationID)
	if err != nil {
		return nil, err
	}
	if rt != nil {
		b.ReferenceSections, b.ReferenceCurve = rt.Sections, rt.Steps
	}
	return b, nil
}

// ReadTelemetry reads an evaluation's telemetry; nil when there is none.
func ReadTelemetry(ctx context.Context, st interface {
	Telemetry(ctx context.Context, evaluationID int64) ([]byte, error)
}, evalID int64) (*harness.Telemetry, error) {
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
