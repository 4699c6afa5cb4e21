package propose

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

func readProgram(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFindParams(t *testing.T) {
	params, err := findParams(readProgram(t, "speedrun.py"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range params {
		got = append(got, fmt.Sprintf("%s=%s/%s", p.label(), p.lit, categoryNames[p.cat]))
	}
	want := []string{
		"LR=3e-3/learning rate", "BATCH_SIZE=32/batch size", "GRAD_CLIP=1.0/gradient clip",
		"train_seq_len=48*1024/sequence length", "num_iterations=1750/total steps",
		"cooldown_frac=0.4/fraction", "lr=0.0036/learning rate", "dropout=0.0/dropout",
		"num_layers=12/layers", "num_heads=6/heads", "model_dim=768/width",
		"lr=0.6/learning rate", "betas[0]=0.8/beta", "betas[1]=0.95/beta", "eps=1e-10/eps",
		"lr=0.05/learning rate", "momentum=0.95/beta",
		"lr=0.008/learning rate", "betas[0]=0.9/beta", "betas[1]=0.99/beta", "weight_decay=0.1/weight decay",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("params:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMutateDeterministic(t *testing.T) {
	parent := Program{Name: "speedrun.py", Source: readProgram(t, "speedrun.py")}
	m := NewMutate()
	seen := map[string]bool{}
	for seed := range uint64(20) {
		a, err := m.Propose(context.Background(), Request{Parent: parent, Seed: seed})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b, err := m.Propose(context.Background(), Request{Parent: parent, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if a.Answer != b.Answer || string(a.Child()) != string(b.Child()) {
			t.Fatalf("seed %d gave two different proposals:\n%s\n---\n%s", seed, a.Answer, b.Answer)
		}
		seen[a.Description] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 seeds gave only %d distinct proposals", len(seen))
	}
}

// TestMutateInvariants checks, over many seeds, that every proposal
// applies exactly, leaves protected regions alone, changes between one
// and MaxChanges hyperparameters, and keeps each within its type and range.
func TestMutateInvariants(t *testing.T) {
	src := readProgram(t, "speedrun.py")
	parent := Program{Name: "speedrun.py", Source: src}
	before, err := findParams(src)
	if err != nil {
		t.Fatal(err)
	}
	m := &Mutate{MaxChanges: 3}
	changedCats := map[category]int{}
	for seed := range uint64(300) {
		p, err := m.Propose(context.Background(), Request{Parent: parent, Seed: seed})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if p.Kind != KindMutate || p.Response != nil || !strings.HasPrefix(p.Description, "mutate: ") {
			t.Fatalf("seed %d: proposal = %+v", seed, p)
		}
		for _, mt := range p.Result.Matches {
			if mt.Method != edit.MatchExact {
				t.Fatalf("seed %d: block %d matched %s, want exact", seed, mt.Block, mt.Method)
			}
		}
		if err := edit.CheckProtected(src, p.Child()); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		after, err := findParams(p.Child())
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("seed %d: %d params after, %d before:\n%s", seed, len(after), len(before), p.Answer)
		}
		changed := 0
		var width, heads float64
		for i := range before {
			b, a := before[i], after[i]
			if a.cat != b.cat || a.label() != b.label() {
				t.Fatalf("seed %d: param %d is %s after, %s before", seed, i, a.label(), b.label())
			}
			switch a.cat {
			case catWidth:
				width = a.value
			case catHeads:
				heads = a.value
			}
			if a.lit == b.lit {
				continue
			}
			changed++
			changedCats[a.cat]++
			if msg := checkChange(b, a); msg != "" {
				t.Errorf("seed %d: %s %s -> %s: %s", seed, b.label(), b.lit, a.lit, msg)
			}
		}
		if changed < 1 || changed > 3 {
			t.Errorf("seed %d: %d hyperparameters changed, want 1 to 3:\n%s", seed, changed, p.Answer)
		}
		if !fitsHeads(int64(width), int64(heads)) {
			t.Errorf("seed %d: %v heads do not divide width %v into even head sizes", seed, heads, width)
		}
	}
	for _, c := range []category{catLR, catBeta, catEps, catWeightDecay, catFraction, catClip, catTotalSteps, catBatch, catSeqLen, catWidth, catHeads, catLayers} {
		if changedCats[c] == 0 {
			t.Errorf("300 seeds never changed a %s", categoryNames[c])
		}
	}
}

// checkChange returns what is wrong with a changed value, or "".
func checkChange(b, a param) string {
	if isIntLit(a.lit) != isIntLit(b.lit) && a.factors == nil {
		return "type changed"
	}
	pow2 := func(v float64) bool { n := int64(v); return n > 0 && n&(n-1) == 0 && float64(n) == v }
	switch a.cat {
	case catLR, catWeightDecay, catClip:
		if r := a.value / b.value; r < 0.45 || r > 2.1 {
			return fmt.Sprintf("ratio %.2f outside [0.5, 2]", r)
		}
	case catEps:
		if r := a.value / b.value; math.Abs(math.Log10(r)) > 1.01 {
			return "eps moved more than a decade"
		}
	case catBeta:
		if a.value <= 0 || a.value >= 1 || a.value < 0.5 {
			return "beta outside [0.5, 1)"
		}
	case catFraction, catDropout:
		if a.value < 0 || a.value >= 1 || math.Abs(a.value-b.value) > 0.16 {
			return "fraction outside [0, 1) or moved too far"
		}
	case catTotalSteps, catPhaseSteps, catLayers:
		if a.value < 1 || a.value > 2*b.value+2 || a.value < b.value/2-2 {
			return "count moved too far"
		}
	case catBatch, catSeqLen:
		if len(a.factors) > 0 {
			if pow2(float64(b.factors[0])) && !pow2(float64(a.factors[0])) {
				return "power of two lost"
			}
		} else if pow2(b.value) && !pow2(a.value) {
			return "power of two lost"
		}
		if r := a.value / b.value; r < 0.45 || r > 2.1 {
			return "size moved more than 2x"
		}
	}
	return ""
}

// TestMutateChildrenAreValidPython parses every child with Python's own
// parser.
func TestMutateChildrenAreValidPython(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testdeps.Missing(t, "python3", "no /usr/bin/python3")
	}
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"speedrun.py", "../../edit/testdata/programs/tiny.py", "../../edit/testdata/programs/tabs.py", "../../edit/testdata/programs/train_gpt.py"} {
		parent := Program{Name: name, Source: readProgram(t, name)}
		for seed := range uint64(40) {
			p, err := NewMutate().Propose(context.Background(), Request{Parent: parent, Seed: seed})
			if err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			f := filepath.Join(dir, fmt.Sprintf("%s-%d.py", filepath.Base(name), seed))
			if err := os.WriteFile(f, p.Child(), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	cmd := exec.Command(py, append([]string{"-c", "import ast, sys\nfor f in sys.argv[1:]:\n    ast.parse(open(f).read(), f)\n"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python rejects a child: %v\n%s", err, out)
	}
}

func TestMutateNothingToDo(t *testing.T) {
	src := []byte("import torch\n# frontier:protected begin all\nlr = 0.1\n# frontier:protected end all\nprint(seed := 3)\n")
	_, err := NewMutate().Propose(context.Background(), Request{Parent: Program{Source: src}})
	if pe := AsError(err); pe == nil || pe.Kind != FailNothingToDo {
		t.Fatalf("err = %v, want nothing_to_do", err)
	}
	_, err = NewMutate().Propose(context.Background(), Request{Parent: Program{Source: []byte("# frontier:protected begin x\nlr = 1.0\n")}})
	if pe := AsError(err); pe == nil || pe.Kind != FailNothingToDo || !strings.Contains(err.Error(), "no end marker") {
		t.Fatalf("broken markers: err = %v", err)
	}
}

func TestMutateKeepsCRLFAndUniqueSearch(t *testing.T) {
	// Two identical lines: the block must widen its SEARCH to be unique.
	src := []byte("def a():\r\n    lr = 0.1\r\n    return lr\r\n\r\ndef b():\r\n    lr = 0.1\r\n    return lr * 2\r\n")
	for seed := range uint64(10) {
		p, err := NewMutate().Propose(context.Background(), Request{Parent: Program{Source: src}, Seed: seed})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !strings.Contains(string(p.Child()), "\r\n") || strings.Count(string(p.Child()), "\n") != strings.Count(string(p.Child()), "\r\n") {
			t.Fatalf("seed %d: line endings changed: %q", seed, p.Child())
		}
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		v    float64
		lit  string
		want string
	}{
		{0.0052, "0.0036", "0.0052"},
		{0.00451, "3e-3", "4.5e-3"},
		{0.001, "3e-3", "1e-3"},
		{1e-9, "1e-10", "1e-9"},
		{2, "1.0", "2.0"},
		{0.123456, "0.1", "0.12"},
		{4.5e-4, "1E-3", "4.5E-4"},
	}
	for _, tt := range tests {
		got, _, ok := formatFloat(tt.v, tt.lit, 2)
		if tt.lit == "1e-10" {
			got, _, ok = formatFloat(tt.v, tt.lit, 1)
		}
		if !ok || got != tt.want {
			t.Errorf("formatFloat(%v, %q) = %q, want %q", tt.v, tt.lit, got, tt.want)
		}
	}
	if got := formatInt(1500000, "1_000_000"); got != "1_500_000" {
		t.Errorf("formatInt = %q", got)
	}
}

// A parent with loss to spare has half of its proposals shorten the run,
// and only those; a parent without a measured loss under the target never.
func TestMutateSpendsTheMargin(t *testing.T) {
	src := readProgram(t, "speedrun.py") // num_iterations = 1750
	params, err := findParams(src)
	if err != nil {
		t.Fatal(err)
	}
	// changed is what a child changed, by label: a cut is the only change
	// of a shortening (the step counts).
	changed := func(child []byte) map[string]float64 {
		ps, err := findParams(child)
		if err != nil || len(ps) != len(params) {
			t.Fatalf("child params: %v (%d, parent %d)", err, len(ps), len(params))
		}
		out := map[string]float64{}
		for i, p := range ps {
			if p.value != params[i].value {
				out[fmt.Sprintf("%s/%s", p.label(), categoryNames[p.cat])] = 1 - p.value/params[i].value
			}
		}
		return out
	}
	m := NewMutate()
	for _, c := range []struct {
		name         string
		loss, target float64
		attempt      int
		lo, hi       float64 // the range of cuts expected
		min, max     int     // how many of 40 proposals shorten the run
	}{
		{"0.15 nats", 3.13, 3.28, 0, 0.15, 0.30, 10, 30},
		{"a fifth of it", 3.25, 3.28, 0, 0.03, 0.06, 10, 30},
		{"first attempt", 3.13, 3.28, 1, 0.15, 0.30, 40, 40},
		{"third attempt", 3.13, 3.28, 3, 0.15, 0.30, 6, 22},
		{"no loss", 0, 3.28, 1, 0, 0, 0, 0},
		{"over the target", 3.30, 3.28, 1, 0, 0, 0, 0},
		{"no target", 3.18, 0, 1, 0, 0, 0, 0},
	} {
		short := 0
		for seed := range uint64(40) {
			p, err := m.Propose(context.Background(), Request{Parent: Program{Source: src, ValLoss: c.loss}, Target: c.target, Seed: seed, Attempt: c.attempt})
			if err != nil {
				t.Fatalf("%s, seed %d: %v", c.name, seed, err)
			}
			if !strings.Contains(p.Description, "fewer steps") {
				continue
			}
			short++
			ch := changed(p.Child())
			cut, ok := ch["num_iterations/total steps"]
			if !ok || len(ch) != 1 {
				t.Errorf("%s, seed %d: changed %v, want only the step count: %s", c.name, seed, ch, p.Description)
			}
			if cut < c.lo-0.01 || cut > c.hi+0.01 {
				t.Errorf("%s, seed %d: cut %.3f, want %.3f to %.3f: %s", c.name, seed, cut, c.lo, c.hi, p.Description)
			}
		}
		if short < c.min || short > c.max {
			t.Errorf("%s: %d of 40 proposals shortened the run, want %d to %d", c.name, short, c.min, c.max)
		}
	}
}

// The second attempt from a parent with 0.1 nats or more to spare trains
// a model one layer smaller and changes nothing else; with less to spare,
// one layer left, or two layer counts, it does what it did before.
func TestMutateSpendsTheMarginOnALayer(t *testing.T) {
	tiny, err := os.ReadFile(filepath.Join("..", "..", "tracks", "tiny-1cpu", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	speedrun := readProgram(t, "speedrun.py")
	one := bytes.Replace(tiny, []byte("n_layer: int = 2"), []byte("n_layer: int = 1"), 1)
	two := bytes.Replace(tiny, []byte("    n_head: int = 4\n"), []byte("    n_head: int = 4\n    num_layers: int = 3\n"), 1)
	m := NewMutate()
	for _, c := range []struct {
		name         string
		src          []byte
		loss, target float64
		attempt      int
		from, to     string // the one change expected; "" for none of this kind
	}{
		{"tiny, 0.15 to spare", tiny, 3.30, 3.45, 2, "n_layer: int = 2", "n_layer: int = 1"},
		{"speedrun call, 0.1 to spare", speedrun, 3.18, 3.28, 2, "num_layers=12", "num_layers=11"},
		{"first attempt", tiny, 3.30, 3.45, 1, "", ""},
		{"third attempt", tiny, 3.30, 3.45, 3, "", ""},
		{"0.05 to spare", tiny, 3.40, 3.45, 2, "", ""},
		{"one layer left", one, 3.30, 3.45, 2, "", ""},
		{"two layer counts", two, 3.30, 3.45, 2, "", ""},
	} {
		for seed := range uint64(10) {
			p, err := m.Propose(context.Background(), Request{Parent: Program{Source: c.src, ValLoss: c.loss}, Target: c.target, Seed: seed, Attempt: c.attempt})
			if err != nil {
				t.Fatalf("%s, seed %d: %v", c.name, seed, err)
			}
			layer := strings.Contains(p.Description, "one layer fewer")
			if c.from == "" {
				if layer {
					t.Errorf("%s, seed %d: a layer fewer: %s", c.name, seed, p.Description)
				}
				continue
			}
			want := bytes.Replace(c.src, []byte(c.from), []byte(c.to), 1)
			if !layer || !bytes.Equal(p.Child(), want) {
				t.Errorf("%s, seed %d: want only %q -> %q, got %s", c.name, seed, c.from, c.to, p.Description)
			}
		}
	}
}
