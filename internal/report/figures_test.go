package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
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

// The frontier starts at the reference, one iteration before the first,
// and never rises above it: the search starts from the reference. Here
// iteration 1's acceptable program (25 s) is slower than the reference
// (20 s), so the time frontier stays at 20 s until iteration 2's 18 s.
func TestFrontierStartsAtReference(t *testing.T) {
	d := figureRun()
	d.Programs[0].TrainTimeMs = 25_000
	a := analyze(d)
	xys := a.timeFrontier()
	if len(xys) == 0 || xys[0].X != 0 || xys[0].Y != 20 {
		t.Fatalf("the time frontier starts at %v, want the reference's 20 s before iteration 1", xys)
	}
	for _, p := range xys {
		if p.Y > 20 {
			t.Errorf("the time frontier rises above the reference: %v", xys)
		}
	}
	if xys[1].Y != 20 || xys[2].Y != 18 {
		t.Errorf("time frontier %v, want 20 s after iteration 1 and 18 s after iteration 2", xys)
	}
	if l := a.lossFrontier(); len(l) == 0 || l[0].Y != 3.99 || l[1].Y != 3.9 {
		t.Errorf("loss frontier %v, want the reference's 3.99 first", l)
	}
	if f := a.frontierTimeFigure(); f.plot == nil || f.plot.X.Min > 0 {
		t.Errorf("the time frontier's axis does not show the reference's point: %+v", f.plot)
	}
}

// What the captions call dashed is drawn with dashes, what they call
// dotted with dots: the meta-prompting line is dotted red, the reference
// dashed grey, a weak trend dashed black.
func TestCaptionLineStyles(t *testing.T) {
	isDotted := func(d []vg.Length) bool { return len(d) == 2 && d[0] <= 1.5 && d[1] >= 2*d[0] }
	isDashed := func(d []vg.Length) bool { return len(d) == 2 && d[0] >= 1.5*d[1] }
	a := analyze(figureRun())
	f := a.timeFigure()
	if !strings.Contains(f.Caption, "dotted red line marks iteration 3") || !strings.Contains(f.Caption, "dashed grey line is the reference") ||
		!strings.Contains(f.Caption, "least-squares line (dashed black)") {
		t.Fatalf("caption %q", f.Caption)
	}
	if m := metaLine(3); !isDotted(m.style.Dashes) || m.style.Color != colMeta {
		t.Errorf("the meta-prompting line is %v %v, captioned dotted red", m.style.Dashes, m.style.Color)
	}
	if r := refLine(1); !isDashed(r.style.Dashes) || r.style.Color != colRef {
		t.Errorf("the reference line is %v, captioned dashed grey", r.style.Dashes)
	}
	if !a.trend.weak() || !isDashed(trendStyle(true).Dashes) || len(trendStyle(false).Dashes) != 0 {
		t.Errorf("a weak trend is drawn %v, a strong one %v: want dashed and solid", trendStyle(true).Dashes, trendStyle(false).Dashes)
	}
}
