package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/frontier-bench/frontier/internal/runs"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

var figureNames = []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss", "best_curve"}

func TestWriteSynthetic(t *testing.T) {
	d := synthetic()
	dir := t.TempDir()
	index, err := Write(context.Background(), dir, d)
	if err != nil {
		t.Fatal(err)
	}
	if index != filepath.Join(dir, "index.html") {
		t.Errorf("index = %q", index)
	}
	page := readFile(t, index)
	checkHTML(t, page)
	text := html.UnescapeString(page)

	// The numbers the page must show, computed here from the data rather
	// than through the package's own analysis.
	var fastest *Program
	acc, evaluated := 0, 0
	for i := range d.Programs {
		p := &d.Programs[i]
		if p.Duplicate {
			continue
		}
		if p.Verdict != "" {
			evaluated++
		}
		if p.Verdict == "acceptable" {
			acc++
			if fastest == nil || p.TrainTimeMs < fastest.TrainTimeMs {
				fastest = p
			}
		}
	}
	wantTime := fmt.Sprintf("%.2f", fastest.TrainTimeMs/1000)
	wantSpeedup := fmt.Sprintf("%+.1f%%", 100*(d.Reference.TrainTimeMs-fastest.TrainTimeMs)/d.Reference.TrainTimeMs)
	for _, want := range []string{
		"Run o3-long on track nanogpt-124m",
		fmt.Sprintf("The fastest single timing, #%d", fastest.ID), "is not a record",
		wantTime, wantSpeedup, "176.70", "3.2797",
		fmt.Sprintf("<dt>Acceptable</dt><dd>%d (", acc),
		fmt.Sprintf("<dt>Judged</dt><dd>%d", evaluated),
		"<dt>Programs</dt><dd>300</dd>",
		"from iteration 20",
		"claude-sonnet-4", "gpt-5",
		"before meta-prompting", "with meta-prompting",
		`<span class="dd">-                g = p.grad.float()</span>`,
		`<span class="da">+                g = p.grad.bfloat16()</span>`,
		"Top CUDA kernels (profiled steps 10–14)",
		"grad_clip", // a section only the reference has
		`href="best.py"`, `href="programs.csv"`,
		`src="figures/time_vs_iteration.svg"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, bad := range []string{"NaN", "Inf", "<script", "%!"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}

	for _, name := range figureNames {
		checkSVG(t, filepath.Join(dir, "figures", name+".svg"))
		checkPNG(t, filepath.Join(dir, "figures", name+".png"))
	}

	if got := readFile(t, filepath.Join(dir, "best.py")); got != d.Best.Source {
		t.Errorf("best.py differs from the best source")
	}
	diff := readFile(t, filepath.Join(dir, "best.diff"))
	for _, want := range []string{"--- reference.py", "+++ best.py", "-                g = p.grad.float()", "+                g = p.grad.bfloat16()"} {
		if !strings.Contains(diff, want) {
			t.Errorf("best.diff lacks %q:\n%s", want, diff)
		}
	}

	rows := readCSV(t, filepath.Join(dir, "programs.csv"))
	if len(rows) != len(d.Programs)+1 {
		t.Fatalf("programs.csv has %d rows, want %d and a header", len(rows), len(d.Programs))
	}
	if strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Errorf("header = %v", rows[0])
	}
	// Rows are in iteration order, and a buggy program has empty metrics.
	prev := -1
	sawBuggy := false
	for _, r := range rows[1:] {
		it := atoi(t, r[2])
		if it < prev {
			t.Fatalf("rows out of iteration order: %d after %d", it, prev)
		}
		prev = it
		if r[8] == "buggy" {
			sawBuggy = true
			if r[10] != "" || r[11] != "" {
				t.Errorf("buggy row has metrics: %v", r)
			}
		}
	}
	if !sawBuggy {
		t.Error("no buggy row in programs.csv")
	}
}

func TestWriteEdgeCases(t *testing.T) {
	base := func() *Data {
		return &Data{
			Run:       Run{ID: "edge", Track: "tiny", TargetValLoss: 4.0, MetaPromptFrom: -1, Models: []string{"m1"}},
			Reference: Point{ValLoss: 3.95, TrainTimeMs: 20_000, StepAvgMs: 50},
		}
	}
	prog := func(id int64, iter int, verdict string, loss, ms float64) Program {
		return Program{ID: id, Hash: fmt.Sprintf("h%d", id), Iteration: iter, Model: "m1", Stage: StageTemplate,
			Verdict: verdict, ValLoss: loss, TrainTimeMs: ms, CostUSD: 0.01, InputTokens: 100, OutputTokens: 50}
	}
	nan, inf := math.NaN(), math.Inf(1)

	cases := []struct {
		name    string
		data    func() *Data
		want    []string // substrings of index.html's text
		wantRaw []string // substrings of its markup
		figures []string // figures that must be drawn; the others must not exist
	}{
		{
			name: "no programs",
			data: base,
			want: []string{"The run has no programs yet.", "No program has finished its evaluation yet.",
				"No acceptable program yet: only the reference is listed.", "There is no best program yet"},
		},
		{
			name: "pending only",
			data: func() *Data {
				d := base()
				d.Programs = []Program{prog(1, 0, "", 0, 0), prog(2, 0, "running", 0, 0)}
				return d
			},
			want: []string{"None of the 2 programs has finished its evaluation yet.", "<dt>Pending</dt><dd>2</dd>"},
		},
		{
			name: "all buggy",
			data: func() *Data {
				d := base()
				for i := range 6 {
					d.Programs = append(d.Programs, prog(int64(i+1), i/3, []string{"error", "timeout", "invalid", "no_result"}[i%4], 0, 0))
				}
				return d
			},
			want: []string{"All 6 programs evaluated so far are buggy", "No program reached the target loss, so there is no acceptable train time to plot.",
				"No program ran to a validation loss yet"},
			figures: []string{"breakdown"},
		},
		{
			name: "no acceptable",
			data: func() *Data {
				d := base()
				d.Programs = []Program{prog(1, 0, "loss_too_high", 4.2, 19_000), prog(2, 1, "loss_too_high", 4.1, 18_000), prog(3, 1, "error", 0, 0)}
				return d
			},
			want: []string{"No program reached the target validation loss 4.0000; the lowest is 4.1000 (#2, iteration 1).",
				"No acceptable program yet."},
			figures: []string{"breakdown", "frontier_loss"},
		},
		{
			name: "single iteration",
			data: func() *Data {
				d := base()
				d.Programs = []Program{prog(1, 0, "acceptable", 3.9, 19_000), prog(2, 0, "acceptable", 3.98, 19_500), prog(3, 0, "error", 0, 0)}
				return d
			},
			want: []string{"A trend needs acceptable programs from at least two iterations.", "The run has a single iteration so far.",
				"at 19.00 s (+5.0%)", "it was never confirmed"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "zero cost mutate baseline",
			data: func() *Data {
				d := base()
				d.Run.Models = []string{"mutate"}
				for i := range 4 {
					p := prog(int64(i+1), i, "acceptable", 3.9, 19_000-float64(i)*100)
					p.Model, p.Stage, p.CostUSD, p.InputTokens, p.OutputTokens = "mutate", StageMutate, 0, 0, 0
					d.Programs = append(d.Programs, p)
				}
				return d
			},
			want:    []string{"<dt>Cost</dt><dd>$0</dd>", `<td class="num">$0</td><td class="num">$0</td>`, "mutate"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "NaN and missing values",
			data: func() *Data {
				d := base()
				d.Reference = Point{ValLoss: nan, TrainTimeMs: 0}
				d.Run.TargetValLoss = inf
				a := prog(1, 0, "acceptable", nan, nan)
				a.CostUSD, a.Score, a.StepAvgMs = nan, inf, -1
				b := prog(2, 1, "acceptable", 3.9, inf)
				c := prog(3, 1, "acceptable", 3.8, 18_000)
				c.CostUSD = inf
				d.Programs = []Program{a, b, c}
				d.Best = &Best{Program: c, Source: "print(1)\n"}
				return d
			},
			want: []string{"The reference program's train time was not measured in this run",
				"The run has no target validation loss recorded.", "2 acceptable programs lack a train time",
				"The reference program's source is not in the data, so there is no diff."},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "best without telemetry",
			data: func() *Data {
				d := base()
				p := prog(1, 0, "acceptable", 3.9, 19_000)
				d.Programs = []Program{p}
				d.Best = &Best{Program: p, Source: "x = 1\n", ReferenceSource: "x = 1\n"}
				return d
			},
			want: []string{"The best program is identical to the reference.", "No section profile was recorded for the best program.",
				"No step metrics were recorded for the best program.", "no training loss at its designated steps"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "escaping",
			data: func() *Data {
				d := base()
				d.Run.Name = `"><script>alert(1)</script>`
				d.Run.Models = []string{"<img src=x onerror=alert(2)>"}
				p := prog(1, 0, "error", 0, 0)
				p.Model = "<img src=x onerror=alert(2)>"
				p.Reason = "</td></tr></table><script>alert(3)</script> & more"
				q := prog(2, 1, "acceptable", 3.9, 19_000)
				d.Programs = []Program{p, q}
				d.Best = &Best{Program: q, Source: "s = '</pre><script>x</script>'\n", ReferenceSource: "s = 1\n"}
				return d
			},
			wantRaw: []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;",
				"&#43;s = &#39;&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;&#39;"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "confirmed record, rejected claim, resumed",
			data: func() *Data {
				d := base()
				d.Run.Sessions = 3
				d.Programs = []Program{prog(1, 0, "acceptable", 3.9, 15_000), prog(2, 1, "acceptable", 3.95, 17_000)}
				sp, lo, hi, p := 0.12, 0.08, 0.16, 0.002
				bad, badP := 0.1, 0.4
				d.Claims = []Claim{
					{ID: 1, ChildID: 1, BaselineID: 9, Method: "series", State: "rejected", Pairs: 5, SingleMs: 15_000, TimeMs: 19_800,
						BaselineMs: 20_000, Speedup: &bad, TimeP: &badP, Reason: "the time is not significantly under the baseline's"},
					{ID: 2, ChildID: 2, BaselineID: 9, Method: "series", State: "confirmed", Pairs: 5, SingleMs: 17_000, TimeMs: 17_600,
						BaselineMs: 20_000, Speedup: &sp, SpeedupLo: &lo, SpeedupHi: &hi, TimeP: &p, Evidence: "confirmed in alternation, n = 5 each: +12.0%"},
				}
				d.Record = &Record{ID: 2, TrainTimeMs: 17_600, Evidence: "confirmed in alternation, n = 5 each: +12.0%"}
				return d
			},
			want: []string{"Record: #2 trains in 17.60 s, speedup +12.0% over the reference's 20.00 s (confirmed in alternation, n = 5 each: +12.0%).",
				"Claims to be a record", "the time is not significantly under the baseline's", "+8.0% to +16.0%",
				"confirmed, n = 5", "3: stopped or killed and resumed 2 times"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "engine verdicts",
			data: func() *Data {
				d := base()
				d.Programs = []Program{prog(1, 1, "apply_failed", 0, 0), prog(2, 1, "no_proposal", 0, 0),
					prog(3, 2, "duplicate", 0, 0), prog(4, 2, "acceptable", 3.9, 19_000), prog(5, 2, "loss_too_high", 4.1, 18_000)}
				return d
			},
			want: []string{"<dt>Judged</dt><dd>3 (2 ran; 1 edit never applied)</dd>", "<dt>Buggy</dt><dd>1 (33.3%)</dd>", "<dt>No proposal</dt><dd>1</dd>",
				"<dt>Duplicates</dt><dd>1</dd>", "<dt>Acceptable</dt><dd>1 (33.3%)</dd>"},
			figures: []string{"time_vs_iteration", "breakdown", "frontier_time", "frontier_loss"},
		},
		{
			name: "best not acceptable",
			data: func() *Data {
				d := base()
				p := prog(1, 0, "loss_too_high", 4.2, 19_000)
				d.Programs = []Program{p}
				d.Best = &Best{Program: p, Source: "x\n"}
				return d
			},
			want:    []string{"The best program shown below (#1) is not acceptable (verdict \"loss_too_high\")."},
			figures: []string{"breakdown", "frontier_loss"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.data()
			dir := t.TempDir()
			index, err := Write(context.Background(), dir, d)
			if err != nil {
				t.Fatal(err)
			}
			page := readFile(t, index)
			checkHTML(t, page)
			text := html.UnescapeString(page)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("index.html lacks %q", w)
				}
			}
			for _, w := range tc.wantRaw {
				if !strings.Contains(page, w) {
					t.Errorf("index.html lacks %q", w)
				}
			}
			for _, bad := range []string{"NaN", "Inf", "<script", "<img src=x", "%!"} {
				if strings.Contains(page, bad) {
					t.Errorf("index.html contains %q", bad)
				}
			}
			drawn := map[string]bool{}
			for _, f := range tc.figures {
				drawn[f] = true
			}
			for _, name := range figureNames {
				svg := filepath.Join(dir, "figures", name+".svg")
				_, err := os.Stat(svg)
				switch {
				case drawn[name] && err != nil:
					t.Errorf("figure %s not drawn: %v", name, err)
				case drawn[name]:
					checkSVG(t, svg)
					checkPNG(t, filepath.Join(dir, "figures", name+".png"))
					if !strings.Contains(page, `src="figures/`+name+`.svg"`) {
						t.Errorf("index.html does not show figure %s", name)
					}
				case err == nil:
					t.Errorf("figure %s drawn, want a note instead", name)
				}
			}
			rows := readCSV(t, filepath.Join(dir, "programs.csv"))
			if len(rows) != len(d.Programs)+1 {
				t.Errorf("programs.csv has %d rows, want %d", len(rows), len(d.Programs)+1)
			}
			for _, r := range rows {
				for _, c := range r {
					if strings.Contains(c, "NaN") || strings.Contains(c, "Inf") {
						t.Errorf("programs.csv cell %q", c)
					}
				}
			}
			_, err = os.Stat(filepath.Join(dir, "best.py"))
			if (d.Best != nil) != (err == nil) {
				t.Errorf("best.py exists = %v, best = %v", err == nil, d.Best != nil)
			}
		})
	}
}

// A second report into the same folder must not keep the first one's
// figures or best program.
func TestWriteRemovesStale(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(context.Background(), dir, synthetic()); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := synthetic()
	d.Best = nil
	for i := range d.Programs {
		if d.Programs[i].Verdict == "acceptable" {
			d.Programs[i].Verdict = "error"
		}
	}
	if _, err := Write(context.Background(), dir, d); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"best.py", "best.diff", "figures/time_vs_iteration.svg", "figures/time_vs_iteration.png", "figures/best_curve.svg"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: stat error %v, want it removed", gone, err)
		}
	}
	for _, kept := range []string{"notes.txt", "figures/breakdown.svg", "index.html"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Write(ctx, t.TempDir(), nil); err == nil {
		t.Error("nil data: no error")
	}
	if _, err := Write(ctx, "", synthetic()); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("empty dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, filepath.Join(file, "sub"), synthetic()); err == nil {
		t.Error("folder under a file: no error")
	}
	d := synthetic()
	d.Programs[0].Iteration = 1 << 30
	if _, err := Write(ctx, t.TempDir(), d); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("huge iteration span: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Write(cctx, t.TempDir(), synthetic()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// checkHTML parses page with the HTML5 parser and also checks that the
// markup is well formed: every element the template opens it closes, in
// order. html.Parse alone accepts any input, so it cannot fail a test.
func checkHTML(t *testing.T, page string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("parse index.html: %v", err)
	}
	ids := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "id" {
				ids[a.Val] = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, id := range []string{"top", "time", "breakdown", "frontier", "models", "best", "programs"} {
		if !ids[id] {
			t.Errorf("index.html has no section #%s", id)
		}
	}

	void := map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
		"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenize index.html: %v", z.Err())
			}
			if len(stack) != 0 {
				t.Fatalf("index.html leaves elements open: %v", stack)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !void[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("index.html closes </%s> but the open elements are %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
	}
	if !bytes.Contains(b, []byte("@font-face")) {
		t.Errorf("%s does not embed its font", path)
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
		t.Errorf("%s is %dx%d, too small for 192 dpi", path, b.Dx(), b.Dy())
	}
	if n := distinctColors(img, 3); n < 3 {
		t.Errorf("%s has %d colours: blank", path, n)
	}
}

// distinctColors counts the colours of img, sampling every step pixels.
func distinctColors(img image.Image, step int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += step {
		for x := b.Min.X; x < b.Max.X; x += step {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
		}
	}
	return len(seen)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// Rendering time of the synthetic 300-program report (figures dominate).
func BenchmarkWrite(b *testing.B) {
	d := synthetic()
	dir := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		if _, err := Write(ctx, dir, d); err != nil {
			b.Fatal(err)
		}
	}
}

// The top table says what else ran while each program was timed.
func TestLoadCell(t *testing.T) {
	c := &runs.Conditions{LoadAvg: []float64{3.5, 2, 1}, CPU: &runs.CPUUse{WallMs: 2000, OthersMs: 1500, CPUs: 2}}
	if got := loadCell(c).Text; got != "others 0.75 of 2 CPUs, load 3.50" {
		t.Errorf("loadCell = %q", got)
	}
	if got := loadCell(&runs.Conditions{LoadAvg: []float64{1, 1, 1}}).Text; got != "load 1.00" {
		t.Errorf("load only: %q", got)
	}
	if got := loadCell(nil).Text; got != dash {
		t.Errorf("unknown: %q, want %q", got, dash)
	}
}
