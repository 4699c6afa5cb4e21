package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runs"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure sizes and the PNG resolution: 192 dpi is twice a browser's CSS
// pixel, so the PNGs stay sharp on high-density screens and in slides.
const (
	figWidth  = 7.2 * vg.Inch
	figHeight = 3.4 * vg.Inch
	halfWidth = 4.6 * vg.Inch
	pngDPI    = 192
)

// Colours. The breakdown uses the paper's red / orange / green.
var (
	colBuggy   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colTooHigh = color.RGBA{R: 0xff, G: 0x9f, B: 0x1c, A: 0xff}
	colAccept  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colMeta    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colRef     = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colTrend   = color.RGBA{A: 0xff}
	colGrid    = color.RGBA{R: 0xe4, G: 0xe4, B: 0xe4, A: 0xff}
	// Model colours avoid red, orange and green, which mean verdicts.
	modelColors = []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
		color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
		color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
		color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
		color.RGBA{R: 0x39, G: 0x3b, B: 0x79, A: 0xff},
	}
	modelGlyphs = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{},
		draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
	}
)

// figure is one chart of the report: either a drawn plot or a note that
// says why there is none.
type figure struct {
	Name    string // file stem under figures/
	Title   string
	Caption string
	Note    string // set when there is nothing to draw

	plot   *plot.Plot
	legend *plot.Legend
	width  vg.Length
}

// SVG and PNG are the figure's files, relative to the report folder.
func (f *figure) SVG() string { return "figures/" + f.Name + ".svg" }
func (f *figure) PNG() string { return "figures/" + f.Name + ".png" }

// IsHalf reports whether the figure is meant to sit beside another.
func (f *figure) IsHalf() bool { return f.width == halfWidth }

// Drawn reports whether the figure has files.
func (f *figure) Drawn() bool { return f.plot != nil }

// newPlot returns a plot with the report's style: sans-serif text, light
// grid, integer iteration ticks when asked.
func newPlot(title, xlabel, ylabel string) (*plot.Plot, *plot.Legend) {
	p := plot.New()
	sans := func(s *font.Font) { s.Typeface = "Liberation"; s.Variant = "Sans" }
	sans(&p.Title.TextStyle.Font)
	sans(&p.X.Label.TextStyle.Font)
	sans(&p.Y.Label.TextStyle.Font)
	sans(&p.X.Tick.Label.Font)
	sans(&p.Y.Tick.Label.Font)
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 12
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Label.TextStyle.Font.Size = 11
	p.Y.Label.TextStyle.Font.Size = 11
	p.X.Tick.Label.Font.Size = 9.5
	p.Y.Tick.Label.Font.Size = 9.5
	p.X.Padding, p.Y.Padding = 4, 4
	p.X.Tick.Marker = plot.TickerFunc(preciseTicks)
	p.Y.Tick.Marker = plot.TickerFunc(preciseTicks)
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	g.Vertical.Width, g.Horizontal.Width = 0.5, 0.5
	p.Add(g)

	l := plot.NewLegend()
	sans(&l.TextStyle.Font)
	l.TextStyle.Font.Size = 9.5
	l.Top, l.Left = true, true
	l.ThumbnailWidth = 0.3 * vg.Inch
	l.Padding = 3.5
	return p, &l
}

// integerTicks labels whole iterations only, at a step of 1, 2 or 5 times
// a power of ten that gives at most ten labels; plot.DefaultTicks would
// label 0.00 and 25.00.
func integerTicks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return nil
	}
	step := 1.0
	for k := 0; span/step > 10; k++ {
		step = []float64{1, 2, 5}[k%3] * math.Pow(10, float64(k/3))
	}
	var out []plot.Tick
	minor := 0.0
	if step > 1 && span <= 80 {
		minor = 1
	}
	start := math.Ceil(lo) + 0 // + 0 turns -0 into 0, which would print as "-0"
	for v := start; v <= hi; v++ {
		switch {
		case math.Mod(v, step) == 0:
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
		case minor > 0:
			out = append(out, plot.Tick{Value: v})
		}
		if minor == 0 && step > 1 {
			// Jump to the next multiple of step instead of walking every integer.
			v = math.Ceil((v+1)/step)*step - 1
		}
	}
	return out
}

// preciseTicks are plot.DefaultTicks with labels that keep enough decimals
// to tell neighbours apart: losses 3.275 and 3.280 must not both read 3.28.
func preciseTicks(lo, hi float64) []plot.Tick {
	ticks := (plot.DefaultTicks{}).Ticks(lo, hi)
	for dec := 0; dec <= 8; dec++ {
		seen := map[string]bool{}
		distinct := true
		for _, t := range ticks {
			if t.Label == "" {
				continue
			}
			l := strconv.FormatFloat(t.Value, 'f', dec, 64)
			if seen[l] {
				distinct = false
				break
			}
			seen[l] = true
		}
		if distinct {
			for i := range ticks {
				if ticks[i].Label != "" {
					ticks[i].Label = tickLabel(ticks[i].Value, dec)
				}
			}
			return ticks
		}
	}
	return ticks
}

// tickLabel formats v with dec decimals, never as "-0.00".
func tickLabel(v float64, dec int) string {
	l := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Trim(l, "-0.") == "" {
		return strings.TrimPrefix(l, "-")
	}
	return l
}

// padY widens the plot's y range by frac of its span on both sides, so
// that a reference line at the extreme does not sit on the frame.
func padY(p *plot.Plot, frac float64) {
	lo, hi := p.Y.Min, p.Y.Max
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.02, 1e-9)
	}
	p.Y.Min, p.Y.Max = lo-span*frac, hi+span*frac
}

// render draws f to SVG (fonts embedded, so the file looks the same
// everywhere) and to PNG. gonum/plot panics on some inputs it considers
// programming errors; those become errors here, and the report shows the
// figure's note instead of a broken image.
func (f *figure) render() (svg, png []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, png, err = nil, nil, fmt.Errorf("draw figure %s: %v", f.Name, r)
		}
	}()
	w := f.width
	if w == 0 {
		w = figWidth
	}
	sc := vgsvg.NewWith(vgsvg.UseWH(w, figHeight), vgsvg.EmbedFonts(true))
	f.draw(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, fmt.Errorf("write figure %s.svg: %w", f.Name, err)
	}
	ic := vgimg.NewWith(vgimg.UseWH(w, figHeight), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(draw.New(ic))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, fmt.Errorf("write figure %s.png: %w", f.Name, err)
	}
	return sb.Bytes(), pb.Bytes(), nil
}

// draw lays the plot out on the left and the legend in a strip on the
// right, so the legend never hides data.
func (f *figure) draw(c draw.Canvas) {
	c = draw.Crop(c, 4, -6, 2, -6)
	if f.legend == nil {
		f.plot.Draw(c)
		return
	}
	lw := f.legend.Rectangle(c).Size().X + 14
	lw = min(lw, c.Size().X*0.38)
	f.plot.Draw(draw.Crop(c, 0, -lw, 0, 0))
	lc := draw.Crop(c, c.Size().X-lw+10, 0, 0, -18)
	f.legend.Draw(lc)
}

// shorten keeps legend labels to a width the legend strip can hold.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// hline and vline are reference lines across the whole data area: the
// reference time, the target loss, the start of meta-prompting. They take
// part in the data range only along their own axis.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (l hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	y := ty(l.y)
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

func (l hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), l.y, l.y
}

func (l hline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

type vline struct {
	x     float64
	style draw.LineStyle
}

func (l vline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	x := tx(l.x)
	c.StrokeLine2(l.style, x, c.Min.Y, x, c.Max.Y)
}

func (l vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.x, l.x, math.Inf(1), math.Inf(-1)
}

func (l vline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// swatch is a filled legend square.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	h := r.Size().Y
	r.Min.X = r.Max.X - h*1.6
	c.SetColor(s.c)
	c.Fill(r.Path())
}

// stackedCounts draws one bar per iteration stacking the numbers of
// buggy, too-high and acceptable programs, in data coordinates (gonum's
// BarChart sizes bars in page units, which does not follow the iteration
// axis). Counts, not shares: an iteration of one program and one of ten
// must not look alike.
type stackedCounts struct {
	rows []iterStats
}

func (s stackedCounts) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	cols := map[runs.Class]color.Color{runs.Buggy: colBuggy, runs.TooHigh: colTooHigh, runs.ClassAcceptable: colAccept}
	for _, r := range s.rows {
		if r.evaluated() == 0 {
			continue
		}
		x0, x1 := tx(float64(r.iter)-0.42), tx(float64(r.iter)+0.42)
		if x1-x0 < 0.6 {
			x1 = x0 + 0.6
		}
		base := 0.0
		for _, cat := range []runs.Class{runs.Buggy, runs.TooHigh, runs.ClassAcceptable} {
			n := float64(r.counts[cat])
			if n == 0 {
				continue
			}
			rect := vg.Rectangle{Min: vg.Point{X: x0, Y: ty(base)}, Max: vg.Point{X: x1, Y: ty(base + n)}}
			c.SetColor(cols[cat])
			c.Fill(rect.Path())
			base += n
		}
	}
}

func (s stackedCounts) DataRange() (xmin, xmax, ymin, ymax float64) {
	if len(s.rows) == 0 {
		return 0, 1, 0, 1
	}
	top := 1.0
	for _, r := range s.rows {
		top = math.Max(top, float64(r.evaluated()))
	}
	return float64(s.rows[0].iter) - 0.5, float64(s.rows[len(s.rows)-1].iter) + 0.5, 0, top
}

// runAxis makes the x axis span every iteration of the run, so that a
// figure whose points sit in a few iterations still shows where in the run
// they are (the figure showed iterations 1-2 of 8).
func (a *analysis) runAxis(p *plot.Plot) {
	if a.iters == 0 {
		return
	}
	p.X.Min = math.Min(p.X.Min, float64(a.minIter)-0.5)
	p.X.Max = math.Max(p.X.Max, float64(a.maxIter)+0.5)
}

// metaInside reports whether the start of meta-prompting falls between
// two iterations the figure shows: a line at the frame's edge (the first
// iteration, or past the last) says nothing.
func (a *analysis) metaInside() bool {
	m := a.d.Run.MetaPromptFrom
	return a.hasPhase && a.iters > 0 && m > a.minIter && m <= a.maxIter
}

// metaNote says where meta-prompting stands when its line is not drawn.
func (a *analysis) metaNote() string {
	m := a.d.Run.MetaPromptFrom
	switch {
	case !a.hasPhase || a.iters == 0:
		return ""
	case m <= a.minIter:
		return " Every iteration shown is meta-prompted."
	case m > a.maxIter:
		return fmt.Sprintf(" Meta-prompting starts at iteration %d, after the last one shown.", m)
	}
	return ""
}

// The line patterns the captions name: "dashed" and "dotted" must look
// so (a dash of 3 with a gap of 2 reads as dashes, not dots).
var (
	dashed = []vg.Length{6, 3}
	dotted = []vg.Length{1, 2.5}
)

// trendStyle draws a trend line: solid, dashed when too thin to read.
func trendStyle(weak bool) draw.LineStyle {
	st := draw.LineStyle{Color: colTrend, Width: 1.4}
	if weak {
		st.Dashes = dashed
	}
	return st
}

func metaLine(at int) vline {
	return vline{x: float64(at) - 0.5, style: draw.LineStyle{Color: colMeta, Width: 1.4, Dashes: dotted}}
}

func refLine(y float64) hline {
	return hline{y: y, style: draw.LineStyle{Color: colRef, Width: 1, Dashes: dashed}}
}

// figures builds every figure of the report from the analysis.
func (a *analysis) figures() []*figure {
	return []*figure{a.timeFigure(), a.breakdownFigure(), a.frontierTimeFigure(), a.frontierLossFigure(), a.curveFigure("best")}
}

// timeFigure is the paper's Fig. 2c / 3b: the train time of every
// acceptable program against its iteration, a least-squares trend, the
// reference time and the start of meta-prompting.
func (a *analysis) timeFigure() *figure {
	f := &figure{Name: "time_vs_iteration", Title: "Train time of acceptable programs"}
	switch {
	case len(a.accTimed) == 0 && a.counts[runs.ClassAcceptable] > 0:
		f.Note = "Acceptable programs exist but none has a recorded train time, so there is nothing to plot."
		return f
	case len(a.accTimed) == 0:
		f.Note = "No program reached the target loss, so there is no acceptable train time to plot."
		return f
	}
	p, l := newPlot(f.Title, "iteration", "train time (s)")
	p.X.Tick.Marker = plot.TickerFunc(integerTicks)
	if a.metaInside() {
		m := metaLine(a.d.Run.MetaPromptFrom)
		p.Add(m)
		l.Add("meta-prompting starts", m)
	}
	if measured(a.d.Reference.TrainTimeMs) {
		r := refLine(a.d.Reference.TrainTimeMs / 1000)
		p.Add(r)
		l.Add("reference", r)
	}
	// One series per model, in the order of the model table.
	for i, g := range a.byModel {
		if len(g.points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(g.points))
		for j, q := range g.points {
			xys[j] = plotter.XY{X: float64(q.Iteration), Y: q.TrainTimeMs / 1000}
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			f.Note = fmt.Sprintf("Could not plot model %s: %v.", g.name, err)
			return f
		}
		s.GlyphStyle = draw.GlyphStyle{Color: modelColors[i%len(modelColors)], Radius: 2.6, Shape: modelGlyphs[i%len(modelGlyphs)]}
		p.Add(s)
		l.Add(shorten(g.name, 30), s)
	}
	if a.trend.ok {
		t := a.trend
		xs := []float64{float64(a.accTimed[0].Iteration), float64(a.accTimed[0].Iteration)}
		for _, q := range a.accTimed {
			xs[0] = math.Min(xs[0], float64(q.Iteration))
			xs[1] = math.Max(xs[1], float64(q.Iteration))
		}
		line, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: t.at(xs[0]) / 1000}, {X: xs[1], Y: t.at(xs[1]) / 1000}})
		if err == nil {
			line.LineStyle = trendStyle(t.weak())
			label := fmt.Sprintf("trend %+.3g s/iter", t.b/1000)
			if t.weak() {
				label = fmt.Sprintf("trend %+.3g s/iter (%d pts)", t.b/1000, t.n)
			}
			p.Add(line)
			l.Add(label, line)
		}
	}
	padY(p, 0.04)
	a.runAxis(p)
	f.plot, f.legend = p, l
	f.Caption = a.timeCaption()
	return f
}

func (a *analysis) timeCaption() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acceptable programs", len(a.accTimed))
	if a.accUntimed > 0 {
		fmt.Fprintf(&b, " (%d more without a train time are not shown)", a.accUntimed)
	}
	b.WriteString(". ")
	switch {
	case a.trend.ok && a.trend.weak():
		fmt.Fprintf(&b, "The least-squares line (dashed black) has a slope of %+.3g s per iteration, but it rests on %s: do not read it as a trend. ", a.trend.b/1000, a.trend.caveat())
	case a.trend.ok:
		fmt.Fprintf(&b, "The least-squares trend is %+.3g s per iteration; negative means later acceptable programs are faster. ", a.trend.b/1000)
	default:
		b.WriteString("A trend needs acceptable programs from at least two iterations. ")
	}
	if measured(a.d.Reference.TrainTimeMs) {
		b.WriteString("The dashed grey line is the reference program's time. ")
	}
	if a.metaInside() {
		fmt.Fprintf(&b, "The dotted red line marks iteration %d, where meta-prompting starts.", a.d.Run.MetaPromptFrom)
	}
	b.WriteString(a.metaNote())
	fmt.Fprintf(&b, " The axis spans the run's iterations %d to %d; times are single timings.", a.minIter, a.maxIter)
	return strings.TrimSpace(b.String())
}

// breakdownFigure is the paper's Fig. 3c: per iteration, the share of
// buggy, too-high and acceptable programs among those evaluated.
func (a *analysis) breakdownFigure() *figure {
	f := &figure{Name: "breakdown", Title: "Outcome of programs per iteration"}
	if judged(a.counts) == 0 {
		f.Note = "No program has finished its evaluation yet."
		return f
	}
	p, l := newPlot(f.Title, "iteration", "programs")
	p.X.Tick.Marker = plot.TickerFunc(integerTicks)
	p.Y.Tick.Marker = plot.TickerFunc(integerTicks)
	p.Add(stackedCounts{rows: a.perIter})
	p.Y.Min = 0
	l.Add("acceptable", swatch{colAccept})
	l.Add("loss too high", swatch{colTooHigh})
	l.Add("buggy", swatch{colBuggy})
	if a.metaInside() {
		m := metaLine(a.d.Run.MetaPromptFrom)
		m.style.Color = color.Black
		p.Add(m)
		l.Add("meta-prompting starts", m)
	}
	a.runAxis(p)
	f.plot, f.legend = p, l
	f.Caption = "Each bar is one iteration's judged programs, counted (duplicates, failed proposals and pending children left out): " +
		"buggy (error, timeout, invalid, no result, edit did not apply) at the bottom, then loss too high, then acceptable. " +
		"The shares are in the per-iteration table." + a.metaNote()
	if a.iters == 1 {
		f.Caption += " The run has a single iteration so far."
	}
	return f
}

// frontier is a staircase of the best value after each iteration,
// starting from the reference's (start, 0 when unmeasured) one iteration
// before the first: the search starts from the reference, so its best so
// far is never worse than it.
func (a *analysis) frontier(start float64, best func(iterStats) float64) plotter.XYs {
	if !slices.ContainsFunc(a.perIter, func(it iterStats) bool { return measured(best(it)) }) {
		return nil // no program of the search has one: the figure says so
	}
	var xys plotter.XYs
	if measured(start) && len(a.perIter) > 0 {
		xys = append(xys, plotter.XY{X: float64(a.minIter - 1), Y: start})
	}
	for _, it := range a.perIter {
		y := best(it)
		if measured(start) && (!measured(y) || start < y) {
			y = start
		}
		if measured(y) {
			xys = append(xys, plotter.XY{X: float64(it.iter), Y: y})
		}
	}
	return xys
}

// timeFrontier is the time frontier in seconds.
func (a *analysis) timeFrontier() plotter.XYs {
	var ref float64 // the reference's time counts when it reached the target
	if r := a.d.Reference; !measured(a.d.Run.TargetValLoss) || r.ValLoss <= a.d.Run.TargetValLoss {
		ref = r.TrainTimeMs / 1000
	}
	return a.frontier(ref, func(it iterStats) float64 { return it.bestTimeMs / 1000 })
}

// lossFrontier is the loss frontier.
func (a *analysis) lossFrontier() plotter.XYs {
	return a.frontier(a.d.Reference.ValLoss, func(it iterStats) float64 { return it.bestLoss })
}

// frontierTimeFigure draws the best acceptable time after each iteration.
func (a *analysis) frontierTimeFigure() *figure {
	f := &figure{Name: "frontier_time", Title: "Best acceptable train time so far", width: halfWidth}
	xys := a.timeFrontier()
	if len(xys) == 0 {
		f.Note = "No acceptable program with a train time yet: the time frontier is empty."
		return f
	}
	p, l := newPlot(f.Title, "iteration", "train time (s)")
	p.X.Tick.Marker = plot.TickerFunc(integerTicks)
	if measured(a.d.Reference.TrainTimeMs) {
		r := refLine(a.d.Reference.TrainTimeMs / 1000)
		p.Add(r)
		l.Add("reference", r)
	}
	if err := addStep(p, l, "best so far", xys, modelColors[0]); err != nil {
		f.Note = sentence(err)
		return f
	}
	padY(p, 0.04)
	a.runAxis(p)
	f.plot, f.legend = p, l
	f.Caption = "After each iteration, the fastest acceptable single timing so far, starting from the reference's (the point before the first iteration); dots mark the iterations that lowered it. A lower timing is a candidate record until a claim confirms it."
	return f
}

// frontierLossFigure draws the lowest valid loss after each iteration.
func (a *analysis) frontierLossFigure() *figure {
	f := &figure{Name: "frontier_loss", Title: "Best validation loss so far", width: halfWidth}
	xys := a.lossFrontier()
	if len(xys) == 0 {
		f.Note = "No program ran to a validation loss yet: the loss frontier is empty."
		return f
	}
	p, l := newPlot(f.Title, "iteration", "validation loss")
	p.X.Tick.Marker = plot.TickerFunc(integerTicks)
	if measured(a.d.Run.TargetValLoss) {
		r := refLine(a.d.Run.TargetValLoss)
		r.style.Color = colAccept
		p.Add(r)
		l.Add("target", r)
	}
	if measured(a.d.Reference.ValLoss) {
		r := refLine(a.d.Reference.ValLoss)
		p.Add(r)
		l.Add("reference", r)
	}
	if err := addStep(p, l, "best so far", xys, modelColors[1]); err != nil {
		f.Note = sentence(err)
		return f
	}
	padY(p, 0.04)
	a.runAxis(p)
	f.plot, f.legend = p, l
	f.Caption = "After each iteration, the lowest validation loss of any program that ran correctly, acceptable or not, starting from the reference's."
	return f
}

// addStep adds a staircase through xys: the frontier only changes at
// iterations that improve it.
func addStep(p *plot.Plot, l *plot.Legend, name string, xys plotter.XYs, c color.Color) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("could not plot %s: %w", name, err)
	}
	line.StepStyle = plotter.PostStep
	line.LineStyle = draw.LineStyle{Color: c, Width: 1.6}
	p.Add(line)
	// Mark only the iterations that moved the frontier.
	var moved plotter.XYs
	for i, xy := range xys {
		if i == 0 || xy.Y != xys[i-1].Y {
			moved = append(moved, xy)
		}
	}
	pts, err := plotter.NewScatter(moved)
	if err != nil {
		return fmt.Errorf("could not plot %s: %w", name, err)
	}
	pts.GlyphStyle = draw.GlyphStyle{Color: c, Radius: 2.2, Shape: draw.CircleGlyph{}}
	p.Add(pts)
	l.Add(name, line)
	return nil
}

// curveFigure draws the best program's training loss against train time,
// with the reference's when known, and its validation passes; who names
// the program in the legend ("best").
func (a *analysis) curveFigure(who string) *figure {
	f := &figure{Name: "best_curve", Title: "Best program: loss against train time"}
	b := a.d.Best
	if b == nil {
		f.Note = "There is no best program, so there is no loss curve."
		return f
	}
	best := curveXYs(b.Curve)
	ref := curveXYs(b.ReferenceCurve)
	var vals plotter.XYs
	for _, v := range b.Vals {
		if !measured(v.ValLoss) {
			continue
		}
		if t, ok := valTime(b, v); ok {
			vals = append(vals, plotter.XY{X: t / 1000, Y: v.ValLoss})
		}
	}
	if len(best) == 0 && len(vals) == 0 {
		f.Note = "The best program's telemetry has no training loss at its designated steps."
		return f
	}
	p, l := newPlot(f.Title, "train time (s)", "loss")
	if measured(a.d.Run.TargetValLoss) {
		r := refLine(a.d.Run.TargetValLoss)
		r.style.Color = colAccept
		p.Add(r)
		l.Add("target val loss", r)
	}
	if len(ref) > 0 {
		line, err := plotter.NewLine(ref)
		if err == nil {
			line.LineStyle = draw.LineStyle{Color: colRef, Width: 1.2, Dashes: []vg.Length{4, 2}}
			p.Add(line)
			l.Add("reference train loss", line)
		}
	}
	if len(best) > 0 {
		line, err := plotter.NewLine(best)
		if err == nil {
			line.LineStyle = draw.LineStyle{Color: modelColors[0], Width: 1.6}
			p.Add(line)
			l.Add(who+" train loss", line)
		}
	}
	if len(vals) > 0 {
		s, err := plotter.NewScatter(vals)
		if err == nil {
			s.GlyphStyle = draw.GlyphStyle{Color: modelColors[1], Radius: 3, Shape: draw.BoxGlyph{}}
			p.Add(s)
			l.Add(who+" val loss", s)
		}
	}
	padY(p, 0.04)
	f.plot, f.legend = p, l
	f.Caption = "Training loss at the designated steps (the program's own loss, for orientation); " +
		"squares are the environment's validation passes, which decide the verdict."
	return f
}

// curveXYs keeps the steps with a measured time and training loss.
func curveXYs(steps []harness.Step) plotter.XYs {
	var xys plotter.XYs
	for _, s := range steps {
		if s.TrainLoss == nil || !measured(*s.TrainLoss) || !finite(s.TrainTimeMs) || s.TrainTimeMs < 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: s.TrainTimeMs / 1000, Y: *s.TrainLoss})
	}
	slices.SortStableFunc(xys, func(p, q plotter.XY) int {
		switch {
		case p.X < q.X:
			return -1
		case p.X > q.X:
			return 1
		}
		return 0
	})
	return xys
}

// valTime places a validation pass on the train-time axis: the final one
// at the program's train time, others at the time recorded for their
// step, interpolated between designated steps or extrapolated past the
// last one with its step average.
func valTime(b *Best, v harness.Val) (float64, bool) {
	if v.Final && measured(b.Program.TrainTimeMs) {
		return b.Program.TrainTimeMs, true
	}
	var lo, hi *harness.Step
	for i := range b.Curve {
		s := &b.Curve[i]
		if !finite(s.TrainTimeMs) || s.TrainTimeMs < 0 {
			continue
		}
		if s.Step == v.Step {
			return s.TrainTimeMs, true
		}
		if s.Step < v.Step && (lo == nil || s.Step > lo.Step) {
			lo = s
		}
		if s.Step > v.Step && (hi == nil || s.Step < hi.Step) {
			hi = s
		}
	}
	switch {
	case lo != nil && hi != nil:
		frac := float64(v.Step-lo.Step) / float64(hi.Step-lo.Step)
		return lo.TrainTimeMs + frac*(hi.TrainTimeMs-lo.TrainTimeMs), true
	case lo != nil && measured(lo.StepAvgMs):
		return lo.TrainTimeMs + float64(v.Step-lo.Step)*lo.StepAvgMs, true
	}
	return 0, false
}

// sentence turns an error into a sentence for a note.
func sentence(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
