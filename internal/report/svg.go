package report

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one of the report's charts as SVG, for pages that show a run
// elsewhere than in the static report (the dashboard): the same charts,
// drawn by the same code from the same data.
type Figure struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Caption string `json:"caption,omitempty"`
	// Note says why there is no chart; SVG is empty then.
	Note string `json:"note,omitempty"`
	SVG  []byte `json:"-"`
}

// Figures draws the report's figures of d: train time against iteration
// with its trend and the start of meta-prompting, the outcomes per
// iteration, the frontier of time and of loss over iterations, and the
// best program's loss curve.
func Figures(d *Data) []Figure {
	if d == nil {
		return nil
	}
	if err := check(d); err != nil {
		return []Figure{{Name: "data", Title: "Figures", Note: sentence(err)}}
	}
	return svgs(analyze(d).figures())
}

// ProgramCurve draws one program's loss against train time, with the
// reference's curve when b holds it, against the track's target.
func ProgramCurve(target float64, b *Best) Figure {
	a := &analysis{d: &Data{Run: Run{TargetValLoss: target}, Best: b}}
	f := a.curveFigure("this program")
	f.Name, f.Title = "curve", "Loss against train time"
	return svgs([]*figure{f})[0]
}

func svgs(figs []*figure) []Figure {
	out := make([]Figure, 0, len(figs))
	for _, f := range figs {
		x := Figure{Name: f.Name, Title: f.Title, Caption: f.Caption, Note: f.Note}
		if f.Drawn() {
			svg, err := f.renderSVG()
			if err != nil {
				x.Note, x.Caption = fmt.Sprintf("The figure could not be drawn (%v).", err), ""
			}
			x.SVG = svg
		}
		out = append(out, x)
	}
	return out
}

// renderSVG draws f to SVG without its fonts: a page shows it with the
// browser's own sans-serif, and stays small.
func (f *figure) renderSVG() (svg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("draw figure %s: %v", f.Name, r)
		}
	}()
	w := f.width
	if w == 0 {
		w = figWidth
	}
	sc := vgsvg.NewWith(vgsvg.UseWH(w, figHeight))
	f.draw(draw.New(sc))
	var b bytes.Buffer
	if _, err := sc.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("write figure %s.svg: %w", f.Name, err)
	}
	return b.Bytes(), nil
}

// Iteration is one iteration of a run as the report's figures draw it:
// its programs by category, and the frontier after it (the fastest
// acceptable time and the lowest valid loss so far; 0 when none).
type Iteration struct {
	Iteration  int            `json:"iteration"`
	Counts     map[string]int `json:"counts"`
	BestTimeMs float64        `json:"best_time_ms,omitempty"`
	BestLoss   float64        `json:"best_loss,omitempty"`
}

// Iterations are d's iterations, first to last, empty ones included: the
// figures' outcomes per iteration and frontier over time, as numbers.
func Iterations(d *Data) []Iteration {
	if d == nil || check(d) != nil {
		return nil
	}
	a := analyze(d)
	out := make([]Iteration, len(a.perIter))
	for i, it := range a.perIter {
		out[i] = Iteration{Iteration: it.iter, Counts: map[string]int{}, BestTimeMs: it.bestTimeMs, BestLoss: it.bestLoss}
		for c, n := range it.counts {
			if n > 0 {
				out[i].Counts[string(c)] = n
			}
		}
	}
	return out
}
