// Package benchreport turns bench runs into a report: per task x hint
// setting x scaffold x model the FSR over seeds with its interval, the
// acceptable and buggy rates of the searches' nodes and their cost; per
// configuration the mean and the interquartile mean of FSR over tasks;
// written as an HTML page with figures (FSR by hint setting, by scaffold,
// per task), CSV files and JSON. It reads the store only.
package benchreport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bench"
	"github.com/frontier-bench/frontier/internal/store"
)

// Store is what a report reads; store.Store is one.
type Store interface {
	BenchRuns(ctx context.Context) ([]*store.BenchRun, error)
	BenchRun(ctx context.Context, ref string) (*store.BenchRun, error)
	BenchAttempts(ctx context.Context, runID int64) ([]*store.BenchAttempt, error)
}

// Schema is the version of the report's JSON document.
const Schema = "frontier.bench-report/v1"

// Report is everything the page, the CSV files and --json show.
type Report struct {
	Schema    string    `json:"schema"`
	Generated time.Time `json:"generated"`
	Runs      []Run     `json:"runs"`
	// Configs are the configurations (suite, hints, scaffold, model), with
	// their scores over tasks.
	Configs []Config `json:"configs"`
	// Tasks are the per-task rows of every configuration.
	Tasks []TaskRow `json:"tasks"`
	// Main are the paper's main tables (model x hint setting).
	Main []MainTable `json:"main"`
}

// Run is one bench run the report reads.
type Run struct {
	Name       string  `json:"name"`
	Suite      string  `json:"suite"`
	Scaffold   string  `json:"scaffold"`
	Model      string  `json:"model"`
	Hints      string  `json:"hints"`
	State      string  `json:"state"`
	StopReason string  `json:"stop_reason"`
	Nodes      int     `json:"nodes"`
	Mode       string  `json:"mode"`
	Attempts   int     `json:"attempts"`
	Done       int     `json:"done"`
	CostUSD    float64 `json:"cost_usd"`
	ActiveMs   int64   `json:"active_ms"`
}

// Key names a configuration: everything that makes two runs' FSRs
// comparable. Runs that differ in any of it are never pooled: another
// suite version (its files changed), node budget or mode scores another
// thing.
type Key struct {
	Suite string `json:"suite"`
	// SuiteHash is the suite's version (the hash of its files).
	SuiteHash string `json:"suite_hash"`
	// Nodes is each search's node budget.
	Nodes int `json:"nodes"`
	// Mode is how attempts are scored: "tasks" (each task from its start
	// record), "cumulative" (chained), each with " retime K" when the
	// best node was re-timed K times with its start.
	Mode     string `json:"mode"`
	Hints    string `json:"hints"`
	Scaffold string `json:"scaffold"`
	Model    string `json:"model"`
}

func (k Key) String() string {
	return fmt.Sprintf("%s / %s / hints %s / %d nodes / %s", k.Scaffold, k.Model, k.Hints, k.Nodes, k.Mode)
}

// modeOf is a run's scoring mode (see Key.Mode).
func modeOf(c bench.Config) string {
	m := "tasks"
	if c.Cumulative {
		m = "cumulative"
	}
	if c.Retime > 0 {
		m += fmt.Sprintf(" retime %d", c.Retime)
	}
	return m
}

// Rates count a configuration's nodes (proposed programs).
type Rates struct {
	Nodes      int     `json:"nodes"`
	Acceptable float64 `json:"acceptable_rate"`
	Buggy      float64 `json:"buggy_rate"`
}

// TaskRow is a task under one configuration. Every figure of the row is
// taken from the same attempts, those its FSR is the mean of.
type TaskRow struct {
	Key
	Task string `json:"task"`
	// FSR is the mean over seeds, with a bootstrap interval over them.
	FSR   bench.Interval `json:"fsr"`
	Rates Rates          `json:"rates"`
	// BestMs is the best time any of the attempts reached; StartMs and
	// GoalMs the means of the times they were scored with (the same
	// figure for each, unless their sources differ), from TimeSource
	// ("calibrated+published" when they differ).
	BestMs     float64 `json:"best_ms"`
	StartMs    float64 `json:"start_ms"`
	GoalMs     float64 `json:"goal_ms"`
	TimeSource string  `json:"time_source"`
	CostUSD    float64 `json:"cost_usd"`
	Tokens     int64   `json:"tokens"`
}

// MainTable is the paper's main table for one block of configurations
// (a suite version, scaffold, node budget and mode): mean FSR over tasks
// with its interval, per model and hint setting.
type MainTable struct {
	Key   Key       `json:"key"` // Hints and Model empty
	Hints []string  `json:"hints"`
	Rows  []MainRow `json:"rows"`
}

// MainRow is one model's row of a MainTable: a cell per hint setting,
// nil where the model did not run with it.
type MainRow struct {
	Model string            `json:"model"`
	Cells []*bench.Interval `json:"cells"`
}

// Config is one configuration's scores over the tasks it finished.
type Config struct {
	Key
	Tasks    int            `json:"tasks"`
	Attempts int            `json:"attempts"`
	Mean     bench.Interval `json:"mean_fsr"`
	IQM      bench.Interval `json:"iqm_fsr"`
	Rates    Rates          `json:"rates"`
	CostUSD  float64        `json:"cost_usd"`
	Tokens   int64          `json:"tokens"`
	// TimeSources lists where the scores' times came from (calibrated,
	// published), so that a mix is visible.
	TimeSources []string `json:"time_sources"`
}

// Load reads the named bench runs (every run when refs is empty) and
// computes the report. Only finished attempts count.
func Load(ctx context.Context, st Store, refs []string) (*Report, error) {
	var runs []*store.BenchRun
	if len(refs) == 0 {
		all, err := st.BenchRuns(ctx)
		if err != nil {
			return nil, err
		}
		runs = all
	}
	for _, ref := range refs {
		r, err := st.BenchRun(ctx, ref)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	rep := &Report{Schema: Schema, Generated: time.Now().UTC()}
	type group struct {
		key      Key
		outcomes []bench.Outcome
		byTask   map[string][]*store.BenchAttempt
		order    []string
	}
	groups := map[Key]*group{}
	var keys []Key
	for _, r := range runs {
		as, err := st.BenchAttempts(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		cfg, err := bench.ParseConfig(r.Config)
		if err != nil {
			return nil, fmt.Errorf("bench run %s: %w", r.Name, err)
		}
		info := Run{Name: r.Name, Suite: r.Suite, Scaffold: r.Scaffold, Model: r.Model, Hints: r.Hints, State: r.State,
			StopReason: r.StopReason, Attempts: len(as), ActiveMs: r.ActiveMs, Nodes: cfg.Nodes, Mode: modeOf(cfg)}
		k := Key{Suite: r.Suite, SuiteHash: r.SuiteHash, Nodes: cfg.Nodes, Mode: modeOf(cfg), Hints: r.Hints, Scaffold: r.Scaffold, Model: r.Model}
		g := groups[k]
		if g == nil {
			g = &group{key: k, byTask: map[string][]*store.BenchAttempt{}}
			groups[k] = g
			keys = append(keys, k)
		}
		for _, a := range as {
			info.CostUSD += a.CostUSD
			if a.State != store.AttemptDone {
				continue
			}
			info.Done++
			if _, ok := g.byTask[a.Task]; !ok {
				g.order = append(g.order, a.Task)
			}
			g.byTask[a.Task] = append(g.byTask[a.Task], a)
			g.outcomes = append(g.outcomes, bench.Outcome{Task: a.Task, Seed: a.Seed, FSR: a.FSR})
		}
		rep.Runs = append(rep.Runs, info)
	}
	slices.SortStableFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Suite, b.Suite), cmp.Compare(a.SuiteHash, b.SuiteHash), cmp.Compare(a.Scaffold, b.Scaffold),
			cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Model, b.Model), cmp.Compare(hintOrder(a.Hints), hintOrder(b.Hints)))
	})
	for _, k := range keys {
		g := groups[k]
		if len(g.outcomes) == 0 {
			continue
		}
		sc := bench.Score(g.outcomes, 1)
		c := Config{Key: k, Tasks: len(sc.Tasks), Attempts: len(g.outcomes), Mean: sc.Mean, IQM: sc.IQM}
		var all []*store.BenchAttempt
		for _, ts := range sc.Tasks {
			as := g.byTask[ts.Task]
			all = append(all, as...)
			row := TaskRow{Key: k, Task: ts.Task, FSR: ts.FSR, Rates: ratesOf(as)}
			var sources []string
			for _, a := range as {
				row.CostUSD += a.CostUSD
				row.Tokens += a.Tokens
				if row.BestMs == 0 || a.BestMs < row.BestMs {
					row.BestMs = a.BestMs
				}
				row.StartMs += a.StartMs / float64(len(as))
				row.GoalMs += a.GoalMs / float64(len(as))
				if !slices.Contains(sources, a.TimeSource) {
					sources = append(sources, a.TimeSource)
				}
			}
			slices.Sort(sources)
			row.TimeSource = strings.Join(sources, "+")
			rep.Tasks = append(rep.Tasks, row)
			c.CostUSD += row.CostUSD
			c.Tokens += row.Tokens
			for _, src := range sources {
				if !slices.Contains(c.TimeSources, src) {
					c.TimeSources = append(c.TimeSources, src)
				}
			}
		}
		c.Rates = ratesOf(all)
		slices.Sort(c.TimeSources)
		rep.Configs = append(rep.Configs, c)
	}
	rep.Main = mainTables(rep.Configs)
	return rep, nil
}

// mainTables arranges the configurations as the paper's main table: per
// block (suite version, scaffold, node budget, mode), a row per model and
// a column per hint setting, in the paper's order.
func mainTables(configs []Config) []MainTable {
	var out []MainTable
	for _, c := range configs {
		block := c.Key
		block.Hints, block.Model = "", ""
		i := slices.IndexFunc(out, func(m MainTable) bool { return m.Key == block })
		if i < 0 {
			out = append(out, MainTable{Key: block})
			i = len(out) - 1
		}
		m := &out[i]
		if !slices.Contains(m.Hints, c.Hints) {
			m.Hints = append(m.Hints, c.Hints)
		}
		if !slices.ContainsFunc(m.Rows, func(r MainRow) bool { return r.Model == c.Model }) {
			m.Rows = append(m.Rows, MainRow{Model: c.Model})
		}
	}
	for i := range out {
		m := &out[i]
		slices.SortStableFunc(m.Hints, func(a, b string) int { return cmp.Compare(hintOrder(a), hintOrder(b)) })
		for j := range m.Rows {
			r := &m.Rows[j]
			r.Cells = make([]*bench.Interval, len(m.Hints))
			for _, c := range configs {
				block := c.Key
				block.Hints, block.Model = "", ""
				if block == m.Key && c.Model == r.Model {
					iv := c.Mean
					r.Cells[slices.Index(m.Hints, c.Hints)] = &iv
				}
			}
		}
	}
	return out
}

func ratesOf(as []*store.BenchAttempt) Rates {
	var r Rates
	var acc, bug int
	for _, a := range as {
		r.Nodes += a.Nodes
		acc += a.Acceptable
		bug += a.Buggy
	}
	if r.Nodes > 0 {
		r.Acceptable, r.Buggy = float64(acc)/float64(r.Nodes), float64(bug)/float64(r.Nodes)
	}
	return r
}

// hintOrder sorts hint settings as the paper does.
func hintOrder(h string) int {
	if i := slices.Index(bench.Settings, h); i >= 0 {
		return i
	}
	return len(bench.Settings)
}
