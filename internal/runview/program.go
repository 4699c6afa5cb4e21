package runview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/store"
)

// ProgramView is what a program's page shows beyond its story: its
// source, its diffs against its parent and against the reference, the
// result of its full evaluation (the verdict and why, the timings with
// their noise) and its telemetry.
type ProgramView struct {
	*MemberStory
	Source string
	// Diffs are against the reference, then the parent when that is
	// another program.
	Diffs []Diff
	// Result is the full evaluation's result document (the fast check's
	// when it had none); nil when neither holds one.
	Result *eval.Result
	// Telemetry is the full evaluation's; nil when there is none.
	Telemetry *harness.Telemetry
	// RefTelemetry is the reference's, for its curve beside this one.
	RefTelemetry *harness.Telemetry
}

// Diff is a program against another.
type Diff struct {
	// Label is "reference", "parent" or "other".
	Label   string `json:"label"`
	Against int64  `json:"against"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	// Text is the unified diff; empty when the programs are the same.
	Text string `json:"diff"`
}

// ViewProgram reads member id of run with everything its page shows.
func ViewProgram(ctx context.Context, st interface {
	MemberReader
	ProgramReader
}, run *store.Run, id int64) (*ProgramView, error) {
	story, err := TellMember(ctx, st, run, id)
	if err != nil {
		return nil, err
	}
	v := &ProgramView{MemberStory: story}
	c := story.Child
	src, err := source(ctx, st, c)
	if err != nil {
		return nil, err
	}
	v.Source = string(src)
	against := []struct {
		label string
		m     *store.Child
	}{{"reference", story.Reference}}
	if p := story.Parent; p != nil && (story.Reference == nil || p.ProgramHash != story.Reference.ProgramHash) {
		against = append(against, struct {
			label string
			m     *store.Child
		}{"parent", p})
	}
	for _, a := range against {
		if a.m == nil || a.m.ID == c.ID || a.m.ProgramHash == "" || c.ProgramHash == "" {
			continue
		}
		base, err := source(ctx, st, a.m)
		if err != nil {
			return nil, err
		}
		v.Diffs = append(v.Diffs, DiffOf(a.label, a.m, base, c, src))
	}
	ev := story.FullEvaluation()
	if ev == nil {
		ev = story.FastEvaluation()
	}
	if ev != nil {
		if v.Result, err = ResultOf(ev); err != nil {
			return nil, err
		}
	}
	if e := story.FullEvaluation(); e != nil && !e.FastOnly {
		if v.Telemetry, err = ReadTelemetry(ctx, st, e.ID); err != nil {
			return nil, err
		}
	}
	if r := story.Reference; r != nil && r.ID != c.ID {
		if v.RefTelemetry, err = ReadTelemetry(ctx, st, r.EvaluationID); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// source is a member's program; none when it has none (a failed edit).
func source(ctx context.Context, st ProgramReader, c *store.Child) ([]byte, error) {
	if c.ProgramHash == "" {
		return nil, nil
	}
	src, err := st.Program(ctx, c.ProgramHash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return src, err
}

// DiffOf is program b (member bm) against a (member am).
func DiffOf(label string, am *store.Child, a []byte, bm *store.Child, b []byte) Diff {
	text, st := edit.Diff(fmt.Sprintf("#%d", am.ID), fmt.Sprintf("#%d", bm.ID), a, b)
	return Diff{Label: label, Against: am.ID, Added: st.Added, Removed: st.Removed, Text: text}
}

// ResultOf decodes an evaluation's stored result document; nil when it
// has none (it is still running, or was interrupted).
func ResultOf(e *store.Evaluation) (*eval.Result, error) {
	if len(e.Result) == 0 || string(e.Result) == "null" || string(e.Result) == "{}" {
		return nil, nil
	}
	var r eval.Result
	if err := json.Unmarshal(e.Result, &r); err != nil {
		return nil, fmt.Errorf("evaluation %d: its stored result is unreadable: %w", e.ID, err)
	}
	return &r, nil
}

// EvaluationView is an evaluation on its own, as `frontier eval` stored
// it: the row, its result document, its telemetry and its program.
type EvaluationView struct {
	Evaluation *store.Evaluation
	Result     *eval.Result
	Telemetry  *harness.Telemetry
	Source     string
}

// ViewEvaluation reads evaluation id.
func ViewEvaluation(ctx context.Context, st ProgramReader, id int64) (*EvaluationView, error) {
	e, err := st.Evaluation(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &EvaluationView{Evaluation: e}
	if v.Result, err = ResultOf(e); err != nil {
		return nil, err
	}
	if v.Telemetry, err = ReadTelemetry(ctx, st, id); err != nil {
		return nil, err
	}
	src, err := st.Program(ctx, e.ProgramHash)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	v.Source = string(src)
	return v, nil
}
