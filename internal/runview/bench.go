package runview

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/store"
)

// BenchReader is what the bench runs' scores read; store.Store is one.
type BenchReader interface {
	BenchRuns(ctx context.Context) ([]*store.BenchRun, error)
	BenchRun(ctx context.Context, ref string) (*store.BenchRun, error)
	BenchAttempts(ctx context.Context, runID int64) ([]*store.BenchAttempt, error)
}

// BenchSchema is the version of the report's JSON document.
const BenchSchema = "frontier.bench-report/v1"

// BenchReport is everything the page, the CSV files and --json show.
type BenchReport struct {
	Schema    string        `json:"schema"`
	Generated time.Time     `json:"generated"`
	Runs      []BenchRunRow `json:"runs"`
	// Configs are the configurations (suite, hints, scaffold, model), with
	// their scores over tasks.
	Configs []BenchConfig `json:"configs"`
	// Tasks are the per-task rows of every configuration.
	Tasks []BenchTask `json:"tasks"`
	// Main are the paper's main tables (model x hint setting).
	Main []BenchTable `json:"main"`
}

// BenchRunRow is one bench run the report reads.
type BenchRunRow struct {
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

// BenchKey names a configuration: everything that makes two runs' FSRs
// comparable. Runs that differ in any of it are never pooled: another
// suite version (its files changed), node budget or mode scores another
// thing.
type BenchKey struct {
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

func (k BenchKey) String() string {
	return fmt.Sprintf("%s / %s / hints %s / %d nodes / %s", k.Scaffold, k.Model, k.Hints, k.Nodes, k.Mode)
}

// modeOf is a run's scoring mode (see BenchKey.Mode).
func modeOf(c benchSettings) string {
	m := "tasks"
	if c.Cumulative {
		m = "cumulative"
	}
	if c.Retime > 0 {
		m += fmt.Sprintf(" retime %d", c.Retime)
	}
	return m
}

// benchSettings are what the scores read of a bench run's recorded
// settings (bench.Config).
type benchSettings struct {
	Nodes      int  `json:"nodes"`
	Cumulative bool `json:"cumulative"`
	Retime     int  `json:"retime"`
}

func benchSettingsOf(r *store.BenchRun) (benchSettings, error) {
	var c benchSettings
	if err := json.Unmarshal(r.Config, &c); err != nil {
		return c, fmt.Errorf("bench run %s: its recorded settings are unreadable: %w", r.Name, err)
	}
	return c, nil
}

// BenchRates count a configuration's nodes (proposed programs).
type BenchRates struct {
	Nodes      int     `json:"nodes"`
	Acceptable float64 `json:"acceptable_rate"`
	Buggy      float64 `json:"buggy_rate"`
}

// BenchTask is a task under one configuration. Every figure of the row is
// taken from the same attempts, those its FSR is the mean of.
type BenchTask struct {
	BenchKey
	Task string `json:"task"`
	// FSR is the mean over seeds, with a bootstrap interval over them.
	FSR   fsr.Interval `json:"fsr"`
	Rates BenchRates   `json:"rates"`
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

// BenchTable is the paper's main table for one block of configurations
// (a suite version, scaffold, node budget and mode): mean FSR over tasks
// with its interval, per model and hint setting.
type BenchTable struct {
	Key   BenchKey        `json:"key"` // Hints and Model empty
	Hints []string        `json:"hints"`
	Rows  []BenchTableRow `json:"rows"`
}

// BenchTableRow is one model's row of a BenchTable: a cell per hint setting,
// nil where the model did not run with it.
type BenchTableRow struct {
	Model string          `json:"model"`
	Cells []*fsr.Interval `json:"cells"`
}

// BenchConfig is one configuration's scores over the tasks it finished.
type BenchConfig struct {
	BenchKey
	Tasks    int          `json:"tasks"`
	Attempts int          `json:"attempts"`
	Mean     fsr.Interval `json:"mean_fsr"`
	IQM      fsr.Interval `json:"iqm_fsr"`
	Rates    BenchRates   `json:"rates"`
	CostUSD  float64      `json:"cost_usd"`
	Tokens   int64        `json:"tokens"`
	// TimeSources lists where the scores' times came from (calibrated,
	// published), so that a mix is visible.
	TimeSources []string `json:"time_sources"`
}

// LoadBench reads the named bench runs (every run when refs is empty) and
// computes the report. Only finished attempts count.
func LoadBench(ctx context.Context, st BenchReader, refs []string) (*BenchReport, error) {
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
	rep := &BenchReport{Schema: BenchSchema, Generated: time.Now().UTC()}
	type group struct {
		key      BenchKey
		outcomes []fsr.Outcome
		byTask   map[string][]*store.BenchAttempt
		order    []string
	}
	groups := map[BenchKey]*group{}
	var keys []BenchKey
	for _, r := range runs {
		as, err := st.BenchAttempts(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		cfg, err := benchSettingsOf(r)
		if err != nil {
			return nil, err
		}
		info := BenchRunRow{Name: r.Name, Suite: r.Suite, Scaffold: r.Scaffold, Model: r.Model, Hints: r.Hints, State: r.State,
			StopReason: r.StopReason, Attempts: len(as), ActiveMs: r.ActiveMs, Nodes: cfg.Nodes, Mode: modeOf(cfg)}
		k := BenchKey{Suite: r.Suite, SuiteHash: r.SuiteHash, Nodes: cfg.Nodes, Mode: modeOf(cfg), Hints: r.Hints, Scaffold: r.Scaffold, Model: r.Model}
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
			g.outcomes = append(g.outcomes, fsr.Outcome{Task: a.Task, Seed: a.Seed, FSR: a.FSR})
		}
		rep.Runs = append(rep.Runs, info)
	}
	slices.SortStableFunc(keys, func(a, b BenchKey) int {
		return cmp.Or(cmp.Compare(a.Suite, b.Suite), cmp.Compare(a.SuiteHash, b.SuiteHash), cmp.Compare(a.Scaffold, b.Scaffold),
			cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Model, b.Model), cmp.Compare(hintOrder(a.Hints), hintOrder(b.Hints)))
	})
	for _, k := range keys {
		g := groups[k]
		if len(g.outcomes) == 0 {
			continue
		}
		sc := fsr.Summarize(g.outcomes, 1)
		c := BenchConfig{BenchKey: k, Tasks: len(sc.Tasks), Attempts: len(g.outcomes), Mean: sc.Mean, IQM: sc.IQM}
		var all []*store.BenchAttempt
		for _, ts := range sc.Tasks {
			as := g.byTask[ts.Task]
			all = append(all, as...)
			row := BenchTask{BenchKey: k, Task: ts.Task, FSR: ts.FSR, Rates: ratesOf(as)}
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
func mainTables(configs []BenchConfig) []BenchTable {
	var out []BenchTable
	for _, c := range configs {
		block := c.BenchKey
		block.Hints, block.Model = "", ""
		i := slices.IndexFunc(out, func(m BenchTable) bool { return m.Key == block })
		if i < 0 {
			out = append(out, BenchTable{Key: block})
			i = len(out) - 1
		}
		m := &out[i]
		if !slices.Contains(m.Hints, c.Hints) {
			m.Hints = append(m.Hints, c.Hints)
		}
		if !slices.ContainsFunc(m.Rows, func(r BenchTableRow) bool { return r.Model == c.Model }) {
			m.Rows = append(m.Rows, BenchTableRow{Model: c.Model})
		}
	}
	for i := range out {
		m := &out[i]
		slices.SortStableFunc(m.Hints, func(a, b string) int { return cmp.Compare(hintOrder(a), hintOrder(b)) })
		for j := range m.Rows {
			r := &m.Rows[j]
			r.Cells = make([]*fsr.Interval, len(m.Hints))
			for _, c := range configs {
				block := c.BenchKey
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

func ratesOf(as []*store.BenchAttempt) BenchRates {
	var r BenchRates
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
	if i := slices.Index(fsr.HintSettings, h); i >= 0 {
		return i
	}
	return len(fsr.HintSettings)
}
