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
	// EndedOnDuplicate counts settled children whose last program was one
	// the run knew (not evaluated again) after a program of their own had
	// failed its fast check: they count by that failure in Settled, and
	// are shown apart from the duplicates.
	EndedOnDuplicate int
	// Evaluations is the number of the search's full evaluations (the
	// reference's included), SeriesRuns the runs of its confirmation
	// series, counted apart; FastChecks the number of fast checks.
	Evaluations int
	SeriesRuns  int
	FastChecks  int
	Reference   *store.Child
	// Record is the run's record (docs/evolve.md, "The record rule"): the
	// program of the confirmed claim with the shortest mean time, else the
	// reference; nil before the reference has a time. RecordMs is its best
	// time estimate and RecordClaim the claim it rests on (nil for the
	// reference). RecordSingleMs is its single timing in the search, what
	// a candidate is compared with; RecordSpeedup its speedup over the
	// reference from its claims, RecordBasis what that rests on (both zero
	// while the reference is the record).
	Record         *store.Child
	RecordMs       float64
	RecordN        int // the timings behind RecordMs: 1, or a series' runs
	RecordSingleMs float64
	RecordSpeedup  float64
	RecordBasis    string
	RecordClaim    *runs.Claim
	// Fastest is the acceptable child with the shortest single timing,
	// nil when none. Candidate is the candidate record: the fastest single
	// timing whose claim was not refuted, when it is faster than the
	// record; nil when there is none.
	Fastest   *store.Child
	Candidate *store.Child
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
	// Islands are per island: its members, its best program and the
	// migrants it sent and received.
	Islands []IslandStats
	// Purposes is the spend per purpose of model calls (template, idea,
	// implement, fix), in that order.
	Purposes []PurposeStats
	// Sessions counts the sessions that ran the run; Resumed the times
	// it was resumed (sessions after the first).
	Resumed int
	// MetaStart is the first iteration that used meta-prompting; -1 if
	// none did.
	MetaStart int
	// Active is the run's active time over all sessions.
	Active time.Duration
}

// IslandStats are one island's population.
type IslandStats struct {
	Island int
	// Members are the settled members holding a program: Originals were
	// made here, Copies came as the reference's seed or as migrants.
	Members, Originals, Copies int
	// Best is the island's best program by the run's objective.
	Best *store.Child
	// Iterations that worked on the island; MigrantsIn and MigrantsOut
	// count the programs migration moved.
	Iterations              int
	MigrantsIn, MigrantsOut int
}

// PurposeStats is the spend of the model calls of one purpose.
type PurposeStats struct {
	Purpose                   string
	Calls, Failed, Lost       int
	InputTokens, OutputTokens int64
	CostUSD                   float64
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

// Reader is what a run's summary reads. store.Store is one.
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
		if c.SourceID != 0 && c.Verdict != runs.Duplicate {
			s.EndedOnDuplicate++
		}
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
	var rec runs.Record
	s.Record, rec = standingOf(s.Claims, byID, s.Reference)
	s.RecordMs, s.RecordN, s.RecordSingleMs, s.RecordClaim = rec.Ms, rec.N, rec.SingleMs, rec.Claim
	if rec.Claim != nil && s.Reference != nil {
		s.RecordSpeedup, s.RecordBasis = rec.VsReference(claimsOf(s.Claims), s.Reference.ID)
	}
	for _, c := range s.Claims {
		switch {
		case c.Method != runs.MethodSeries:
		case c.State == runs.ClaimRunning:
			s.SeriesRuns += 2 * c.Pairs
		case c.State.Done():
			s.SeriesRuns += len(c.Evaluations)
		}
	}
	if f := s.Settled.Fastest; f.ID != 0 {
		s.Fastest = byID[f.ID]
	}
	if c := fastestOpenOf(s.Claims, s.Children); c != nil && s.Record != nil && c.ID != s.Record.ID && c.TrainTimeMs < s.RecordSingleMs {
		s.Candidate = c
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
	byPurpose := map[string]*PurposeStats{}
	for _, c := range calls {
		s.Calls++
		s.USD += c.CostUSD
		s.Tokens += c.InputTokens + c.OutputTokens
		p := byPurpose[c.Purpose]
		if p == nil {
			p = &PurposeStats{Purpose: c.Purpose}
			byPurpose[c.Purpose] = p
		}
		p.Calls++
		p.InputTokens += c.InputTokens
		p.OutputTokens += c.OutputTokens
		p.CostUSD += c.CostUSD
		switch c.State {
		case store.CallLost:
			s.LostCalls++
			p.Lost++
		case store.CallFailed:
			p.Failed++
		}
	}
	for _, name := range []string{PurposeTemplate, PurposeIdea, PurposeImplement, PurposeFix} {
		if p := byPurpose[name]; p != nil {
			s.Purposes = append(s.Purposes, *p)
			delete(byPurpose, name)
		}
	}
	for _, p := range byPurpose { // purposes of other versions
		s.Purposes = append(s.Purposes, *p)
	}
	migs, err := st.RunEvents(ctx, run.ID, "migration")
	if err != nil {
		return nil, err
	}
	s.Migrations = len(migs)
	sessions, err := st.RunEvents(ctx, run.ID, "session_start")
	if err != nil {
		return nil, err
	}
	s.Resumed = max(0, len(sessions)-1)
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
	s.Islands = islandStats(s.Config, members, its, migs)
	return s, nil
}

// islandStats describes each island: its settled members, its best
// program, its iterations, and the migrants of the recorded migrations.
func islandStats(cfg Config, members []*store.Child, its []*store.Iteration, migs []*store.RunEvent) []IslandStats {
	out := make([]IslandStats, cfg.Islands)
	for i := range out {
		out[i].Island = i
	}
	in := func(i int) bool { return i >= 0 && i < len(out) }
	for _, c := range members {
		if !in(c.Island) || !holdsProgram(c) {
			continue
		}
		is := &out[c.Island]
		is.Members++
		if c.Origin.IsCopy() {
			is.Copies++
		} else {
			is.Originals++
		}
		if c.Verdict.Valid() && (is.Best == nil || rankKey(cfg.Objective, c).less(rankKey(cfg.Objective, is.Best))) {
			is.Best = c
		}
	}
	for _, it := range its {
		if it.Iteration > 0 && in(it.Island) {
			out[it.Island].Iterations++
		}
	}
	for _, ev := range migs {
		var d struct {
			Moves []struct{ From, To int }
		}
		if json.Unmarshal(ev.Detail, &d) != nil {
			continue
		}
		for _, m := range d.Moves {
			if in(m.From) && in(m.To) {
				out[m.From].MigrantsOut++
				out[m.To].MigrantsIn++
			}
		}
	}
	return out
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
