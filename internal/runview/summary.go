package runview

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Purposes of model calls, in the order a run's spend lists them.
var purposeOrder = []string{"template", "idea", "implement", "fix"}

// Summary is what `frontier runs show` prints and the dashboard's run page
// shows: a run's configuration and end, its counts, its best programs and
// what each model and stage produced, read from the store.
type Summary struct {
	Run      *store.Run
	Settings Settings
	Models   []store.RunModel
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
	// Resumed counts the times the run was resumed (sessions after the
	// first).
	Resumed int
	// MetaStart is the first iteration that used meta-prompting; -1 if
	// none did.
	MetaStart int
	// Active is the run's active time over all sessions.
	Active time.Duration

	byID map[int64]*store.Child
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

// SummaryReader is what a run's summary reads. store.Store is one.
type SummaryReader interface {
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Archive(ctx context.Context, runID int64) ([]int64, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*store.LLMCall, error)
	RunEvents(ctx context.Context, runID int64, kind string) ([]*store.RunEvent, error)
}

// Summarize reads a run's summary.
func Summarize(ctx context.Context, st SummaryReader, run *store.Run) (*Summary, error) {
	members, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	claims, err := st.Confirmations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	s, err := summarizeMembers(run, members, claims)
	if err != nil {
		return nil, err
	}
	if s.Archive, err = st.Archive(ctx, run.ID); err != nil {
		return nil, err
	}
	calls, err := st.LLMCalls(ctx, run.ID, false)
	if err != nil {
		return nil, err
	}
	s.addCalls(calls)
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
	s.Islands = islandStats(s.Settings, members, its, migs)
	return s, nil
}

// summarizeMembers is the part of a summary that its members and claims
// make: counts, the record, the candidate, the best programs and the
// groups.
func summarizeMembers(run *store.Run, members []*store.Child, claims []*store.Confirmation) (*Summary, error) {
	cfg, err := SettingsOf(run)
	if err != nil {
		return nil, err
	}
	s := &Summary{Run: run, Settings: cfg, MetaStart: -1, Members: members, Claims: claims,
		Active: time.Duration(run.ActiveMs) * time.Millisecond, byID: make(map[int64]*store.Child, len(members))}
	if s.Models, err = run.ModelList(); err != nil {
		return nil, err
	}
	for _, c := range members {
		s.byID[c.ID] = c
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
	objective := cfg.Objective
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
			if p := s.byID[c.ParentID]; p != nil && runs.Improves(objective, o, p.Outcome()) {
				g.Improved++
			}
			if repaired(c) {
				g.Fixed++
			}
		}
	}
	var rec runs.Record
	s.Record, rec = store.Standing(claims, func(id int64) *store.Child { return s.byID[id] }, s.Reference)
	s.RecordMs, s.RecordN, s.RecordSingleMs, s.RecordClaim = rec.Ms, rec.N, rec.SingleMs, rec.Claim
	if rec.Claim != nil && s.Reference != nil {
		s.RecordSpeedup, s.RecordBasis = rec.VsReference(store.Claims(claims), s.Reference.ID)
	}
	for _, c := range claims {
		switch {
		case c.Method != runs.MethodSeries:
		case c.State == runs.ClaimRunning:
			s.SeriesRuns += 2 * c.Pairs
		case c.State.Done():
			s.SeriesRuns += len(c.Evaluations)
		}
	}
	if f := s.Settled.Fastest; f.ID != 0 {
		s.Fastest = s.byID[f.ID]
	}
	if c := store.FastestOpen(claims, s.Children); c != nil && s.Record != nil && c.ID != s.Record.ID && c.TrainTimeMs < s.RecordSingleMs {
		s.Candidate = c
	}
	slices.SortFunc(valids, func(a, b *store.Child) int { return rankOrder(objective, a, b) })
	s.Top = valids[:min(len(valids), 10)]
	for _, g := range models {
		s.PerModel = append(s.PerModel, *g)
	}
	for _, g := range stages {
		s.PerStage = append(s.PerStage, *g)
	}
	byName := func(a, b GroupStats) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(s.PerModel, byName)
	slices.SortFunc(s.PerStage, byName)
	return s, nil
}

// addCalls sums the run's model calls: in all and per purpose.
func (s *Summary) addCalls(calls []*store.LLMCall) {
	byPurpose := map[string]*PurposeStats{}
	var other []string
	for _, c := range calls {
		s.Calls++
		s.USD += c.CostUSD
		s.Tokens += c.InputTokens + c.OutputTokens
		p := byPurpose[c.Purpose]
		if p == nil {
			p = &PurposeStats{Purpose: c.Purpose}
			byPurpose[c.Purpose] = p
			if !slices.Contains(purposeOrder, c.Purpose) {
				other = append(other, c.Purpose)
			}
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
	for _, name := range append(slices.Clone(purposeOrder), other...) { // purposes of other versions last
		if p := byPurpose[name]; p != nil {
			s.Purposes = append(s.Purposes, *p)
		}
	}
}

// Member returns member id of the run, or nil.
func (s *Summary) Member(id int64) *store.Child { return s.byID[id] }

// Best returns the program `frontier runs best` writes: the record when
// there is one, else the best program by the run's objective, else nil.
func (s *Summary) Best() *store.Child {
	if s.Record != nil {
		return s.Record
	}
	if len(s.Top) > 0 {
		return s.Top[0]
	}
	return nil
}

// Pending is the number of children still queued or in flight.
func (s *Summary) Pending() int { return len(s.Children) - s.Settled.Members }

// CandidateClaim is the newest claim of the run's candidate record (see
// Candidate), or a stand-in in state "unclaimed" when it has none; nil
// when there is no candidate.
func (s *Summary) CandidateClaim() *store.Confirmation {
	if s.Candidate == nil {
		return nil
	}
	for _, c := range slices.Backward(s.Claims) {
		if c.ChildID == s.Candidate.ID {
			return c
		}
	}
	return &store.Confirmation{Claim: runs.Claim{ChildID: s.Candidate.ID, State: Unclaimed}}
}

// Unclaimed is the state of a candidate record no claim was made for.
const Unclaimed runs.ClaimState = "unclaimed"

// BestRows are the programs `runs show` lists as the best: the first
// eight by the objective, then the record and the candidate when they are
// not among them.
func (s *Summary) BestRows() []*store.Child {
	rows := slices.Clone(s.Top[:min(len(s.Top), 8)])
	for _, x := range []*store.Child{s.Record, s.Candidate} {
		if x != nil && !slices.ContainsFunc(rows, func(c *store.Child) bool { return c.ID == x.ID }) {
			rows = append(rows, x)
		}
	}
	return rows
}

// repaired reports whether a child reached its full run after the fix
// loop repaired it.
func repaired(c *store.Child) bool {
	return c.FixAttempts > 0 && c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID
}

// rankOrder orders members by the run's ranking (runs.Ranks), best first.
func rankOrder(objective string, a, b *store.Child) int {
	switch {
	case runs.Ranks(objective, a.Outcome(), b.Outcome()):
		return -1
	case runs.Ranks(objective, b.Outcome(), a.Outcome()):
		return 1
	}
	return 0
}

// holdsProgram reports whether a settled member stands for a program of
// its own in the population (not a duplicate, and a program exists).
func holdsProgram(c *store.Child) bool {
	return c.State == runs.Done && c.ProgramHash != "" &&
		c.Verdict != runs.Duplicate && c.Verdict != runs.NoProposal && c.Verdict != runs.ApplyFailed
}

// islandStats describes each island: its settled members, its best
// program, its iterations, and the migrants of the recorded migrations.
func islandStats(cfg Settings, members []*store.Child, its []*store.Iteration, migs []*store.RunEvent) []IslandStats {
	out := make([]IslandStats, max(cfg.Islands, 0))
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
		if c.Verdict.Valid() && (is.Best == nil || runs.Ranks(cfg.Objective, c.Outcome(), is.Best.Outcome())) {
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
