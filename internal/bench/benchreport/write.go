package benchreport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/runview"
)

// Files a report writes into its folder.
const (
	IndexFile   = "index.html"
	TasksFile   = "tasks.csv"
	ConfigsFile = "configs.csv"
	JSONFile    = "report.json"
)

// Write writes the report into dir (created when missing) and returns the
// path of its page.
func Write(dir string, r *runview.BenchReport) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write the bench report: %w", err)
	}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, view(r)); err != nil {
		return "", fmt.Errorf("render the bench report: %w", err)
	}
	var tasks, configs, doc bytes.Buffer
	if err := WriteTasksCSV(&tasks, r); err != nil {
		return "", err
	}
	if err := WriteConfigsCSV(&configs, r); err != nil {
		return "", err
	}
	if err := WriteJSON(&doc, r); err != nil {
		return "", err
	}
	for name, b := range map[string][]byte{IndexFile: page.Bytes(), TasksFile: tasks.Bytes(), ConfigsFile: configs.Bytes(), JSONFile: doc.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("write the bench report: %w", err)
		}
	}
	return filepath.Join(dir, IndexFile), nil
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *runview.BenchReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func f3(v float64) string  { return strconv.FormatFloat(v, 'f', 4, 64) }
func f0(v float64) string  { return strconv.FormatFloat(v, 'f', 0, 64) }
func usd(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// WriteTasksCSV writes one row per task and configuration.
func WriteTasksCSV(w io.Writer, r *runview.BenchReport) error {
	c := csv.NewWriter(w)
	c.Write([]string{"suite", "suite_hash", "node_budget", "mode", "task", "hints", "scaffold", "model", "seeds", "fsr_mean", "fsr_lo", "fsr_hi", "nodes",
		"acceptable_rate", "buggy_rate", "best_ms", "start_ms", "goal_ms", "time_source", "cost_usd", "tokens"})
	for _, t := range r.Tasks {
		c.Write([]string{t.Suite, t.SuiteHash, strconv.Itoa(t.BenchKey.Nodes), t.Mode, t.Task, t.Hints, t.Scaffold, t.Model, strconv.Itoa(t.FSR.N), f3(t.FSR.Value), f3(t.FSR.Lo),
			f3(t.FSR.Hi), strconv.Itoa(t.Rates.Nodes), f3(t.Rates.Acceptable), f3(t.Rates.Buggy), f0(t.BestMs), f0(t.StartMs),
			f0(t.GoalMs), t.TimeSource, usd(t.CostUSD), strconv.FormatInt(t.Tokens, 10)})
	}
	c.Flush()
	return c.Error()
}

// WriteConfigsCSV writes one row per configuration.
func WriteConfigsCSV(w io.Writer, r *runview.BenchReport) error {
	c := csv.NewWriter(w)
	c.Write([]string{"suite", "suite_hash", "node_budget", "mode", "hints", "scaffold", "model", "tasks", "attempts", "mean_fsr", "mean_lo", "mean_hi", "iqm_fsr",
		"iqm_lo", "iqm_hi", "nodes", "acceptable_rate", "buggy_rate", "cost_usd", "tokens", "time_sources"})
	for _, x := range r.Configs {
		c.Write([]string{x.Suite, x.SuiteHash, strconv.Itoa(x.BenchKey.Nodes), x.Mode, x.Hints, x.Scaffold, x.Model, strconv.Itoa(x.Tasks), strconv.Itoa(x.Attempts), f3(x.Mean.Value),
			f3(x.Mean.Lo), f3(x.Mean.Hi), f3(x.IQM.Value), f3(x.IQM.Lo), f3(x.IQM.Hi), strconv.Itoa(x.Rates.Nodes),
			f3(x.Rates.Acceptable), f3(x.Rates.Buggy), usd(x.CostUSD), strconv.FormatInt(x.Tokens, 10), strings.Join(x.TimeSources, "+")})
	}
	c.Flush()
	return c.Error()
}

type pageView struct {
	*runview.BenchReport
	Figures []figureView
}

type figureView struct {
	Title string
	SVG   template.HTML
}

func view(r *runview.BenchReport) pageView {
	v := pageView{BenchReport: r}
	for _, f := range Figures(r) {
		// The SVG is built from escaped text (figures.go).
		v.Figures = append(v.Figures, figureView{Title: f.Title, SVG: template.HTML(f.SVG)})
	}
	return v
}

var funcs = template.FuncMap{
	"f3":  f3,
	"pct": func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" },
	"usd": func(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) },
	"secs": func(ms float64) string {
		return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
	},
	"dur":  func(ms int64) string { return (time.Duration(ms) * time.Millisecond).Round(time.Second).String() },
	"join": strings.Join,
	// suite names a suite with its version (the start of its hash).
	"suite": func(k runview.BenchKey) string {
		if k.SuiteHash == "" {
			return k.Suite
		}
		return k.Suite + "@" + k.SuiteHash[:min(8, len(k.SuiteHash))]
	},
}

var pageTemplate = template.Must(template.New("page").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>frontier bench report</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 70em; color: #222 }
table { border-collapse: collapse; margin: 1em 0 }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right }
th:first-child, td:first-child, td.l { text-align: left }
figure { display: inline-block; margin: 1em 2em 1em 0 }
.note { color: #555; font-size: 90% }
</style></head><body>
<h1>frontier bench report</h1>
<p class="note">Generated {{.Generated.Format "2006-01-02 15:04 UTC"}}. FSR is the fraction of the speedup from record i to
record i+1 that a search recovered, with the start program among its candidates (so FSR &ge; 0); per task the
mean over seeds, per configuration the mean and the interquartile mean over tasks. Intervals are 95% percentile
bootstrap intervals (over seeds per task, over tasks per configuration). Times are <em>calibrated</em> (re-timed on this
machine) or <em>published</em> (measured elsewhere): compare scores only within one kind. A search's best
time is a single timing of its fastest acceptable program (one run each, as in the published benchmark), while
the records' times are means of repeated runs: an FSR from one seed carries that run's noise.</p>

<h2>Configurations</h2>
<p class="note">A configuration is a suite version, a node budget, a mode (tasks scored from their start records, or a
cumulative chain; re-timed best nodes or single timings), a scaffold, a model and a hint setting. Runs that differ in any
of them are never pooled.</p>
<table><tr><th>suite</th><th>node budget</th><th>mode</th><th>scaffold</th><th>model</th><th>hints</th><th>tasks</th><th>attempts</th><th>mean FSR [95%]</th>
<th>IQM FSR [95%]</th><th>nodes</th><th>acceptable</th><th>buggy</th><th>cost</th><th>times</th></tr>
{{range .Configs}}<tr><td>{{suite .BenchKey}}</td><td>{{.BenchKey.Nodes}}</td><td class="l">{{.Mode}}</td><td class="l">{{.Scaffold}}</td><td class="l">{{.Model}}</td><td>{{.Hints}}</td><td>{{.Tasks}}</td>
<td>{{.Attempts}}</td><td>{{f3 .Mean.Value}} [{{f3 .Mean.Lo}}, {{f3 .Mean.Hi}}]</td><td>{{f3 .IQM.Value}} [{{f3 .IQM.Lo}}, {{f3 .IQM.Hi}}]</td>
<td>{{.Rates.Nodes}}</td><td>{{pct .Rates.Acceptable}}</td><td>{{pct .Rates.Buggy}}</td><td>{{usd .CostUSD}}</td><td>{{join .TimeSources "+"}}</td></tr>
{{else}}<tr><td colspan="15">No finished attempt yet.</td></tr>{{end}}</table>

{{range .Main}}<h3>Mean FSR by model and hint setting: {{suite .Key}}, {{.Key.Scaffold}}, {{.Key.Nodes}} nodes, {{.Key.Mode}}</h3>
<table><tr><th>model</th>{{range .Hints}}<th>hints {{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="l">{{.Model}}</td>{{range .Cells}}<td>{{if .}}{{f3 .Value}} [{{f3 .Lo}}, {{f3 .Hi}}] (n={{.N}}){{else}}-{{end}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .Main}}<p class="note">The paper's main table: the mean over tasks of the per-task FSR, with its 95% bootstrap interval over
tasks and the number of tasks (n), per model and hint setting, one table per suite version, scaffold, node budget and mode.</p>{{end}}

{{range .Figures}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>
{{end}}

<h2>Tasks</h2>
<table><tr><th>task</th><th>suite</th><th>node budget</th><th>mode</th><th>scaffold</th><th>model</th><th>hints</th><th>seeds</th><th>FSR [95%]</th><th>best</th><th>start</th><th>goal</th>
<th>times</th><th>nodes</th><th>acceptable</th><th>buggy</th><th>cost</th></tr>
{{range .Tasks}}<tr><td>{{.Task}}</td><td>{{suite .BenchKey}}</td><td>{{.BenchKey.Nodes}}</td><td class="l">{{.Mode}}</td><td class="l">{{.Scaffold}}</td><td class="l">{{.Model}}</td><td>{{.Hints}}</td><td>{{.FSR.N}}</td>
<td>{{f3 .FSR.Value}} [{{f3 .FSR.Lo}}, {{f3 .FSR.Hi}}]</td><td>{{secs .BestMs}}</td><td>{{secs .StartMs}}</td><td>{{secs .GoalMs}}</td>
<td>{{.TimeSource}}</td><td>{{.Rates.Nodes}}</td><td>{{pct .Rates.Acceptable}}</td><td>{{pct .Rates.Buggy}}</td><td>{{usd .CostUSD}}</td></tr>
{{end}}</table>

<h2>Runs</h2>
<table><tr><th>run</th><th>suite</th><th>node budget</th><th>mode</th><th>scaffold</th><th>model</th><th>hints</th><th>state</th><th>attempts done</th><th>active</th><th>cost</th></tr>
{{range .Runs}}<tr><td>{{.Name}}</td><td class="l">{{.Suite}}</td><td>{{.Nodes}}</td><td class="l">{{.Mode}}</td><td class="l">{{.Scaffold}}</td><td class="l">{{.Model}}</td><td>{{.Hints}}</td>
<td class="l">{{.State}}{{if .StopReason}} ({{.StopReason}}){{end}}</td><td>{{.Done}} / {{.Attempts}}</td><td>{{dur .ActiveMs}}</td><td>{{usd .CostUSD}}</td></tr>
{{end}}</table>
<p class="note">Data: {{"tasks.csv"}}, {{"configs.csv"}}, {{"report.json"}} beside this page.</p>
</body></html>
`))
