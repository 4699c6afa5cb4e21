package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// funcs format values for the pages. Every text goes through
// html/template, which escapes it: names, programs, prompts and answers
// are shown as text, never read as markup.
var funcs = template.FuncMap{
	"secs": secs,
	"ms":   func(x float64) string { return orDash(x > 0, strconv.FormatFloat(x, 'f', 1, 64)+" ms") },
	"loss": func(x float64) string { return orDash(runs.Measured(x), strconv.FormatFloat(x, 'f', 4, 64)) },
	"num": func(x float64) string {
		return orDash(!math.IsNaN(x) && !math.IsInf(x, 0), strconv.FormatFloat(x, 'g', 4, 64))
	},
	"usd":     usd,
	"pct":     func(x float64) string { return strconv.FormatFloat(100*x, 'f', 0, 64) + "%" },
	"speedup": func(x float64) string { return runs.FormatSpeedup(x) },
	"speedupp": func(x *float64) string {
		if x == nil {
			return "-"
		}
		return runs.FormatSpeedup(*x)
	},
	"pval":  pval,
	"pvalp": func(p *float64) string { return pval(derefNaN(p)) },
	"count": count,
	"ago":   ago,
	"stamp": stamp,
	"dur":   func(ms int64) string { return (time.Duration(ms) * time.Millisecond).Round(time.Second).String() },
	"short": func(h string) string { return h[:min(len(h), 12)] },
	"class": func(c *store.Child) string { return string(runview.ClassOf(c)) },
	"clip":  clip,
	"gauge": gaugeText,
	"width": func(used, limit float64) string {
		return strconv.FormatFloat(min(100, 100*used/max(limit, 1e-12)), 'f', 1, 64) + "%"
	},
	"over":     func(used, limit float64) bool { return used >= limit },
	"diffcls":  report.DiffClass,
	"lines":    func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") },
	"add":      func(a, b int) int { return a + b },
	"deref":    derefNaN,
	"finite":   func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) },
	"phases":   phases,
	"accepted": func(t runs.Tally) int { return t.Classes[runs.ClassAcceptable] },
	"groups": func(s *runview.Summary) map[string][]runview.GroupStats {
		return map[string][]runview.GroupStats{"model": s.PerModel, "stage": s.PerStage}
	},
	"sorts": func() []string { return runview.MemberSorts },
	"vsref": vsRef,
	"pair":  func(a, b *runview.ProgramView) []*runview.ProgramView { return []*runview.ProgramView{a, b} },
}

// phases are a result's phases that ran, by name.
func phases(r *eval.Result) map[string]*eval.Phase {
	out := map[string]*eval.Phase{}
	if r == nil {
		return out
	}
	if r.Fast != nil {
		out["fast check"] = r.Fast
	}
	if r.Full != nil {
		out["full run"] = r.Full
	}
	return out
}

// vsRef is c's speedup over the reference, both single timings of the
// search, as runs show writes it.
func vsRef(ref, c *store.Child) string {
	if !runs.Measured(ref.TrainTimeMs) || !runs.Measured(c.TrainTimeMs) {
		return "-"
	}
	return runs.FormatSpeedup(runs.Speedup(ref.TrainTimeMs, c.TrainTimeMs))
}

func orDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

// secs writes a time in seconds as the CLI does.
func secs(ms float64) string {
	if !runs.Measured(ms) {
		return "-"
	}
	switch {
	case ms < 10_000:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	case ms < 1_000_000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}

func usd(x float64) string {
	if x != 0 && math.Abs(x) < 0.01 {
		return "$" + strconv.FormatFloat(x, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(x, 'f', 2, 64)
}

func pval(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "-"
	}
	return "p=" + strconv.FormatFloat(p, 'g', 2, 64)
}

func derefNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// count writes a whole number with thousands separated: 10 000.
func count(n any) string {
	var s string
	switch v := n.(type) {
	case int:
		s = strconv.Itoa(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(n)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u202f')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// ago says how long before now t was, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

func clip(n int, s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// gaugeText says how much of a limit is spent, in its unit.
func gaugeText(g runview.BudgetGauge) string {
	switch g.Name {
	case "usd":
		return usd(g.Used) + " of " + usd(g.Limit)
	case "duration_ms":
		return fmt.Sprintf("%s of %s", (time.Duration(g.Used) * time.Millisecond).Round(time.Second), (time.Duration(g.Limit) * time.Millisecond).Round(time.Second))
	}
	return count(int64(g.Used)) + " of " + count(int64(g.Limit))
}
