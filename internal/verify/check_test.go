package verify

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/importer"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// Every id the track loader accepts has a rule here, in the same order,
// and Rules reports the contracts' default sets.
func TestRuleIDsMatchTrack(t *testing.T) {
	var ids []string
	for _, r := range Rules() {
		ids = append(ids, r.ID)
		if r.Summary == "" || strings.Contains(r.Summary, "\n") {
			t.Errorf("rule %s: summary %q", r.ID, r.Summary)
		}
		if !r.Harness {
			t.Errorf("rule %s is not in the harness contract's default set", r.ID)
		}
	}
	if !slices.Equal(ids, track.StaticRuleIDs()) {
		t.Fatalf("rules %v, track ids %v", ids, track.StaticRuleIDs())
	}
	for _, r := range Rules() {
		if want := slices.Contains(track.DefaultStaticRules("log"), r.ID); r.Log != want {
			t.Errorf("rule %s: Log %v, want %v", r.ID, r.Log, want)
		}
	}
}

// The built-in references and the test tracks' programs trip no rule of
// their contract's default set, without the reference allowance.
func TestReferencesPass(t *testing.T) {
	specs, err := track.NewRegistry(tracks.FS).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 4 {
		t.Fatalf("%d built-in tracks", len(specs))
	}
	quick, err := track.LoadDir("../evolve/testdata/quick")
	if err != nil {
		t.Fatal(err)
	}
	specs = append(specs, quick)
	for _, s := range specs {
		ref, err := s.ReferenceSource()
		if err != nil {
			t.Fatal(err)
		}
		noFindings(t, s.Name, ref, s.StaticRules(), s.Data.Val)
	}

	all := track.StaticRuleIDs()
	logRules := track.DefaultStaticRules("log")
	files := []struct {
		path  string
		rules []string
	}{
		{"../eval/testdata/bigram.py", all},
		{"../eval/testdata/speedrun_mini_harness.py", all},
		{"../eval/testdata/speedrun_mini.py", logRules},
		{"../importer/testdata/script_2026.py", logRules},
		{"../importer/testdata/record_2024.txt", logRules},
		{"../importer/testdata/record_2025.txt", logRules},
	}
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		code, _, err := importer.ExtractCode(b)
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		noFindings(t, f.path, code, f.rules, "")
		if prepared, _, err := importer.Prepare(code); err == nil {
			noFindings(t, f.path+" (prepared)", prepared, f.rules, "")
		}
	}
}

func noFindings(t *testing.T, name string, src []byte, rules []string, val string) {
	t.Helper()
	fs, err := Inspect(src, Options{Rules: rules, ValFile: val})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, f := range fs {
		t.Errorf("%s: %s", name, f)
	}
}

// The harness-contract default set catches a cheat on the tiny reference;
// the log default set does not judge what unmodified records do.
func TestStaticCheck(t *testing.T) {
	spec := tinySpec(t)
	ref, _ := spec.ReferenceSource()
	cheat := bytes.Replace(ref, []byte("fh.train_begin(logits_fn)"), []byte("import time\ntime.perf_counter = lambda: 0.0\nfh.train_begin(logits_fn)"), 1)
	st := NewStatic()
	res, err := st.Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: cheat, Name: "train.py"})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res.Findings) != 1 || res.Findings[0].Rule != "clock-patch" || res.Program != nil {
		t.Fatalf("result %+v", res)
	}
	if res.Findings[0].Line != bytes.Count(cheat[:bytes.Index(cheat, []byte("time.perf_counter ="))], []byte("\n"))+1 {
		t.Fatalf("finding on line %d", res.Findings[0].Line)
	}
	// The reference passes; the cached baseline serves a second call.
	for range 2 {
		res, err = st.Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: ref})
		if err != nil || res != nil {
			t.Fatalf("reference: %+v, %v", res, err)
		}
	}
	// static_rules: [none] runs nothing.
	off := *spec
	off.Verification.StaticRules = []string{"none"}
	if res, err := st.Check(context.Background(), eval.CheckInput{Track: &off, Reference: ref, Program: cheat}); err != nil || res != nil {
		t.Fatalf("rules off: %+v, %v", res, err)
	}
	// A canceled context is an error, not a verdict.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Check(ctx, eval.CheckInput{Track: spec, Reference: ref, Program: cheat}); err == nil {
		t.Fatal("no error on a canceled context")
	}
}

func tinySpec(t *testing.T) *track.Spec {
	t.Helper()
	spec, err := track.NewRegistry(tracks.FS).Get("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestProtectedRestore(t *testing.T) {
	spec := tinySpec(t)
	ref, _ := spec.ReferenceSource()
	// A candidate that changes the data region (reads the validation
	// file) and the step region, and something outside any region.
	cand := bytes.Replace(ref, []byte("self.tokens = fh.read_shard(self.files[0])"), []byte("self.tokens = fh.read_shard(self.files[0])  # changed"), 1)
	cand = bytes.Replace(cand, []byte("    if fh.want_validation(step):\n"), []byte("    if False and fh.want_validation(step):\n"), 1)
	cand = bytes.Replace(cand, []byte("lr: float = 3e-3"), []byte("lr: float = 4e-3"), 1)
	res, err := Protected{}.Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: cand})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res.Findings) != 2 {
		t.Fatalf("result %+v", res)
	}
	want := bytes.Replace(ref, []byte("lr: float = 3e-3"), []byte("lr: float = 4e-3"), 1)
	if !bytes.Equal(res.Program, want) {
		t.Fatalf("restored program differs from the reference with the candidate's own change")
	}
	for i, name := range []string{"data", "step"} {
		f := res.Findings[i]
		if f.Rule != RuleProtected || f.Severity != eval.SeverityWarning || !strings.Contains(f.Message, `"`+name+`"`) {
			t.Errorf("finding %d: %+v", i, f)
		}
	}
	if line := lineOf(cand, "if False and fh.want_validation"); res.Findings[1].Line != line {
		t.Errorf("step finding on line %d, want %d", res.Findings[1].Line, line)
	}

	// Unchanged: nothing to say, nothing rewritten.
	if res, err := (Protected{}).Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: want}); err != nil || res != nil {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	// Protection off: the candidate stands as it is.
	off := *spec
	off.Verification.ProtectedRegions = false
	if res, err := (Protected{}).Check(context.Background(), eval.CheckInput{Track: &off, Reference: ref, Program: cand}); err != nil || res != nil {
		t.Fatalf("off: %+v, %v", res, err)
	}
}

func TestProtectedImpossible(t *testing.T) {
	spec := tinySpec(t)
	ref, _ := spec.ReferenceSource()
	cases := map[string][]byte{
		"markers removed": bytes.Replace(bytes.Replace(ref, []byte("# frontier:protected begin step\n"), nil, 1), []byte("# frontier:protected end step\n"), nil, 1),
		"region renamed":  bytes.ReplaceAll(ref, []byte("protected begin finish"), []byte("protected begin finis")),
		"nested":          bytes.Replace(ref, []byte("# frontier:protected end data\n"), nil, 1),
		"added":           append(append([]byte(nil), ref...), "# frontier:protected begin mine\nx = 1\n# frontier:protected end mine\n"...),
		"end before begin": bytes.Replace(bytes.Replace(ref, []byte("# frontier:protected begin harness\n"), []byte("# frontier:protected end harness\n"), 1),
			[]byte("cfg = fh.config()\n# frontier:protected end harness\n"), []byte("cfg = fh.config()\n# frontier:protected begin harness\n"), 1),
	}
	for name, cand := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Protected{}.Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: cand})
			if err != nil {
				t.Fatal(err)
			}
			if res == nil || len(res.Findings) != 1 || res.Findings[0].Severity != eval.SeverityInvalid || res.Findings[0].Rule != RuleProtected || res.Program != nil {
				t.Fatalf("result %+v", res)
			}
			if !strings.Contains(res.Findings[0].Message, "cannot be restored") {
				t.Fatalf("message %q", res.Findings[0].Message)
			}
		})
	}
	// Broken markers in the reference are the track's fault: an error.
	bad := bytes.Replace(ref, []byte("# frontier:protected end data\n"), nil, 1)
	if _, err := (Protected{}).Check(context.Background(), eval.CheckInput{Track: spec, Reference: bad, Program: ref}); err == nil {
		t.Fatal("no error for a broken reference")
	}
}

// Checks puts the protected-region check first, so the static rules judge
// the restored program: a cheat inside a protected region is restored
// away, and what remains outside is judged.
func TestChecksOrder(t *testing.T) {
	cs := Checks()
	if len(cs) != 2 {
		t.Fatalf("%d checks", len(cs))
	}
	if _, ok := cs[0].(Protected); !ok {
		t.Fatalf("first check %T", cs[0])
	}
	spec := tinySpec(t)
	ref, _ := spec.ReferenceSource()
	cand := bytes.Replace(ref, []byte("fh.finish(logits_fn)\n# frontier:protected end finish"), []byte("import socket\nfh.finish(logits_fn)\n# frontier:protected end finish"), 1)
	prog := cand
	var all []eval.Finding
	for _, c := range cs {
		res, err := c.Check(context.Background(), eval.CheckInput{Track: spec, Reference: ref, Program: prog})
		if err != nil {
			t.Fatal(err)
		}
		if res == nil {
			continue
		}
		all = append(all, res.Findings...)
		if res.Program != nil {
			prog = res.Program
		}
	}
	if len(all) != 1 || all[0].Rule != RuleProtected || all[0].Severity != eval.SeverityWarning || !bytes.Equal(prog, ref) {
		t.Fatalf("findings %v", all)
	}
}

func lineOf(src []byte, s string) int {
	return bytes.Count(src[:bytes.Index(src, []byte(s))], []byte("\n")) + 1
}
