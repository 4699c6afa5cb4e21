package evolve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/frontier-bench/frontier/internal/store"
)

// ChildReader is what a child's story reads. store.Store is one.
type ChildReader interface {
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Attempts(ctx context.Context, runID int64) ([]*store.Attempt, error)
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*store.LLMCall, error)
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	RunEvents(ctx context.Context, runID int64, kind string) ([]*store.RunEvent, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
}

// ChildStory is everything a run recorded about one member, for `frontier
// runs child`: where it came from, what it was asked and answered (the
// stored, redacted text), every attempt with its edit and fast check, its
// evaluations, and the claims about it.
type ChildStory struct {
	Child *store.Child
	// Lineage runs from the reference to the child, copies followed to
	// the programs they copy.
	Lineage []*store.Child
	// Source is the member a copy copies, or the known program a
	// duplicate (or a fix) came back to.
	Source      *store.Child
	Attempts    []*store.Attempt
	Calls       []*store.LLMCall
	Evaluations []*store.Evaluation
	Claims      []*store.Confirmation
	// Fallback says why a meta-prompted child was asked with a template
	// instead ("" when it was not).
	Fallback string
}

// TellChild reads member id of run.
func TellChild(ctx context.Context, st ChildReader, run *store.Run, id int64) (*ChildStory, error) {
	kids, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*store.Child{}
	for _, c := range kids {
		byID[c.ID] = c
	}
	c := byID[id]
	if c == nil {
		return nil, fmt.Errorf("run %s has no member #%d: %w", run.Name, id, store.ErrNotFound)
	}
	s := &ChildStory{Child: c, Source: byID[c.SourceID]}
	for p, n := c, 0; p != nil && n < 1000; n++ {
		for p.Origin.IsCopy() && byID[p.SourceID] != nil {
			p = byID[p.SourceID]
		}
		s.Lineage = append([]*store.Child{p}, s.Lineage...)
		p = byID[p.ParentID]
	}
	attempts, err := st.Attempts(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	evalIDs := map[int64]bool{}
	for _, a := range attempts {
		if a.ChildID == id {
			s.Attempts = append(s.Attempts, a)
			if a.FastEvaluationID != 0 {
				evalIDs[a.FastEvaluationID] = true
			}
		}
	}
	calls, err := st.LLMCalls(ctx, run.ID, true)
	if err != nil {
		return nil, err
	}
	for _, call := range calls {
		if call.ChildID == id {
			s.Calls = append(s.Calls, call)
		}
	}
	for _, ev := range []int64{c.FastEvaluationID, c.EvaluationID} {
		if ev != 0 {
			evalIDs[ev] = true
		}
	}
	claims, err := st.Confirmations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	for _, cl := range claims {
		if cl.ChildID == id || cl.BaselineID == id {
			s.Claims = append(s.Claims, cl)
		}
	}
	for evID := range evalIDs {
		ev, err := st.Evaluation(ctx, evID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.Evaluations = append(s.Evaluations, ev)
	}
	slices.SortFunc(s.Evaluations, func(a, b *store.Evaluation) int { return cmp.Compare(a.ID, b.ID) })
	evs, err := st.RunEvents(ctx, run.ID, "idea_fallback")
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		var d struct {
			Child  int64  `json:"child"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(ev.Detail, &d) == nil && d.Child == id {
			s.Fallback = d.Reason
		}
	}
	return s, nil
}
