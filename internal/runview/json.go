package runview

import (
	"encoding/json"
	"time"

	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// The JSON documents of a search: what the CLI's runs commands print with
// --json and what the dashboard's API serves (docs/dashboard.md), one
// shape each. The words are internal/runs' (states, verdicts, origins,
// stages, claim states), times are in milliseconds, a speedup is the
// fraction of the baseline's time saved (runs.Speedup), and programs and
// claims have the report's shapes (docs/report.md).

// RunRow is a run: a row of the list of runs, and the head of a run's
// document.
type RunRow struct {
	ID            int64   `json:"id"`
	Name          string  `json:"name"`
	Track         string  `json:"track"`
	TrackDir      string  `json:"track_dir,omitempty"`
	TrackHash     string  `json:"track_hash,omitempty"`
	TargetValLoss float64 `json:"target_val_loss"`
	LossFloor     float64 `json:"loss_floor,omitempty"`
	Objective     string  `json:"objective,omitempty"`
	Seed          uint64  `json:"seed"`
	// State is running, stopped or failed; Stale marks a running run that
	// no session has written to for two minutes (it may have been killed:
	// resume it).
	State      string `json:"state"`
	Stale      bool   `json:"stale,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	StopDetail string `json:"stop_detail,omitempty"`
	Iterations int    `json:"iterations"`
	// Children are the proposed children (not the reference, not
	// copies); Acceptable those of them that reached the target.
	Children   int            `json:"children"`
	Acceptable int            `json:"acceptable"`
	Record     *RecordRow     `json:"record,omitempty"`
	Candidate  *CandidateRow  `json:"candidate,omitempty"`
	CostUSD    float64        `json:"cost_usd"`
	Tokens     int64          `json:"tokens"`
	Sessions   int            `json:"sessions"`
	ActiveMs   int64          `json:"active_ms"`
	StartedAt  time.Time      `json:"started_at"`
	UpdatedAt  time.Time      `json:"updated_at,omitzero"`
	FinishedAt time.Time      `json:"finished_at,omitzero"`
	Budget     []BudgetGauge  `json:"budget,omitempty"`
	Progress   *ProgressCount `json:"progress,omitempty"`
}

// RecordRow is a run's record (docs/evolve.md, "The record rule"): the
// program of the confirmed claim with the shortest mean time, else the
// reference.
type RecordRow struct {
	ID        int64 `json:"id"`
	Reference bool  `json:"reference,omitempty"`
	// TrainTimeMs is its best time estimate, over N timings (1, or the
	// runs of a series).
	TrainTimeMs float64 `json:"train_time_ms"`
	N           int     `json:"n"`
	// Speedup is over the reference, with its interval and p-value when a
	// series measured it; left out for the reference itself.
	Speedup   *float64 `json:"speedup,omitempty"`
	SpeedupLo *float64 `json:"speedup_lo,omitempty"`
	SpeedupHi *float64 `json:"speedup_hi,omitempty"`
	TimeP     *float64 `json:"time_p,omitempty"`
	Evidence  string   `json:"evidence"`
	ClaimID   int64    `json:"claim_id,omitempty"`
}

// CandidateRow is a run's candidate record: an acceptable child that
// measured faster than the record once, whose claim was not refuted.
type CandidateRow struct {
	ID int64 `json:"id"`
	// TrainTimeMs is its single timing; Speedup is over the record.
	TrainTimeMs float64  `json:"train_time_ms"`
	Speedup     *float64 `json:"speedup,omitempty"`
	// ClaimState is where its newest claim stands (runs.ClaimState), or
	// "unclaimed".
	ClaimState  string `json:"claim_state"`
	ClaimReason string `json:"claim_reason,omitempty"`
}

// BudgetGauge is how much of one limit of a run's budget is spent.
type BudgetGauge struct {
	// Name is iterations, evaluations, duration_ms, usd or tokens.
	Name  string  `json:"name"`
	Used  float64 `json:"used"`
	Limit float64 `json:"limit"`
}

// ProgressCount is where a run's children stand: settled, in flight and
// queued.
type ProgressCount struct {
	Settled  int `json:"settled"`
	InFlight int `json:"in_flight"`
	Queued   int `json:"queued"`
}

// RunsDoc is the list of runs.
type RunsDoc struct {
	Runs []RunRow `json:"runs"`
}

// RunDoc is a run's document: the run, its settings, its record and
// claims, its verdicts, its best programs, islands, models, stages and
// spend.
type RunDoc struct {
	Run RunRow `json:"run"`
	// Config is the search's resolved configuration as the run recorded
	// it, as frontier.yaml's evolve: section names it.
	Config json.RawMessage  `json:"config"`
	Models []store.RunModel `json:"models"`
	// Resumed counts the sessions after the first; MetaPromptFrom is the
	// first iteration that meta-prompted, -1 when none did.
	Resumed        int      `json:"resumed"`
	MetaPromptFrom int      `json:"meta_prompt_from"`
	FastChecks     int      `json:"fast_checks"`
	Evaluations    int      `json:"evaluations"`
	SeriesRuns     int      `json:"series_runs"`
	Migrations     int      `json:"migrations"`
	Archive        []int64  `json:"archive"`
	Verdicts       Verdicts `json:"verdicts"`
	// Best are the best programs by the objective (the first eight), the
	// record and the candidate; their times are single timings.
	Best     []report.Program `json:"best"`
	Claims   []report.Claim   `json:"claims"`
	Islands  []IslandRow      `json:"islands"`
	PerModel []GroupRow       `json:"per_model"`
	PerStage []GroupRow       `json:"per_stage"`
	Spend    Spend            `json:"spend"`
}

// Verdicts counts the settled children by class and by verdict.
type Verdicts struct {
	Classes  map[runs.Class]int   `json:"classes"`
	Verdicts map[runs.Verdict]int `json:"verdicts"`
	// Pending are children still queued or in flight; EndedOnDuplicate
	// those that ended on a program the run knew after one of their own
	// failed (counted by that failure).
	Pending          int `json:"pending"`
	EndedOnDuplicate int `json:"ended_on_duplicate"`
}

// IslandRow is one island of a run.
type IslandRow struct {
	Island      int             `json:"island"`
	Iterations  int             `json:"iterations"`
	Members     int             `json:"members"`
	Originals   int             `json:"originals"`
	Copies      int             `json:"copies"`
	MigrantsIn  int             `json:"migrants_in"`
	MigrantsOut int             `json:"migrants_out"`
	Best        *report.Program `json:"best,omitempty"`
}

// GroupRow is the outcome of the children of one model or stage.
type GroupRow struct {
	Name     string               `json:"name"`
	Children int                  `json:"children"`
	Judged   int                  `json:"judged"`
	Ran      int                  `json:"ran"`
	Classes  map[runs.Class]int   `json:"classes"`
	Verdicts map[runs.Verdict]int `json:"verdicts"`
	// AcceptableRate is acceptable among the judged children.
	AcceptableRate float64 `json:"acceptable_rate"`
	Improved       int     `json:"improved"`
	Fixed          int     `json:"fixed"`
	// FastestID and FastestMs are its fastest acceptable child (a single
	// timing); 0 when none.
	FastestID    int64   `json:"fastest_id,omitempty"`
	FastestMs    float64 `json:"fastest_ms,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Spend is what a run's model calls cost, in all and per purpose.
type Spend struct {
	CostUSD   float64      `json:"cost_usd"`
	Tokens    int64        `json:"tokens"`
	Calls     int          `json:"calls"`
	LostCalls int          `json:"lost_calls"`
	Purposes  []PurposeRow `json:"purposes"`
}

// PurposeRow is the spend of the model calls of one purpose.
type PurposeRow struct {
	Purpose      string  `json:"purpose"`
	Calls        int     `json:"calls"`
	Failed       int     `json:"failed"`
	Lost         int     `json:"lost"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Stale says whether a running run has not been written to for two
// minutes at now: the session that ran it may have been killed.
func Stale(r *store.Run, now time.Time) bool {
	return r.State == store.RunRunning && !r.UpdatedAt.IsZero() && now.Sub(r.UpdatedAt) > 2*time.Minute
}

// Row is the summary's run as a row.
func (s *Summary) Row(now time.Time) RunRow {
	r := s.Run
	return RunRow{ID: r.ID, Name: r.Name, Track: r.Track, TrackDir: r.TrackDir, TrackHash: r.TrackHash, TargetValLoss: r.TargetValLoss,
		LossFloor: r.LossFloor, Objective: s.Settings.Objective, Seed: r.Seed, State: r.State, Stale: Stale(r, now), StopReason: r.StopReason,
		StopDetail: r.StopDetail, Iterations: r.Iterations, Children: len(s.Children), Acceptable: s.Settled.Classes[runs.ClassAcceptable],
		Record: s.recordRow(), Candidate: s.candidateRow(), CostUSD: s.USD, Tokens: s.Tokens, Sessions: r.Sessions, ActiveMs: r.ActiveMs,
		StartedAt: r.StartedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt, Budget: s.Gauges(), Progress: s.progress()}
}

func (s *Summary) recordRow() *RecordRow {
	if s.Record == nil {
		return nil
	}
	rec := &RecordRow{ID: s.Record.ID, TrainTimeMs: s.RecordMs, N: max(s.RecordN, 1), Reference: s.RecordClaim == nil,
		Evidence: RecordEvidence(s)}
	if c := s.RecordClaim; c != nil {
		rec.ClaimID = c.ID
		rec.Speedup = finite(s.RecordSpeedup)
		// An interval and a p-value when one series measured the record
		// against the reference itself (a chain of claims has neither).
		if s.Reference != nil && c.BaselineID == s.Reference.ID && c.Basis() == "series" {
			rec.SpeedupLo, rec.SpeedupHi, rec.TimeP = finite(c.SpeedupLo), finite(c.SpeedupHi), finite(c.TimeP)
		}
	}
	return rec
}

func (s *Summary) candidateRow() *CandidateRow {
	c := s.CandidateClaim()
	if c == nil {
		return nil
	}
	return &CandidateRow{ID: c.ChildID, TrainTimeMs: s.Candidate.TrainTimeMs, Speedup: finite(runs.Speedup(s.RecordSingleMs, s.Candidate.TrainTimeMs)),
		ClaimState: string(c.State), ClaimReason: c.Reason}
}

func (s *Summary) progress() *ProgressCount {
	p := &ProgressCount{Settled: s.Settled.Members}
	for _, c := range s.Children {
		switch c.State {
		case runs.Done:
		case runs.Queued:
			p.Queued++
		default:
			p.InFlight++
		}
	}
	return p
}

// Gauges are the run's budget limits with what is spent of each; a limit
// that is not set is left out.
func (s *Summary) Gauges() []BudgetGauge {
	b := s.Settings.Budget
	var out []BudgetGauge
	add := func(name string, used, limit float64) {
		if limit > 0 {
			out = append(out, BudgetGauge{Name: name, Used: used, Limit: limit})
		}
	}
	add("iterations", float64(s.Run.Iterations), float64(b.MaxIterations))
	add("evaluations", float64(s.Evaluations+s.SeriesRuns), float64(b.MaxEvaluations))
	add("duration_ms", float64(s.Run.ActiveMs), float64(b.MaxDuration.D().Milliseconds()))
	add("usd", s.USD, b.MaxUSD)
	add("tokens", float64(s.Tokens), float64(b.MaxTokens))
	return out
}

// Doc is the summary as a run's document.
func (s *Summary) Doc(now time.Time) RunDoc {
	out := RunDoc{Run: s.Row(now), Config: s.Run.Config, Models: s.Models, Resumed: s.Resumed, MetaPromptFrom: s.MetaStart,
		FastChecks: s.FastChecks, Evaluations: s.Evaluations, SeriesRuns: s.SeriesRuns, Migrations: s.Migrations, Archive: s.Archive,
		Verdicts: Verdicts{Classes: orEmpty(s.Settled.Classes), Verdicts: orEmpty(s.Settled.Verdicts), Pending: s.Pending(),
			EndedOnDuplicate: s.EndedOnDuplicate},
		Best: []report.Program{}, Claims: []report.Claim{}, Islands: []IslandRow{},
		Spend: Spend{CostUSD: s.USD, Tokens: s.Tokens, Calls: s.Calls, LostCalls: s.LostCalls, Purposes: []PurposeRow{}}}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	if out.Models == nil {
		out.Models = []store.RunModel{}
	}
	if out.Archive == nil {
		out.Archive = []int64{}
	}
	for _, c := range s.BestRows() {
		out.Best = append(out.Best, Program(c, s.byID))
	}
	for _, c := range s.Claims {
		out.Claims = append(out.Claims, Claim(c.Claim))
	}
	for _, is := range s.Islands {
		i := IslandRow{Island: is.Island, Iterations: is.Iterations, Members: is.Members, Originals: is.Originals, Copies: is.Copies,
			MigrantsIn: is.MigrantsIn, MigrantsOut: is.MigrantsOut}
		if is.Best != nil {
			p := Program(is.Best, s.byID)
			i.Best = &p
		}
		out.Islands = append(out.Islands, i)
	}
	out.PerModel, out.PerStage = groupRows(s.PerModel), groupRows(s.PerStage)
	for _, p := range s.Purposes {
		out.Spend.Purposes = append(out.Spend.Purposes, PurposeRow(p))
	}
	return out
}

func groupRows(gs []GroupStats) []GroupRow {
	out := []GroupRow{}
	for _, m := range gs {
		g := GroupRow{Name: m.Name, Children: m.Members, Judged: m.Judged(), Ran: m.Ran(), Classes: orEmpty(m.Classes), Verdicts: orEmpty(m.Verdicts),
			AcceptableRate: m.AcceptableRate(), Improved: m.Improved, Fixed: m.Fixed, FastestID: m.Fastest.ID,
			InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CostUSD: m.CostUSD}
		if m.Fastest.ID != 0 {
			g.FastestMs = m.Fastest.TrainTimeMs
		}
		out = append(out, g)
	}
	return out
}

// orEmpty is m, or an empty map for nil: JSON's {} rather than null.
func orEmpty[K comparable](m map[K]int) map[K]int {
	if m == nil {
		return map[K]int{}
	}
	return m
}

// MemberDoc is a member's story: the member, its lineage, the claims
// about it, its attempts, evaluations and model calls. Prompts and
// answers are in full, as stored (redacted).
type MemberDoc struct {
	Run         string          `json:"run"`
	Member      MemberRow       `json:"member"`
	Lineage     []MemberRef     `json:"lineage"`
	Source      *MemberRef      `json:"source,omitempty"`
	Fallback    string          `json:"fallback,omitempty"`
	Claims      []report.Claim  `json:"claims"`
	Attempts    []AttemptRow    `json:"attempts"`
	Evaluations []EvaluationRow `json:"evaluations"`
	Calls       []CallRow       `json:"calls"`
}

// MemberRow is a member of a run: the report's row and what else the run
// holds about it.
type MemberRow struct {
	report.Program
	Slot             int         `json:"slot"`
	Origin           runs.Origin `json:"origin"`
	Template         string      `json:"template,omitempty"`
	Seed             uint64      `json:"seed"`
	State            runs.State  `json:"state"`
	Idea             string      `json:"idea,omitempty"`
	Description      string      `json:"description,omitempty"`
	Error            string      `json:"error,omitempty"`
	TimeSummary      string      `json:"time_summary,omitempty"`
	FastEvaluationID int64       `json:"fast_evaluation_id,omitempty"`
	EvaluationID     int64       `json:"evaluation_id,omitempty"`
	UpdatedAt        time.Time   `json:"updated_at,omitzero"`
}

// MemberRef names a member with its outcome in a few fields.
type MemberRef struct {
	ID          int64        `json:"id"`
	Origin      runs.Origin  `json:"origin"`
	State       runs.State   `json:"state"`
	Verdict     runs.Verdict `json:"verdict,omitempty"`
	TrainTimeMs float64      `json:"train_time_ms,omitempty"`
}

// AttemptRow is one step of a member's life.
type AttemptRow struct {
	Attempt          int          `json:"attempt"`
	Kind             string       `json:"kind"`
	LLMCallID        int64        `json:"llm_call_id,omitempty"`
	ProgramHash      string       `json:"program_hash,omitempty"`
	Error            string       `json:"error,omitempty"`
	FastEvaluationID int64        `json:"fast_evaluation_id,omitempty"`
	FastVerdict      runs.Verdict `json:"fast_verdict,omitempty"`
	FastReason       string       `json:"fast_reason,omitempty"`
	CreatedAt        time.Time    `json:"created_at,omitzero"`
}

// EvaluationRow is an evaluation of a member; its whole result is in the
// database (evaluations.result, the shape of eval --json).
type EvaluationRow struct {
	ID          int64   `json:"id"`
	Kind        string  `json:"kind"` // fast or full
	Seed        int     `json:"seed"`
	State       string  `json:"state"`
	Verdict     string  `json:"verdict,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	ValLoss     float64 `json:"val_loss,omitempty"`
	TrainTimeMs float64 `json:"train_time_ms,omitempty"`
	// Conditions are the machine's state while its timed phase ran.
	Conditions *runs.Conditions `json:"conditions,omitempty"`
	StartedAt  time.Time        `json:"started_at,omitzero"`
	FinishedAt time.Time        `json:"finished_at,omitzero"`
}

// CallRow is a model call.
type CallRow struct {
	ID           int64   `json:"id"`
	Purpose      string  `json:"purpose"`
	Model        string  `json:"model"`
	State        string  `json:"state"`
	FinishReason string  `json:"finish_reason,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	LatencyMs    float64 `json:"latency_ms"`
	Error        string  `json:"error,omitempty"`
	// Request is the request as stored (JSON, redacted); Answer the
	// answer (redacted).
	Request json.RawMessage `json:"request,omitempty"`
	Answer  string          `json:"answer,omitempty"`
}

// Ref is member c in a few fields.
func Ref(c *store.Child) MemberRef {
	return MemberRef{ID: c.ID, Origin: c.Origin, State: c.State, Verdict: c.Verdict, TrainTimeMs: c.TrainTimeMs}
}

// Row is member c as a row; byID names the run's members (for its parent).
func Row(c *store.Child, byID map[int64]*store.Child) MemberRow {
	return MemberRow{Program: Program(c, byID), Slot: c.Slot, Origin: c.Origin, Template: c.Template, Seed: c.Seed,
		State: c.State, Idea: c.Idea, Description: c.Description, Error: c.Error, TimeSummary: c.Summary,
		FastEvaluationID: c.FastEvaluationID, EvaluationID: c.EvaluationID, UpdatedAt: c.UpdatedAt}
}

// EvalRow is evaluation e as a member's evaluation.
func EvalRow(ev *store.Evaluation) EvaluationRow {
	kind := "full"
	if ev.FastOnly {
		kind = "fast"
	}
	return EvaluationRow{ID: ev.ID, Kind: kind, Seed: ev.Seed, State: ev.State, Verdict: ev.Verdict,
		Reason: ev.Reason, ValLoss: ev.ValLoss, TrainTimeMs: ev.TrainTimeMs, Conditions: ev.Conditions, StartedAt: ev.StartedAt, FinishedAt: ev.FinishedAt}
}

// Doc is the story as a member's document.
func (s *MemberStory) Doc() MemberDoc {
	c := s.Child
	out := MemberDoc{Run: s.Run.Name, Fallback: s.Fallback, Lineage: []MemberRef{}, Claims: []report.Claim{},
		Attempts: []AttemptRow{}, Evaluations: []EvaluationRow{}, Calls: []CallRow{}, Member: Row(c, s.Members)}
	for _, m := range s.Lineage {
		out.Lineage = append(out.Lineage, Ref(m))
	}
	if s.Source != nil {
		r := Ref(s.Source)
		out.Source = &r
	}
	for _, cl := range s.Claims {
		out.Claims = append(out.Claims, Claim(cl.Claim))
	}
	for _, a := range s.Attempts {
		out.Attempts = append(out.Attempts, AttemptRow{Attempt: a.Attempt, Kind: a.Kind, LLMCallID: a.LLMCallID, ProgramHash: a.ProgramHash,
			Error: a.Error, FastEvaluationID: a.FastEvaluationID, FastVerdict: a.FastVerdict, FastReason: a.FastReason, CreatedAt: a.CreatedAt})
	}
	for _, ev := range s.Evaluations {
		out.Evaluations = append(out.Evaluations, EvalRow(ev))
	}
	for _, call := range s.Calls {
		cj := CallRow{ID: call.ID, Purpose: call.Purpose, Model: call.Model, State: call.State, FinishReason: call.FinishReason,
			InputTokens: call.InputTokens, OutputTokens: call.OutputTokens, CostUSD: call.CostUSD, LatencyMs: call.LatencyMs,
			Error: call.Error, Answer: call.Answer}
		if json.Valid([]byte(call.Request)) {
			cj.Request = json.RawMessage(call.Request)
		}
		out.Calls = append(out.Calls, cj)
	}
	return out
}
