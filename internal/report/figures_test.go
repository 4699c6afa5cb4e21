package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// figureRun is the run the issue saw: eight iterations, acceptable
// programs only in the first two, meta-prompting from iteration 3, one
// program in iteration 5 and ten in iteration 6.
func figureRun() *Data {
	d := &Data{Run: Run{ID: "1", Track: "tiny", TargetValLoss: 4, MetaPromptFrom: 3, StartedAt: time.Unix(0, 0)},
		Reference: Point{ValLoss: 3.99, TrainTimeMs: 20_000}}
	id := int64(0)
	add := func(iter int, verdict string, ms float64) {
		id++
		p := Program{ID: id, Iteration: iter, Model: "m", Stage: StageTemplate, Verdict: verdict}
		if verdict == "acceptable" {
			p.ValLoss, p.TrainTimeMs = 3.9, ms
		}
		d.Programs = append(d.Programs, p)
	}
	add(1, "acceptable", 19_000)
	add(2, "acceptable", 18_000)
	for iter := 3; iter <= 8; iter++ {
		add(iter, "error", 0)
	}
	for range 9 {
		add(6, "error", 0)
	}
	return d
}

// The time figure spans the run, not the iterations that had acceptable
// programs, and the meta-prompting line sits between iterations inside
// it; a trend through two points says it is none.
func TestTimeFigureAxisAndTrend(t *testing.T) {
	a := analyze(figureRun())
	f := a.timeFigure()
	if f.plot == nil {
		t.Fatalf("no figure: %s", f.Note)
	}
	if f.plot.X.Min > 0.5 || f.plot.X.Max < 8.5 {
		t.Errorf("x axis %g..%g, want iterations 1 to 8", f.plot.X.Min, f.plot.X.Max)
	}
	if !a.metaInside() || !strings.Contains(f.Caption, "iteration 3, where meta-prompting starts") {
		t.Errorf("meta line: inside %v, caption %q", a.metaInside(), f.Caption)
	}
	if !strings.Contains(f.Caption, "do not read it as a trend") || !strings.Contains(f.Caption, "2 programs over 2 iterations") {
		t.Errorf("a two-point trend without its caveat: %q", f.Caption)
	}
	for _, g := range []*figure{a.frontierTimeFigure(), a.frontierLossFigure()} {
		if g.plot != nil && (g.plot.X.Min > 0.5 || g.plot.X.Max < 8.5) {
			t.Errorf("%s: x axis %g..%g", g.Name, g.plot.X.Min, g.plot.X.Max)
		}
	}
	// A start past the last iteration is not drawn at the frame's edge.
	d := figureRun()
	d.Run.MetaPromptFrom = 9
	a = analyze(d)
	if f := a.timeFigure(); a.metaInside() || !strings.Contains(f.Caption, "starts at iteration 9, after the last one shown") {
		t.Errorf("meta start 9 of 8 iterations: inside %v, caption %q", a.metaInside(), f.Caption)
	}
}

// The breakdown counts: an iteration of ten programs is ten times as tall
// as one of one.
func TestBreakdownCounts(t *testing.T) {
	a := analyze(figureRun())
	_, _, ymin, ymax := stackedCounts{rows: a.perIter}.DataRange()
	if ymin != 0 || ymax != 10 {
		t.Errorf("y range %g..%g, want 0..10 (iteration 6 has 10 programs)", ymin, ymax)
	}
	f := a.breakdownFigure()
	if f.plot == nil || f.plot.Y.Label.Text != "programs" || !strings.Contains(f.Caption, "counted") {
		t.Errorf("breakdown: %q %q", f.Note, f.Caption)
	}
}

// A reason longer than a cell is not cut off: the table wraps it.
func TestLongReasonNotCut(t *testing.T) {
	d := figureRun()
	long := "fast check: RuntimeError: " + strings.Repeat("the tensor shapes do not match ", 8) + "END-OF-REASON"
	d.Programs[3].Reason = long
	dir := t.TempDir()
	index, err := Write(context.Background(), dir, d)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "END-OF-REASON") {
		t.Error("the reason's end is cut off")
	}
	css, _ := os.ReadFile(filepath.Join("report.tmpl"))
	if strings.Contains(string(css), "text-overflow: ellipsis") {
		t.Error("a cell still hides overflow behind an ellipsis")
	}
}
