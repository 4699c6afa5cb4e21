package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runs"
)

//go:embed report.tmpl
var pageTemplate string

// tmpl is parsed once per Write; it is cheap and keeps the package free of
// package-level state.
func parseTemplate() (*template.Template, error) {
	return template.New("report").Parse(pageTemplate)
}

// page is what the template renders. Every string in it is plain text;
// html/template escapes it.
type page struct {
	Title     string
	Subtitle  string
	Headline  string
	Alerts    []string
	Run       []kv
	Summary   []kv
	Top       table
	Figures   map[string]*figure
	Models    table
	Stages    table
	Phases    table
	Records   table
	Claims    table
	Iters     table
	Programs  table
	Best      *bestView
	Generated string
}

type kv struct{ K, V string }

// table is a rendered table: cells carry their text and a CSS class.
type table struct {
	Head  []string
	Rows  [][]cell
	Note  string // shown instead of the table when it has no rows
	Foot  string // a note under the table
	Class string
}

type cell struct {
	Text  string
	Class string // "num", "good", "bad", "dim", ...
	Title string // hover text: the full value when Text is clipped
}

// HeadCells returns the header with each column aligned like its cells.
func (t table) HeadCells() []cell {
	out := make([]cell, len(t.Head))
	for i, h := range t.Head {
		out[i] = cell{Text: h}
		if len(t.Rows) > 0 && i < len(t.Rows[0]) && strings.HasPrefix(t.Rows[0][i].Class, "num") {
			out[i].Class = "num"
		}
	}
	return out
}

func num(s string) cell  { return cell{Text: s, Class: "num"} }
func txt(s string) cell  { return cell{Text: s, Class: "nw"} }
func dim(s string) cell  { return cell{Text: s, Class: "dim"} }
func code(s string) cell { return cell{Text: s, Class: "mono"} }

type bestView struct {
	Facts     []kv
	Warning   string
	DiffStat  string
	DiffLines []diffLine
	DiffNote  string
	Sections  table
	TopOps    []opsView
	Curve     table
}

type opsView struct {
	Title string
	Table table
}

type diffLine struct {
	Class, Text string
}

// maxDiffLines bounds the diff shown inline; best.diff has all of it.
const maxDiffLines = 4000

// buildPage turns the analysis into the page's text.
func buildPage(a *analysis, figs []*figure, diff string, st edit.Stat) *page {
	d := a.d
	pg := &page{Figures: map[string]*figure{}}
	for _, f := range figs {
		pg.Figures[f.Name] = f
	}
	name := d.Run.Name
	if name == "" {
		name = d.Run.ID
	}
	pg.Title = "Run " + name
	if d.Run.Track != "" {
		pg.Title += " on track " + d.Run.Track
	}
	pg.Subtitle = fmt.Sprintf("%s, %s, %s", plural(a.total, "program", "programs"), plural(a.iters, "iteration", "iterations"), runState(&d.Run))
	pg.Headline = headline(a)
	pg.Alerts = alerts(a)
	pg.Run = runFacts(a)
	pg.Summary = summary(a)
	pg.Top = topTable(a)
	pg.Models = groupTable(a, a.byModel, "Model", true)
	pg.Stages = groupTable(a, a.byStage, "Stage", false)
	if a.hasPhase {
		pg.Phases = groupTable(a, a.byPhase, "Phase", false)
	}
	pg.Records = recordsTable(a)
	pg.Claims = claimsTable(a)
	pg.Iters = itersTable(a)
	pg.Programs = programsTable(a)
	pg.Best = bestSection(a, diff, st)
	if !d.GeneratedAt.IsZero() {
		pg.Generated = stamp(d.GeneratedAt)
	}
	return pg
}

func runState(r *Run) string {
	switch {
	case !r.EndedAt.IsZero() && r.StopReason != "":
		return "ended: " + r.StopReason
	case !r.EndedAt.IsZero():
		return "ended"
	}
	return "still running"
}

// headline says what the run found: its record with the evidence, or
// that the record is still the reference and what became of a faster
// single timing, or why there is no acceptable program.
func headline(a *analysis) string {
	d := a.d
	ref := d.Reference.TrainTimeMs
	if r := d.Record; r != nil && !r.Reference {
		s := fmt.Sprintf("Record: #%d trains in %s", r.ID, withUnit(secs(r.TrainTimeMs), "s"))
		if measured(ref) {
			s += fmt.Sprintf(", speedup %s over the reference's %s s", speedup(r.TrainTimeMs, ref), secs(ref))
		}
		return s + " (" + r.Evidence + ")."
	}
	if p := a.fastest; p != nil {
		s := "The record is still the reference"
		if measured(ref) {
			s += fmt.Sprintf(" (%s s)", secs(ref))
		}
		if !measured(ref) || p.TrainTimeMs >= ref {
			return s + fmt.Sprintf(": no acceptable program measured faster; the fastest is #%d at %s s.", p.ID, secs(p.TrainTimeMs))
		}
		s += fmt.Sprintf(". The fastest single timing, #%d (%s, iteration %d) at %s s (%s), is not a record: ",
			p.ID, displayName(p.Model), p.Iteration, secs(p.TrainTimeMs), speedup(p.TrainTimeMs, ref))
		if c := a.claims[p.ID]; c != nil {
			return s + c.Evidence + claimReason(c) + "."
		}
		return s + "it was never confirmed (frontier runs confirm tests it)."
	}
	evaluated := a.counts[runs.Buggy] + a.counts[runs.TooHigh] + a.counts[runs.ClassAcceptable]
	switch {
	case a.total == 0:
		return "The run has no programs yet."
	case evaluated == 0:
		return fmt.Sprintf("None of the %s has finished its evaluation yet.", plural(a.total, "program", "programs"))
	case a.counts[runs.ClassAcceptable] > 0:
		return "Acceptable programs exist, but none has a recorded train time."
	case a.counts[runs.Buggy] == evaluated:
		return fmt.Sprintf("All %s evaluated so far are buggy: none ran to a validation loss.", plural(evaluated, "program", "programs"))
	}
	s := fmt.Sprintf("No program reached the target validation loss %s", loss(d.Run.TargetValLoss))
	if p := a.lowest; p != nil {
		s += fmt.Sprintf("; the lowest is %s (#%d, iteration %d)", loss(p.ValLoss), p.ID, p.Iteration)
	}
	return s + "."
}

// claimReason adds a claim's reason when it says more than its state.
func claimReason(c *Claim) string {
	if c.Reason == "" || c.State == "confirmed" {
		return ""
	}
	return "; " + c.Reason
}

func alerts(a *analysis) []string {
	var out []string
	d := a.d
	if r := d.Record; r != nil && r.Reference && a.fastest != nil && a.fastest.TrainTimeMs < d.Reference.TrainTimeMs {
		out = append(out, "Every time below is a single timing unless its evidence says otherwise: on a busy machine one timing can be off by tens of percent, so a program that measured faster once is a candidate, not a record.")
	}
	if !measured(d.Reference.TrainTimeMs) {
		out = append(out, "The reference program's train time was not measured in this run: speedups are not shown.")
	}
	if !measured(d.Run.TargetValLoss) {
		out = append(out, "The run has no target validation loss recorded.")
	}
	if b := d.Best; b != nil && b.Program.Class() != runs.ClassAcceptable && !(d.Record != nil && d.Record.Reference && b.Program.ID == d.Record.ID) {
		out = append(out, fmt.Sprintf("The best program shown below (#%d) is not acceptable (verdict %q).", b.Program.ID, b.Program.Verdict))
	}
	if a.accUntimed > 0 {
		out = append(out, fmt.Sprintf("%s lack a train time and are left out of the time figures.", plural(a.accUntimed, "acceptable program", "acceptable programs")))
	}
	return out
}

func runFacts(a *analysis) []kv {
	r := a.d.Run
	kvs := []kv{{"Run", r.ID}}
	if r.Name != "" && r.Name != r.ID {
		kvs = append(kvs, kv{"Name", r.Name})
	}
	kvs = append(kvs,
		kv{"Track", orDash(r.Track)},
		kv{"Target val loss", loss(r.TargetValLoss)},
	)
	if measured(r.LossFloor) {
		kvs = append(kvs, kv{"Loss floor", loss(r.LossFloor)})
	}
	kvs = append(kvs,
		kv{"Objective", orDash(r.Objective)},
		kv{"Models", orDash(strings.Join(r.Models, ", "))},
	)
	if r.MetaPromptFrom >= 0 {
		kvs = append(kvs, kv{"Meta-prompting", fmt.Sprintf("from iteration %d", r.MetaPromptFrom)})
	} else {
		kvs = append(kvs, kv{"Meta-prompting", "never"})
	}
	kvs = append(kvs, kv{"Started", stamp(r.StartedAt)})
	if r.Sessions > 1 {
		kvs = append(kvs, kv{"Sessions", fmt.Sprintf("%d: stopped or killed and resumed %s", r.Sessions, plural(r.Sessions-1, "time", "times"))})
	}
	if !r.EndedAt.IsZero() {
		kvs = append(kvs, kv{"Ended", stamp(r.EndedAt)}, kv{"Wall time", duration(r.EndedAt.Sub(r.StartedAt))})
	}
	stop := orDash(r.StopReason)
	if r.StopDetail != "" {
		stop += ": " + r.StopDetail
	}
	kvs = append(kvs, kv{"Stop reason", stop})
	if r.FingerprintClass != "" {
		kvs = append(kvs, kv{"Machine class", r.FingerprintClass})
	}
	ref := a.d.Reference
	kvs = append(kvs, kv{"Reference", fmt.Sprintf("val loss %s, train time %s, step avg %s", loss(ref.ValLoss), withUnit(secs(ref.TrainTimeMs), "s"), withUnit(avgMs(ref.StepAvgMs), "ms"))})
	return kvs
}

func summary(a *analysis) []kv {
	ev := a.counts[runs.Buggy] + a.counts[runs.TooHigh] + a.counts[runs.ClassAcceptable]
	share := func(n int) string {
		if ev == 0 {
			return count(n)
		}
		return fmt.Sprintf("%s (%s)", count(n), percent(rate(n, ev)))
	}
	judged := count(ev)
	if a.neverRan > 0 {
		judged += fmt.Sprintf(" (%s ran; %s never applied)", count(ev-a.neverRan), plural(a.neverRan, "edit", "edits"))
	}
	kvs := []kv{
		{"Programs", count(a.total)},
		{"Judged", judged},
		{"Acceptable", share(a.counts[runs.ClassAcceptable])},
		{"Loss too high", share(a.counts[runs.TooHigh])},
		{"Buggy", share(a.counts[runs.Buggy])},
	}
	if a.counts[runs.Pending] > 0 {
		kvs = append(kvs, kv{"Pending", count(a.counts[runs.Pending])})
	}
	if a.counts[runs.ClassNone] > 0 {
		kvs = append(kvs, kv{"No proposal", count(a.counts[runs.ClassNone])})
	}
	kvs = append(kvs,
		kv{"Duplicates", count(a.counts[runs.ClassDuplicate])},
		kv{"Tokens in / out", compact(a.tokensIn) + " / " + compact(a.tokensOut)},
		kv{"Cost", usd(a.cost)},
	)
	return kvs
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return dash
	}
	return s
}

// withUnit appends a unit to a value, but not to the dash of a missing one.
func withUnit(v, unit string) string {
	if v == dash {
		return v
	}
	return v + " " + unit
}

// avgMs formats a step average, which is never 0 when measured.
func avgMs(x float64) string {
	if !measured(x) {
		return dash
	}
	return millis(x)
}

// loadCell says what else ran while a program was timed: the CPUs other
// processes kept busy and the one-minute load average at the start. Two
// times taken under different loads are not comparable.
func loadCell(c *runs.Conditions) cell {
	var parts []string
	if o, ok := c.OthersCPUs(); ok {
		parts = append(parts, fmt.Sprintf("others %.2f of %d CPUs", o, c.CPU.CPUs))
	}
	if c != nil && len(c.LoadAvg) > 0 {
		parts = append(parts, fmt.Sprintf("load %.2f", c.LoadAvg[0]))
	}
	if len(parts) == 0 {
		return dim(dash)
	}
	return txt(strings.Join(parts, ", "))
}

// topTable is the paper's Fig. 2a: the reference and the fastest
// acceptable programs.
func topTable(a *analysis) table {
	t := table{Head: []string{"#", "Program", "Iteration", "Model", "Stage", "Val loss", "Train time (s)", "Δ vs ref (s)", "Speedup", "Evidence", "Ran under"}, Class: "top"}
	ref := a.d.Reference
	t.Rows = append(t.Rows, []cell{dim(""), {Text: "reference", Class: "ref"}, dim(dash), dim(dash), dim(dash), num(loss(ref.ValLoss)), num(secs(ref.TrainTimeMs)), num(dash), num(dash), dim("single timing"), loadCell(ref.Conditions)})
	top := a.top(10)
	for i, p := range top {
		sp := cell{Text: speedup(p.TrainTimeMs, ref.TrainTimeMs), Class: "num"}
		if measured(ref.TrainTimeMs) {
			if p.TrainTimeMs < ref.TrainTimeMs {
				sp.Class += " good"
			} else if p.TrainTimeMs > ref.TrainTimeMs {
				sp.Class += " bad"
			}
		}
		t.Rows = append(t.Rows, []cell{
			num(fmt.Sprint(i + 1)), code(fmt.Sprintf("#%d %s", p.ID, shortHash(p.Hash))), num(fmt.Sprint(p.Iteration)),
			txt(displayName(p.Model)), txt(displayName(p.Stage)), num(loss(p.ValLoss)), num(secs(p.TrainTimeMs)),
			num(delta(p.TrainTimeMs, ref.TrainTimeMs)), sp, evidenceCell(a, p), loadCell(p.Conditions),
		})
	}
	if len(top) == 0 {
		t.Note = "No acceptable program yet: only the reference is listed."
	}
	return t
}

// evidenceCell says what a program's time rests on: its claim, or one
// timing.
func evidenceCell(a *analysis, p *Program) cell {
	c := a.claims[p.ID]
	if c == nil {
		return dim("single timing")
	}
	cl := cell{Text: c.State, Title: c.Evidence + claimReason(c), Class: "nw"}
	if c.State == "confirmed" {
		cl.Class += " good"
		if c.Pairs > 1 {
			cl.Text = fmt.Sprintf("confirmed, n = %d", c.Pairs)
		} else {
			cl.Text = "beyond noise"
		}
	}
	return cl
}

func groupTable(a *analysis, gs []group, what string, costs bool) table {
	head := []string{what, "Programs", "Judged", "Ran", "Acceptable", "Accept rate", "Buggy rate", "Fastest (s)", "Speedup", "Best loss", "Trend (s/iter)"}
	if costs {
		head = append(head, "Tokens in / out", "Cost", "Cost / acceptable")
	}
	t := table{Head: head}
	ref := a.d.Reference.TrainTimeMs
	for _, g := range gs {
		ev := g.evaluated()
		trend := cell{Text: dash, Class: "num"}
		if g.trend.ok {
			trend.Text = fmt.Sprintf("%+.3g", g.trend.b/1000)
			if c := g.trend.caveat(); c != "" {
				trend.Text += " *"
				trend.Title = c
				trend.Class += " dim"
			}
		}
		row := []cell{
			{Text: g.name, Class: "name"}, num(count(g.programs)), num(count(ev)), num(count(g.ran())), num(count(g.counts[runs.ClassAcceptable])),
			num(percent(rate(g.counts[runs.ClassAcceptable], ev))), num(percent(rate(g.counts[runs.Buggy], ev))),
			num(secs(g.bestTimeMs)), num(speedup(g.bestTimeMs, ref)), num(loss(g.bestLoss)), trend,
		}
		if costs {
			per := dash
			switch {
			case g.counts[runs.ClassAcceptable] > 0:
				per = usd(g.cost / float64(g.counts[runs.ClassAcceptable]))
			case g.cost == 0:
				per = "$0"
			}
			row = append(row,
				cell{Text: compact(g.tokensIn) + " / " + compact(g.tokensOut), Class: "num", Title: count(g.tokensIn) + " in, " + count(g.tokensOut) + " out"},
				num(usd(g.cost)), num(per))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		t.Note = "No programs yet."
	}
	for _, g := range gs {
		if g.trend.ok && g.trend.weak() {
			t.Foot = fmt.Sprintf("* a trend through fewer than %d programs or %d iterations: too few to read as a trend.", trendMinPoints, trendMinIters)
			break
		}
	}
	return t
}

// claimsTable lists every claim to be a record and what testing it found,
// failed and rejected ones included.
func claimsTable(a *analysis) table {
	t := table{Head: []string{"Claim", "Program", "Against", "Method", "By", "N", "State", "Single (s)", "Mean (s)", "Against (s)", "Speedup", "95% CI", "p (time)", "p (loss)", "Reason"}}
	opt := func(x *float64, f func(float64) string) string {
		if x == nil {
			return dash
		}
		return f(*x)
	}
	sp := func(x float64) string { return runs.FormatSpeedup(x) }
	pv := func(x float64) string { return strconv.FormatFloat(x, 'g', 2, 64) }
	for _, c := range a.d.Claims {
		state := cell{Text: c.State, Class: "nw"}
		switch c.State {
		case "confirmed":
			state.Class += " good"
		case "rejected", "failed":
			state.Class += " bad"
		}
		ci := dash
		if c.SpeedupLo != nil && c.SpeedupHi != nil {
			ci = sp(*c.SpeedupLo) + " to " + sp(*c.SpeedupHi)
		}
		t.Rows = append(t.Rows, []cell{
			num(fmt.Sprint(c.ID)), code(fmt.Sprintf("#%d", c.ChildID)), code(fmt.Sprintf("#%d", c.BaselineID)), txt(c.Method),
			txt(orDash(c.Source)), num(fmt.Sprint(c.Pairs)), state, num(secs(c.SingleMs)), num(secs(c.TimeMs)), num(secs(c.BaselineMs)),
			num(opt(c.Speedup, sp)), num(ci), num(opt(c.TimeP, pv)), num(opt(c.LossP, pv)), {Text: c.Reason, Class: "reason"},
		})
	}
	if len(t.Rows) == 0 {
		t.Note = "No program measured faster than the standing record, so nothing was claimed."
	}
	return t
}

func recordsTable(a *analysis) table {
	t := table{Head: []string{"Iteration", "Program", "Model", "Stage", "Train time (s)", "Gain over previous (s)", "Speedup vs ref", "Val loss"}}
	ref := a.d.Reference.TrainTimeMs
	prev := 0.0
	for _, p := range a.records {
		gain := dash
		if prev > 0 {
			gain = fmt.Sprintf("%.3f", (prev-p.TrainTimeMs)/1000)
		}
		t.Rows = append(t.Rows, []cell{
			num(fmt.Sprint(p.Iteration)), code(fmt.Sprintf("#%d %s", p.ID, shortHash(p.Hash))), txt(displayName(p.Model)),
			txt(displayName(p.Stage)), num(secs(p.TrainTimeMs)), num(gain), num(speedup(p.TrainTimeMs, ref)), num(loss(p.ValLoss)),
		})
		prev = p.TrainTimeMs
	}
	if len(t.Rows) == 0 {
		t.Note = "No acceptable program yet."
	}
	return t
}

func itersTable(a *analysis) table {
	t := table{Head: []string{"Iteration", "Programs", "Buggy", "Loss too high", "Acceptable", "Pending", "Duplicates", "No proposal", "Accept rate", "Best time so far (s)", "Best loss so far"}}
	for _, it := range a.perIter {
		n := 0
		for _, c := range it.counts {
			n += c
		}
		if n == 0 {
			continue
		}
		iter := fmt.Sprint(it.iter)
		if a.hasPhase && it.iter == a.d.Run.MetaPromptFrom {
			iter += " (meta)"
		}
		t.Rows = append(t.Rows, []cell{
			num(iter), num(count(n)), num(count(it.counts[runs.Buggy])), num(count(it.counts[runs.TooHigh])), num(count(it.counts[runs.ClassAcceptable])),
			num(count(it.counts[runs.Pending])), num(count(it.counts[runs.ClassDuplicate])), num(count(it.counts[runs.ClassNone])),
			num(percent(rate(it.counts[runs.ClassAcceptable], it.evaluated()))),
			num(secs(it.bestTimeMs)), num(loss(it.bestLoss)),
		})
	}
	if len(t.Rows) == 0 {
		t.Note = "No programs yet."
	}
	return t
}

func programsTable(a *analysis) table {
	t := table{Head: []string{"ID", "Hash", "Iter", "Island", "Parent", "Model", "Stage", "Verdict", "Val loss", "Time (s)", "Step avg (ms)", "Score", "Tokens", "Cost", "Fixes", "Reason"}, Class: "programs"}
	for _, p := range a.progs {
		verdict := cell{Text: orDash(p.Verdict), Class: "nw v-" + string(p.Class())}
		switch {
		case p.Duplicate && p.Verdict != string(runs.Duplicate):
			verdict.Text += " (duplicate)"
		case p.SourceID != 0 && !p.Duplicate:
			verdict.Text += fmt.Sprintf(" (fix gave #%d's)", p.SourceID)
		}
		parent := dash
		if p.ParentID != 0 {
			parent = fmt.Sprint(p.ParentID)
		}
		t.Rows = append(t.Rows, []cell{
			num(fmt.Sprint(p.ID)), code(shortHash(p.Hash)), num(fmt.Sprint(p.Iteration)), num(fmt.Sprint(p.Island)), num(parent),
			txt(displayName(p.Model)), txt(displayName(p.Stage)), verdict, num(loss(p.ValLoss)), num(secs(p.TrainTimeMs)),
			num(avgMs(p.StepAvgMs)), num(general(p.Score)), num(compact(p.InputTokens + p.OutputTokens)), num(usd(p.CostUSD)),
			num(fmt.Sprint(p.FixAttempts)), {Text: p.Reason, Class: "reason"},
		})
	}
	if len(t.Rows) == 0 {
		t.Note = "No programs yet."
	}
	return t
}

func bestSection(a *analysis, diff string, st edit.Stat) *bestView {
	b := a.d.Best
	if b == nil {
		return nil
	}
	p := b.Program
	ref := a.d.Reference
	parent := "the reference"
	if p.ParentID != 0 {
		parent = fmt.Sprintf("#%d", p.ParentID)
	}
	v := &bestView{Facts: []kv{
		{"Program", fmt.Sprintf("#%d", p.ID)},
		{"Record", recordFact(a, p)},
		{"Hash", orDash(p.Hash)},
		{"Found at", fmt.Sprintf("iteration %d, island %d, child of %s", p.Iteration, p.Island, parent)},
		{"Model / stage", displayName(p.Model) + " / " + displayName(p.Stage)},
		{"Verdict", orDash(p.Verdict)},
		{"Val loss", fmt.Sprintf("%s (reference %s, target %s)", loss(p.ValLoss), loss(ref.ValLoss), loss(a.d.Run.TargetValLoss))},
		{"Train time", fmt.Sprintf("%s (reference %s, speedup %s)", withUnit(secs(p.TrainTimeMs), "s"), withUnit(secs(ref.TrainTimeMs), "s"), speedup(p.TrainTimeMs, ref.TrainTimeMs))},
		{"Step average", fmt.Sprintf("%s (reference %s)", withUnit(avgMs(p.StepAvgMs), "ms"), withUnit(avgMs(ref.StepAvgMs), "ms"))},
		{"Score", general(p.Score)},
		{"Fix attempts", fmt.Sprint(p.FixAttempts)},
		{"Cost", fmt.Sprintf("%s (%s tokens in, %s out)", usd(p.CostUSD), count(p.InputTokens), count(p.OutputTokens))},
	}}
	if p.Reason != "" {
		v.Facts = append(v.Facts, kv{"Reason", p.Reason})
	}
	if p.Class() != runs.ClassAcceptable {
		v.Warning = fmt.Sprintf("This program's verdict is %q, not acceptable.", p.Verdict)
	}
	switch {
	case b.ReferenceSource == "":
		v.DiffNote = "The reference program's source is not in the data, so there is no diff."
	case diff == "":
		v.DiffNote = "The best program is identical to the reference."
	default:
		v.DiffStat = fmt.Sprintf("+%d −%d lines", st.Added, st.Removed)
		lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
		if len(lines) > maxDiffLines {
			v.DiffNote = fmt.Sprintf("The diff has %s lines; the first %s are shown, best.diff has all of them.", count(len(lines)), count(maxDiffLines))
			lines = lines[:maxDiffLines]
		}
		for _, l := range lines {
			v.DiffLines = append(v.DiffLines, diffLine{Class: DiffClass(l), Text: l})
		}
	}
	v.Sections = sectionsTable(b)
	for _, ops := range b.TopOps {
		v.TopOps = append(v.TopOps, opsTable(ops))
	}
	v.Curve = curveTable(b)
	return v
}

// recordFact says whether the best program is the record and on what.
func recordFact(a *analysis, p Program) string {
	r := a.d.Record
	switch {
	case r == nil:
		return "not known"
	case r.ID != p.ID:
		return fmt.Sprintf("no: the record is #%d", r.ID)
	case r.Reference:
		return "the reference is still the record: " + r.Evidence
	}
	return fmt.Sprintf("%s s, %s", secs(r.TrainTimeMs), r.Evidence)
}

// DiffClass is the CSS class of a line of a unified diff: dh (a file's
// header), dk (a hunk's), da (added), dd (removed), dc (context). The
// dashboard colours its diffs with the same classes.
func DiffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		return "dh"
	case strings.HasPrefix(l, "@@"):
		return "dk"
	case strings.HasPrefix(l, "+"):
		return "da"
	case strings.HasPrefix(l, "-"):
		return "dd"
	}
	return "dc"
}

func sectionsTable(b *Best) table {
	withRef := len(b.ReferenceSections) > 0
	head := []string{"Section", "Calls", "Total (ms)", "Avg (ms)", "% of train time"}
	if withRef {
		head = append(head, "Reference total (ms)", "Reference avg (ms)", "Δ total (ms)")
	}
	t := table{Head: head}
	refBy := map[string]harness.Section{}
	for _, s := range b.ReferenceSections {
		refBy[s.Name] = s
	}
	seen := map[string]bool{}
	row := func(s harness.Section, have bool) []cell {
		r := []cell{code(s.Name), num(count(s.Calls)), num(millis(s.TotalMs)), num(millis(s.AvgMs)), num(fmt.Sprintf("%.1f", s.Pct))}
		if !have {
			r = []cell{code(s.Name), num(dash), num(dash), num(dash), num(dash)}
		}
		if withRef {
			rs, ok := refBy[s.Name]
			if !ok {
				return append(r, num(dash), num(dash), num(dash))
			}
			d := dash
			if have {
				d = fmt.Sprintf("%+.1f", s.TotalMs-rs.TotalMs)
			}
			r = append(r, num(millis(rs.TotalMs)), num(millis(rs.AvgMs)), num(d))
		}
		return r
	}
	for _, s := range b.Sections {
		seen[s.Name] = true
		t.Rows = append(t.Rows, row(s, true))
	}
	// Sections the reference had and the best program dropped.
	for _, s := range b.ReferenceSections {
		if !seen[s.Name] {
			t.Rows = append(t.Rows, row(harness.Section{Name: s.Name}, false))
		}
	}
	if len(t.Rows) == 0 {
		t.Note = "No section profile was recorded for the best program."
	}
	return t
}

func opsTable(ops harness.TopOps) opsView {
	title := "Top operators"
	switch ops.Kind {
	case "cpu":
		title = "Top CPU operators"
	case "cuda":
		title = "Top CUDA kernels"
	}
	if len(ops.Steps) == 2 {
		title += fmt.Sprintf(" (profiled steps %d–%d)", ops.Steps[0], ops.Steps[1])
	}
	var sum float64
	for _, o := range ops.Ops {
		if finite(o.TotalMs) {
			sum += o.TotalMs
		}
	}
	t := table{Head: []string{"Operator", "Calls", "Total (ms)", "Avg (ms)", "Share of listed"}}
	for _, o := range ops.Ops {
		avg := -1.0
		if o.Calls > 0 {
			avg = o.TotalMs / float64(o.Calls)
		}
		share := dash
		if sum > 0 && finite(o.TotalMs) {
			share = percent(o.TotalMs / sum)
		}
		t.Rows = append(t.Rows, []cell{{Text: clip(o.Name, 80), Title: o.Name, Class: "mono"}, num(count(o.Calls)), num(millis(o.TotalMs)), num(millis(avg)), num(share)})
	}
	if len(t.Rows) == 0 {
		t.Note = "The profiler recorded no operators."
	}
	return opsView{Title: title, Table: t}
}

func curveTable(b *Best) table {
	t := table{Head: []string{"Step", "Train time (s)", "Step avg (ms)", "Tokens", "Tokens/s", "Train loss", "Val loss"}}
	type row struct {
		step int
		s    *harness.Step
		v    *harness.Val
	}
	rows := map[int]*row{}
	get := func(step int) *row {
		r, ok := rows[step]
		if !ok {
			r = &row{step: step}
			rows[step] = r
		}
		return r
	}
	for i := range b.Curve {
		get(b.Curve[i].Step).s = &b.Curve[i]
	}
	for i := range b.Vals {
		get(b.Vals[i].Step).v = &b.Vals[i]
	}
	steps := make([]int, 0, len(rows))
	for s := range rows {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	for _, step := range steps {
		r := rows[step]
		c := []cell{num(fmt.Sprint(step)), num(dash), num(dash), num(dash), num(dash), num(dash), num(dash)}
		if s := r.s; s != nil {
			c[1], c[2], c[3] = num(secsOrZero(s.TrainTimeMs)), num(millis(s.StepAvgMs)), num(count(s.Tokens))
			if finite(s.TokensPerS) && s.TokensPerS > 0 {
				c[4] = cell{Text: compact(int64(math.Round(s.TokensPerS))), Class: "num", Title: strconv.FormatFloat(s.TokensPerS, 'f', 0, 64)}
			}
			if s.TrainLoss != nil {
				c[5] = num(loss(*s.TrainLoss))
			}
		}
		if v := r.v; v != nil {
			c[6] = num(loss(v.ValLoss))
			if v.Final {
				c[6].Text += " (final)"
			}
		}
		t.Rows = append(t.Rows, c)
	}
	if len(t.Rows) == 0 {
		t.Note = "No step metrics were recorded for the best program."
	}
	return t
}

// secsOrZero formats a train time that may legitimately be 0 (step 0).
func secsOrZero(ms float64) string {
	if ms == 0 {
		return "0"
	}
	return secs(ms)
}

// renderHTML writes the page.
func renderHTML(w io.Writer, pg *page) error {
	t, err := parseTemplate()
	if err != nil {
		return fmt.Errorf("parse report template: %w", err)
	}
	if err := t.Execute(w, pg); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}
