// Package benchreport writes the bench runs' scores (runview.BenchReport)
// as a report: an HTML page with figures (FSR by hint setting, by
// scaffold, per task), CSV files and JSON. The dashboard draws the same
// figures with Figures.
package benchreport

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/runview"
)

// bar is one value of a grouped bar chart.
type bar struct {
	category, series string
	v                fsr.Interval
}

// Figure is an SVG chart with its title.
type Figure struct {
	Title string
	SVG   string
}

// palette is colour-blind friendly (Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// Figures are the report's charts: FSR by hint setting, by scaffold, and
// per task.
func Figures(r *runview.BenchReport) []Figure {
	// A series names everything of its configuration but the category,
	// so that no two configurations share a bar (one would hide the
	// other).
	var byHint, byScaffold, perTask []bar
	for _, c := range r.Configs {
		byHint = append(byHint, bar{c.Hints, label(r, c.BenchKey, "hints"), c.Mean})
		byScaffold = append(byScaffold, bar{c.Scaffold, label(r, c.BenchKey, "scaffold"), c.Mean})
	}
	for _, t := range r.Tasks {
		perTask = append(perTask, bar{t.Task, label(r, t.BenchKey, ""), t.FSR})
	}
	var out []Figure
	for _, f := range []struct {
		title string
		bars  []bar
	}{
		{"Mean FSR over tasks, by hint setting", byHint},
		{"Mean FSR over tasks, by scaffold", byScaffold},
		{"FSR per task (mean over seeds)", perTask},
	} {
		if len(f.bars) > 0 {
			out = append(out, Figure{Title: f.title, SVG: barChart(f.bars)})
		}
	}
	return out
}

// label names configuration k for a legend, leaving out omit ("hints",
// "scaffold" or ""); the suite's version is named when the report holds
// several versions of the suite.
func label(r *runview.BenchReport, k runview.BenchKey, omit string) string {
	var parts []string
	if omit != "scaffold" {
		parts = append(parts, k.Scaffold)
	}
	parts = append(parts, k.Model)
	if omit != "hints" {
		parts = append(parts, "hints "+k.Hints)
	}
	parts = append(parts, fmt.Sprintf("%d nodes", k.Nodes), k.Mode)
	suite := k.Suite
	for _, c := range r.Configs {
		if c.Suite == k.Suite && c.SuiteHash != k.SuiteHash {
			suite += "@" + k.SuiteHash[:min(8, len(k.SuiteHash))]
			break
		}
	}
	return strings.Join(append(parts, suite), " / ")
}

// barChart draws grouped bars with their intervals as whiskers, categories
// along x in the order they first appear, one colour per series.
func barChart(bars []bar) string {
	var cats, series []string
	for _, b := range bars {
		if !slices.Contains(cats, b.category) {
			cats = append(cats, b.category)
		}
		if !slices.Contains(series, b.series) {
			series = append(series, b.series)
		}
	}
	top := 1.0
	for _, b := range bars {
		top = math.Max(top, b.v.Hi)
	}
	top = math.Ceil(top*4) / 4
	const (
		left, right, plotTop, plotH = 48.0, 16.0, 12.0, 220.0
		barW, gap                   = 16.0, 18.0
	)
	groupW := barW*float64(len(series)) + gap
	w := left + right + groupW*float64(len(cats))
	w = math.Max(w, 360)
	legendH := 18.0 * float64(len(series))
	h := plotTop + plotH + 46 + legendH
	y := func(v float64) float64 { return plotTop + plotH*(1-v/top) }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`, w, h)
	for t := 0.0; t <= top+1e-9; t += 0.25 {
		fmt.Fprintf(&s, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%.2f</text>`,
			left, w-right, y(t), y(t), left-4, y(t)+4, t)
	}
	fmt.Fprintf(&s, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#333"/>`, left, w-right, y(0), y(0))
	fmt.Fprintf(&s, `<text x="12" y="%.0f" transform="rotate(-90 12 %.0f)" text-anchor="middle">FSR</text>`, plotTop+plotH/2, plotTop+plotH/2)
	for i, c := range cats {
		x0 := left + gap/2 + groupW*float64(i)
		for j, se := range series {
			k := slices.IndexFunc(bars, func(b bar) bool { return b.category == c && b.series == se })
			if k < 0 {
				continue
			}
			v := bars[k].v
			x := x0 + barW*float64(j)
			fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %.3f [%.3f, %.3f], n=%d</title></rect>`,
				x, y(math.Max(v.Value, 0)), barW-2, math.Max(y(0)-y(math.Max(v.Value, 0)), 0.5), palette[j%len(palette)],
				html.EscapeString(c), html.EscapeString(se), v.Value, v.Lo, v.Hi, v.N)
			if v.Hi > v.Lo {
				cx := x + (barW-2)/2
				fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`, cx, cx, y(v.Lo), y(v.Hi))
			}
		}
		fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, x0+barW*float64(len(series))/2, y(0)+16, html.EscapeString(c))
	}
	for j, se := range series {
		ly := plotTop + plotH + 40 + 18*float64(j)
		fmt.Fprintf(&s, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`,
			left, ly-9, palette[j%len(palette)], left+16, ly, html.EscapeString(se))
	}
	s.WriteString(`</svg>`)
	return s.String()
}
