package runview

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// MemberReader is what a member's story reads. store.Store is one.
type MemberReader interface {
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Attempts(ctx context.Context, runID int64) ([]*store.Attempt, error)
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*store.LLMCall, error)
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	RunEvents(ctx context.Context, runID int64, kind string) ([]*store.RunEvent, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
}

// MemberStory is everything a run recorded about one member, for `frontier
// runs child` and the dashboard's program page: where it came from, what
// it was asked and answered (the stored, redacted text), every attempt
// with its edit and fast check, its evaluations, and the claims about it.
type MemberStory struct {
	Run   *store.Run
	Child *store.Child
	// Lineage runs from the reference to the child, copies followed to
	// the programs they copy.
	Lineage []*store.Child
	// Parent is the member it was made from (nil for the reference);
	// Source the member a copy copies, or the known program a duplicate
	// (or a fix) came back to.
	Parent      *store.Child
	Source      *store.Child
	Reference   *store.Child
	Attempts    []*store.Attempt
	Calls       []*store.LLMCall
	Evaluations []*store.Evaluation
	Claims      []*store.Confirmation
	// Fallback says why a meta-prompted child was asked with a template
	// instead ("" when it was not).
	Fallback string
	// Members are every member of the run by id, for naming the others.
	Members map[int64]*store.Child
}

// TellMember reads member id of run; an id the run does not have is
// store.ErrNotFound.
func TellMember(ctx context.Context, st MemberReader, run *store.Run, id int64) (*MemberStory, error) {
	kids, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*store.Child, len(kids))
	var ref *store.Child
	for _, c := range kids {
		byID[c.ID] = c
		if c.Origin == runs.OriginReference && ref == nil {
			ref = c
		}
	}
	c := byID[id]
	if c == nil {
		return nil, fmt.Errorf("run %s has no member #%d: %w", run.Name, id, store.ErrNotFound)
	}
	s := &MemberStory{Run: run, Child: c, Parent: byID[c.ParentID], Source: byID[c.SourceID], Reference: ref, Members: byID}
	s.Lineage = Lineage(byID, c)
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

// Lineage runs from the reference to c through parents, copies followed
// to the programs they copy. A corrupt chain (a loop) stops after 1000
// steps.
func Lineage(byID map[int64]*store.Child, c *store.Child) []*store.Child {
	var out []*store.Child
	for p, n := c, 0; p != nil && n < 1000; n++ {
		if p.Origin.IsCopy() && byID[p.SourceID] != nil {
			p = byID[p.SourceID]
			continue
		}
		out = append(out, p)
		p = byID[p.ParentID]
	}
	slices.Reverse(out)
	return out
}

// FullEvaluation is the member's full evaluation among its story's, nil
// when it had none.
func (s *MemberStory) FullEvaluation() *store.Evaluation {
	return s.evaluation(s.Child.EvaluationID)
}

// FastEvaluation is the member's last fast check, nil when it had none.
func (s *MemberStory) FastEvaluation() *store.Evaluation {
	return s.evaluation(s.Child.FastEvaluationID)
}

func (s *MemberStory) evaluation(id int64) *store.Evaluation {
	if id == 0 {
		return nil
	}
	for _, e := range s.Evaluations {
		if e.ID == id {
			return e
		}
	}
	return nil
}
