package evolve

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// RunSummary is what `frontier runs show` prints: a run's configuration
// and end, its counts, its best programs and what each model and stage
// produced, read from the store.
type RunSummary struct {
	Run    *store.Run
	Config Config
	Models []ModelsRecord
	// Members are every row of the run (copies included); Children only
	// the proposed children (not the reference, not copies).
	Members  []*store.Child
	Children []*store.Child
	// Settled tallies the settled children: counts by class and verdict.
	Settled runs.Tally
	// Evaluations is the number of full evaluations (the reference's
	// included); FastChecks the number of fast checks.
	Evaluations int
	FastChecks  int
	Reference   *store.Child
	// Record is the run's record (docs/evolve.md, "The record rule"): the
	// program of the confirmed claim with the shortest mean time, else the
	// reference; nil before the reference has a time. RecordMs is its best
	// time estimate and RecordClaim the claim it rests on (nil for the
	// reference).
	Record      *store.Child
	RecordMs    float64
	RecordClaim *runs.Claim
	// Fastest is the acceptable child with the shortest single timing: a
	// candidate record, unless a claim confirmed it. nil when none.
	Fastest *store.Child
	// Claims are the run's candidate records with their evidence, in the
	// order made, failed and rejected ones included.
	Claims []*store.Confirmation
	// Top are the best programs by the run's objective, best first.
	Top      []*store.Child
	Archive  []int64
	PerModel []GroupStats
	PerStage []GroupStats
	// Spend over every model call of the run, lost calls included.
	USD        float64
	Tokens     int64
	Calls      int
	LostCalls  int
	Migrations int
	// MetaStart is the first iteration that used meta-prompting; -1 if
	// none did.
	MetaStart int
	// Active is the run's active time over all sessions.
	Active time.Duration
}

// GroupStats are the outcomes of the children of one model or stage.
type GroupStats struct {
	Name string
	// Tally counts the group's settled children by class and verdict, with
	// their record (the fastest acceptable), tokens and cost.
	runs.Tally
	// Improved counts children that beat their parent.
	Improved int
	Fixed    int // passed the fast check after at least one fix
}

// Reader is what a run's summary reads. *store.Store is one.
type Reader interface {
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Archive(ctx context.Context, runID int64) ([]int64, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*store.LLMCall, error)
	RunEvents(ctx context.Context, runID int64, kind string) ([]*store.RunEvent, error)
}

// Summarize reads a run's summary.
func Summarize(ctx context.Context, st Reader, run *store.Run) (*RunSummary, error) {
	s := &RunSummary{Run: run, MetaStart: -1,
		Active: time.Duration(run.ActiveMs) * time.Millisecond}
	if err := json.Unmarshal(run.Config, &s.Config); err != nil {
		return nil, err
	}
	s.Config = s.Config.Resolved()
	s.Models, _ = RunModels(run)
	members, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	s.Members = members
	byID := map[int64]*store.Child{}
	for _, c := range members {
		byID[c.ID] = c
	}
	models := map[string]*GroupStats{}
	stages := map[string]*GroupStats{}
	group := func(m map[string]*GroupStats, name string) *GroupStats {
		g := m[name]
		if g == nil {
			g = &GroupStats{Name: name}
			m[name] = g
		}
		return g
	}
	var valids []*store.Child
	for _, c := range members {
		if c.FastEvaluationID != 0 && !c.Origin.IsCopy() {
			s.FastChecks++
		}
		if c.Origin.IsCopy() {
			continue
		}
		if c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID {
			s.Evaluations++
		}
		if c.Verdict.Valid() && c.State == runs.Done {
			valids = append(valids, c)
		}
		if c.Origin == runs.OriginReference {
			s.Reference = c
			continue
		}
		s.Children = append(s.Children, c)
		if c.State != runs.Done {
			continue
		}
		o := c.Outcome()
		s.Settled.Add(o)
		for _, g := range []*GroupStats{group(models, c.Model), group(stages, string(c.Stage))} {
			g.Add(o)
			if p := byID[c.ParentID]; p != nil && beats(s.Config.Objective, c, p) {
				g.Improved++
			}
			if c.FixAttempts > 0 && c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID {
				g.Fixed++
			}
		}
	}
	if s.Claims, err = st.Confirmations(ctx, run.ID); err != nil {
		return nil, err
	}
	s.Record, s.RecordMs, _ = standingOf(s.Claims, byID, s.Reference)
	if rec, ok := runs.Standing(claimsOf(s.Claims)); ok && s.Record != nil && rec.ChildID == s.Record.ID {
		s.RecordClaim = &rec
	}
	if f := s.Settled.Fastest; f.ID != 0 {
		s.Fastest = byID[f.ID]
	}
	sort.Slice(valids, func(i, j int) bool {
		return rankKey(s.Config.Objective, valids[i]).less(rankKey(s.Config.Objective, valids[j]))
	})
	s.Top = valids[:min(len(valids), 10)]
	for _, g := range models {
		s.PerModel = append(s.PerModel, *g)
	}
	for _, g := range stages {
		s.PerStage = append(s.PerStage, *g)
	}
	byName := func(a, b GroupStats) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	}
	slices.SortFunc(s.PerModel, byName)
	slices.SortFunc(s.PerStage, byName)
	if s.Archive, err = st.Archive(ctx, run.ID); err != nil {
		return nil, err
	}
	calls, err := st.LLMCalls(ctx, run.ID, false)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		s.Calls++
		s.USD += c.CostUSD
		s.Tokens += c.InputTokens + c.OutputTokens
		if c.State == store.CallLost {
			s.LostCalls++
		}
	}
	migs, err := st.RunEvents(ctx, run.ID, "migration")
	if err != nil {
		return nil, err
	}
	s.Migrations = len(migs)
	its, err := st.Iterations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	for _, it := range its {
		if it.Stage == runs.StageMeta {
			s.MetaStart = it.Iteration
			break
		}
	}
	return s, nil
}

// Best returns the program `frontier runs best` writes: the record when
// there is one, else the best program by the run's objective, else nil.
func (s *RunSummary) Best() *store.Child {
	if s.Record != nil {
		return s.Record
	}
	if len(s.Top) > 0 {
		return s.Top[0]
	}
	return nil
}
