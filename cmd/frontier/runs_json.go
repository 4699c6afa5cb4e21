package main

import (
	"encoding/json"
	"math"
	"time"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/report/fromstore"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// The JSON of the commands that read a search (runs, runs show, runs
// child, runs diff, runs best) and of those that end one (evolve, demo).
// The words are internal/runs' (states, verdicts, origins, stages, claim
// states), times are in milliseconds, a speedup is the fraction of the
// baseline's time saved (runs.Speedup), and programs and claims have the
// report's shapes (docs/report.md). docs/cli.md documents every shape.

// runJSON is a run: a row of runs --json, and the head of runs show --json.
type runJSON struct {
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
	Record     *recordJSON    `json:"record,omitempty"`
	Candidate  *candidateJSON `json:"candidate,omitempty"`
	CostUSD    float64        `json:"cost_usd"`
	Tokens     int64          `json:"tokens"`
	Sessions   int            `json:"sessions"`
	ActiveMs   int64          `json:"active_ms"`
	StartedAt  time.Time      `json:"started_at"`
	UpdatedAt  time.Time      `json:"updated_at,omitzero"`
	FinishedAt time.Time      `json:"finished_at,omitzero"`
}

// recordJSON is a run's record (docs/evolve.md, "The record rule"): the
// program of the confirmed claim with the shortest mean time, else the
// reference.
type recordJSON struct {
	ID        int64 `json:"id"`
	Reference bool  `json:"reference,omitempty"`
	// TrainTimeMs is its best time estimate, over N timings (1, or the
	// runs of a series).
	TrainTimeMs float64 `json:"train_time_ms"`
	N           int     `json:"n"`
	// Speedup is over the reference; left out for the reference itself.
	Speedup  *float64 `json:"speedup,omitempty"`
	Evidence string   `json:"evidence"`
	ClaimID  int64    `json:"claim_id,omitempty"`
}

// candidateJSON is a run's candidate record: an acceptable child that
// measured faster than the record once, whose claim was not refuted.
type candidateJSON struct {
	ID int64 `json:"id"`
	// TrainTimeMs is its single timing; Speedup is over the record.
	TrainTimeMs float64  `json:"train_time_ms"`
	Speedup     *float64 `json:"speedup,omitempty"`
	// ClaimState is where its newest claim stands (runs.ClaimState), or
	// "unclaimed".
	ClaimState  string `json:"claim_state"`
	ClaimReason string `json:"claim_reason,omitempty"`
}

// runsListJSON is runs --json.
type runsListJSON struct {
	Runs []runJSON `json:"runs"`
}

// finite is x, or nil when it is not a number encoding/json can write
// (a speedup without a time).
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// orEmpty is m, or an empty map for nil: JSON's {} rather than null.
func orEmpty[K comparable](m map[K]int) map[K]int {
	if m == nil {
		return map[K]int{}
	}
	return m
}

// stale says whether a running run has not been written to for two
// minutes: the session that ran it may have been killed.
func stale(r *store.Run) bool {
	return r.State == store.RunRunning && !r.UpdatedAt.IsZero() && time.Since(r.UpdatedAt) > 2*time.Minute
}

func runOf(s *evolve.RunSummary) runJSON {
	r := s.Run
	return runJSON{ID: r.ID, Name: r.Name, Track: r.Track, TrackDir: r.TrackDir, TrackHash: r.TrackHash, TargetValLoss: r.TargetValLoss,
		LossFloor: r.LossFloor, Objective: s.Config.Objective, Seed: r.Seed, State: r.State, Stale: stale(r), StopReason: r.StopReason,
		StopDetail: r.StopDetail, Iterations: r.Iterations, Children: len(s.Children), Acceptable: s.Settled.Classes[runs.ClassAcceptable],
		Record: recordOf(s), Candidate: candidateOf(s), CostUSD: s.USD, Tokens: s.Tokens, Sessions: r.Sessions, ActiveMs: r.ActiveMs,
		StartedAt: r.StartedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt}
}

func recordOf(s *evolve.RunSummary) *recordJSON {
	if s.Record == nil {
		return nil
	}
	rec := &recordJSON{ID: s.Record.ID, TrainTimeMs: s.RecordMs, N: max(s.RecordN, 1),
		Reference: s.RecordClaim == nil, Evidence: "the reference: no claim to beat it was confirmed"}
	if c := s.RecordClaim; c != nil {
		rec.Evidence, rec.ClaimID = c.Evidence(), c.ID
		if s.Reference != nil {
			rec.Speedup = finite(runs.Speedup(s.Reference.TrainTimeMs, s.RecordMs))
		}
	}
	return rec
}

func candidateOf(s *evolve.RunSummary) *candidateJSON {
	c := candidate(s)
	if c == nil {
		return nil
	}
	return &candidateJSON{ID: c.ChildID, TrainTimeMs: s.Candidate.TrainTimeMs, Speedup: finite(runs.Speedup(s.RecordMs, s.Candidate.TrainTimeMs)),
		ClaimState: string(c.State), ClaimReason: c.Reason}
}

// runShowJSON is runs show --json: the run, its settings, its record and
// claims, its verdicts, its best programs, islands, models, stages and
// spend.
type runShowJSON struct {
	Run runJSON `json:"run"`
	// Config is the search's resolved configuration, as frontier.yaml's
	// evolve: section names it.
	Config evolve.Config    `json:"config"`
	Models []store.RunModel `json:"models"`
	// Resumed counts the sessions after the first; MetaPromptFrom is the
	// first iteration that meta-prompted, -1 when none did.
	Resumed        int          `json:"resumed"`
	MetaPromptFrom int          `json:"meta_prompt_from"`
	FastChecks     int          `json:"fast_checks"`
	Evaluations    int          `json:"evaluations"`
	Migrations     int          `json:"migrations"`
	Archive        []int64      `json:"archive"`
	Verdicts       verdictsJSON `json:"verdicts"`
	// Best are the best programs by the objective (the first eight), the
	// record and the candidate; their times are single timings.
	Best     []report.Program `json:"best"`
	Claims   []report.Claim   `json:"claims"`
	Islands  []islandJSON     `json:"islands"`
	PerModel []groupJSON      `json:"per_model"`
	PerStage []groupJSON      `json:"per_stage"`
	Spend    spendJSON        `json:"spend"`
}

// verdictsJSON counts the settled children by class and by verdict.
type verdictsJSON struct {
	Classes  map[runs.Class]int   `json:"classes"`
	Verdicts map[runs.Verdict]int `json:"verdicts"`
	// Pending are children still queued or in flight; EndedOnDuplicate
	// those that ended on a program the run knew after one of their own
	// failed (counted by that failure).
	Pending          int `json:"pending"`
	EndedOnDuplicate int `json:"ended_on_duplicate"`
}

type islandJSON struct {
	Island      int             `json:"island"`
	Iterations  int             `json:"iterations"`
	Members     int             `json:"members"`
	Originals   int             `json:"originals"`
	Copies      int             `json:"copies"`
	MigrantsIn  int             `json:"migrants_in"`
	MigrantsOut int             `json:"migrants_out"`
	Best        *report.Program `json:"best,omitempty"`
}

// groupJSON is the outcome of the children of one model or stage.
type groupJSON struct {
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

type spendJSON struct {
	CostUSD   float64       `json:"cost_usd"`
	Tokens    int64         `json:"tokens"`
	Calls     int           `json:"calls"`
	LostCalls int           `json:"lost_calls"`
	Purposes  []purposeJSON `json:"purposes"`
}

type purposeJSON struct {
	Purpose      string  `json:"purpose"`
	Calls        int     `json:"calls"`
	Failed       int     `json:"failed"`
	Lost         int     `json:"lost"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func runShowOf(s *evolve.RunSummary) runShowJSON {
	byID := map[int64]*store.Child{}
	for _, c := range s.Members {
		byID[c.ID] = c
	}
	models, _ := s.Run.ModelList()
	out := runShowJSON{Run: runOf(s), Config: s.Config, Models: models, Resumed: s.Resumed, MetaPromptFrom: s.MetaStart,
		FastChecks: s.FastChecks, Evaluations: s.Evaluations, Migrations: s.Migrations, Archive: s.Archive,
		Verdicts: verdictsJSON{Classes: orEmpty(s.Settled.Classes), Verdicts: orEmpty(s.Settled.Verdicts), Pending: len(s.Children) - s.Settled.Members,
			EndedOnDuplicate: s.EndedOnDuplicate},
		Best: []report.Program{}, Claims: []report.Claim{}, Islands: []islandJSON{},
		Spend: spendJSON{CostUSD: s.USD, Tokens: s.Tokens, Calls: s.Calls, LostCalls: s.LostCalls, Purposes: []purposeJSON{}}}
	if out.Models == nil {
		out.Models = []store.RunModel{}
	}
	if out.Archive == nil {
		out.Archive = []int64{}
	}
	for _, c := range bestRows(s) {
		out.Best = append(out.Best, fromstore.Program(c, byID))
	}
	for _, c := range s.Claims {
		out.Claims = append(out.Claims, fromstore.Claim(c.Claim))
	}
	for _, is := range s.Islands {
		i := islandJSON{Island: is.Island, Iterations: is.Iterations, Members: is.Members, Originals: is.Originals, Copies: is.Copies,
			MigrantsIn: is.MigrantsIn, MigrantsOut: is.MigrantsOut}
		if is.Best != nil {
			p := fromstore.Program(is.Best, byID)
			i.Best = &p
		}
		out.Islands = append(out.Islands, i)
	}
	out.PerModel, out.PerStage = groupsOf(s.PerModel), groupsOf(s.PerStage)
	for _, p := range s.Purposes {
		out.Spend.Purposes = append(out.Spend.Purposes, purposeJSON{Purpose: p.Purpose, Calls: p.Calls, Failed: p.Failed, Lost: p.Lost,
			InputTokens: p.InputTokens, OutputTokens: p.OutputTokens, CostUSD: p.CostUSD})
	}
	return out
}

func groupsOf(gs []evolve.GroupStats) []groupJSON {
	out := []groupJSON{}
	for _, m := range gs {
		g := groupJSON{Name: m.Name, Children: m.Members, Judged: m.Judged(), Ran: m.Ran(), Classes: orEmpty(m.Classes), Verdicts: orEmpty(m.Verdicts),
			AcceptableRate: m.AcceptableRate(), Improved: m.Improved, Fixed: m.Fixed, FastestID: m.Fastest.ID,
			InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CostUSD: m.CostUSD}
		if m.Fastest.ID != 0 {
			g.FastestMs = m.Fastest.TrainTimeMs
		}
		out = append(out, g)
	}
	return out
}

// bestRows are the programs runs show lists as the best: the first eight
// by the objective, then the record and the candidate when they are not
// among them.
func bestRows(s *evolve.RunSummary) []*store.Child {
	rows := s.Top
	if len(rows) > 8 {
		rows = rows[:8]
	}
	rows = append([]*store.Child(nil), rows...)
	for _, x := range []*store.Child{s.Record, s.Candidate} {
		if x != nil && !containsChild(rows, x.ID) {
			rows = append(rows, x)
		}
	}
	return rows
}

// childShowJSON is runs child --json: a member's story. Prompts and
// answers are in full, as stored (redacted).
type childShowJSON struct {
	Run         string           `json:"run"`
	Member      memberJSON       `json:"member"`
	Lineage     []memberRefJSON  `json:"lineage"`
	Source      *memberRefJSON   `json:"source,omitempty"`
	Fallback    string           `json:"fallback,omitempty"`
	Claims      []report.Claim   `json:"claims"`
	Attempts    []attemptJSON    `json:"attempts"`
	Evaluations []evaluationJSON `json:"evaluations"`
	Calls       []callJSON       `json:"calls"`
}

// memberJSON is a member of a run: the report's row and what else the run
// holds about it.
type memberJSON struct {
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
}

// memberRefJSON names a member with its outcome in a few fields.
type memberRefJSON struct {
	ID          int64        `json:"id"`
	Origin      runs.Origin  `json:"origin"`
	State       runs.State   `json:"state"`
	Verdict     runs.Verdict `json:"verdict,omitempty"`
	TrainTimeMs float64      `json:"train_time_ms,omitempty"`
}

type attemptJSON struct {
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

// evaluationJSON is an evaluation of a member; its whole result is in
// the database (evaluations.result, the shape of eval --json).
type evaluationJSON struct {
	ID          int64   `json:"id"`
	Kind        string  `json:"kind"` // fast or full
	Seed        int     `json:"seed"`
	State       string  `json:"state"`
	Verdict     string  `json:"verdict,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	ValLoss     float64 `json:"val_loss,omitempty"`
	TrainTimeMs float64 `json:"train_time_ms,omitempty"`
	// Conditions are the machine's state while its timed phase ran.
	Conditions *store.Conditions `json:"conditions,omitempty"`
	StartedAt  time.Time         `json:"started_at,omitzero"`
	FinishedAt time.Time         `json:"finished_at,omitzero"`
}

type callJSON struct {
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

func memberRefOf(c *store.Child) memberRefJSON {
	return memberRefJSON{ID: c.ID, Origin: c.Origin, State: c.State, Verdict: c.Verdict, TrainTimeMs: c.TrainTimeMs}
}

func childShowOf(run *store.Run, s *evolve.ChildStory, byID map[int64]*store.Child) childShowJSON {
	c := s.Child
	out := childShowJSON{Run: run.Name, Fallback: s.Fallback, Lineage: []memberRefJSON{}, Claims: []report.Claim{},
		Attempts: []attemptJSON{}, Evaluations: []evaluationJSON{}, Calls: []callJSON{},
		Member: memberJSON{Program: fromstore.Program(c, byID), Slot: c.Slot, Origin: c.Origin, Template: c.Template, Seed: c.Seed,
			State: c.State, Idea: c.Idea, Description: c.Description, Error: c.Error, TimeSummary: c.Summary,
			FastEvaluationID: c.FastEvaluationID, EvaluationID: c.EvaluationID}}
	for _, m := range s.Lineage {
		out.Lineage = append(out.Lineage, memberRefOf(m))
	}
	if s.Source != nil {
		r := memberRefOf(s.Source)
		out.Source = &r
	}
	for _, cl := range s.Claims {
		out.Claims = append(out.Claims, fromstore.Claim(cl.Claim))
	}
	for _, a := range s.Attempts {
		out.Attempts = append(out.Attempts, attemptJSON{Attempt: a.Attempt, Kind: a.Kind, LLMCallID: a.LLMCallID, ProgramHash: a.ProgramHash,
			Error: a.Error, FastEvaluationID: a.FastEvaluationID, FastVerdict: a.FastVerdict, FastReason: a.FastReason, CreatedAt: a.CreatedAt})
	}
	for _, ev := range s.Evaluations {
		kind := "full"
		if ev.FastOnly {
			kind = "fast"
		}
		out.Evaluations = append(out.Evaluations, evaluationJSON{ID: ev.ID, Kind: kind, Seed: ev.Seed, State: ev.State, Verdict: ev.Verdict,
			Reason: ev.Reason, ValLoss: ev.ValLoss, TrainTimeMs: ev.TrainTimeMs, Conditions: ev.Conditions, StartedAt: ev.StartedAt, FinishedAt: ev.FinishedAt})
	}
	for _, call := range s.Calls {
		cj := callJSON{ID: call.ID, Purpose: call.Purpose, Model: call.Model, State: call.State, FinishReason: call.FinishReason,
			InputTokens: call.InputTokens, OutputTokens: call.OutputTokens, CostUSD: call.CostUSD, LatencyMs: call.LatencyMs,
			Error: call.Error, Answer: call.Answer}
		if json.Valid([]byte(call.Request)) {
			cj.Request = json.RawMessage(call.Request)
		}
		out.Calls = append(out.Calls, cj)
	}
	return out
}

// runsDiffJSON is runs diff --json: a member's program against the
// reference and against its parent.
type runsDiffJSON struct {
	Run     string         `json:"run"`
	Member  report.Program `json:"member"`
	Against []diffJSON     `json:"against"`
}

type diffJSON struct {
	// Label is "reference" or "parent".
	Label   string         `json:"label"`
	Member  report.Program `json:"member"`
	Added   int            `json:"added"`
	Removed int            `json:"removed"`
	// Diff is the unified diff, empty when the programs are the same.
	Diff string `json:"diff"`
}

// runsBestJSON is runs best --json: the program written, and why it is
// the one.
type runsBestJSON struct {
	Run    string         `json:"run"`
	Member report.Program `json:"member"`
	// Kind is "record" (a confirmed claim's program), "reference" (no
	// claim was confirmed), "fastest" (--fastest: a single timing) or
	// "best" (nothing is acceptable: the best by the run's objective).
	Kind     string `json:"kind"`
	Evidence string `json:"evidence"`
	// Output is the file written (-o); without one, Source is the program.
	Output string `json:"output,omitempty"`
	Source string `json:"source,omitempty"`
}
