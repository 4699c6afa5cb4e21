// Package executortest is the contract suite of eval.Executor: the same
// programs (the red team's reference, a crash, a hang, a resource limit, a
// forged message and an attack of the red team) must be judged the same
// way whatever runs their phases, this machine's executor or a cluster's.
// An executor passes it with a test of a few lines:
//
//	func TestContract(t *testing.T) {
//		executortest.Run(t, myExecutor(t), executortest.Options{})
//	}
package executortest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/internal/verify"
	"github.com/frontier-bench/frontier/internal/verify/redteam"
)

// Options tune the suite.
type Options struct {
	// Sandbox names the confinement the executor applies, for the
	// results ("" when the executor's runs say it).
	Sandbox string
	// Parallel is how many cases run at once (0: 2).
	Parallel int
	// Only, when set, runs only the named cases.
	Only []string
}

// A case is a program and the verdicts that count as judging it right.
type contractCase struct {
	name    string
	program string // a red-team program, or "reference"
	edit    func(string) string
	spec    func(*track.Spec)
	want    []eval.Verdict
	rules   []string // for invalid verdicts: one of these
	reason  string   // a phrase the reason holds
}

// crashAt raises after the clock started, on the third step.
func crashAt(src string) string {
	return strings.Replace(src, "    # frontier:protected begin step\n",
		"    if step == 2:\n        raise RuntimeError(\"the contract's crash at step 2\")\n    # frontier:protected begin step\n", 1)
}

var contractCases = []contractCase{
	{name: "reference", program: "reference", want: []eval.Verdict{eval.Acceptable}},
	{name: "crash", program: "reference", edit: crashAt, want: []eval.Verdict{eval.Error}, reason: "the contract's crash at step 2"},
	{name: "hang", program: "sleep_past_limit", want: []eval.Verdict{eval.Timeout}, spec: shortLimits},
	{name: "limit", program: "memory_bomb", want: []eval.Verdict{eval.Error}, reason: "resource limit"},
	{name: "forged", program: "forge_result_fd", want: []eval.Verdict{eval.Invalid}, rules: []string{eval.RuleProtocol},
		spec: func(s *track.Spec) { s.Verification.StaticRules = []string{track.RulesNone} }},
	// A look ahead hidden by a memory of its answers: the scorer, which
	// saw none of the scored rows, answers otherwise (where its own memory
	// trips it, the whole batches show state).
	{name: "memo_lookahead", program: "memo_lookahead", want: []eval.Verdict{eval.Invalid},
		rules: []string{eval.RuleCausality, eval.RuleStatefulEval}},
}

// shortLimits ends a run that does not end sooner than the red team's
// track would: the full run is killed at its compile budget plus its
// limit, 30 s here, where the track's limits (raised from the fast check
// up to full_run_max) gave 70 to 85 s. The budget still leaves a loaded
// machine 20 s to import torch and build the model.
func shortLimits(s *track.Spec) {
	s.Limits.FullRun = track.Duration(10 * time.Second)
	s.Limits.FullRunMax = s.Limits.FullRun // not raised from the fast check
	s.Limits.CompileBudget = track.Duration(20 * time.Second)
}

// Run evaluates the contract's programs with exec and checks each verdict.
func Run(t *testing.T, exec eval.Executor, o Options) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs training programs end to end")
	}
	py := evaltest.Python(t)
	spec := loadTrack(t)
	dataDir := t.TempDir()
	ev := &eval.Evaluator{
		Executor: exec, Python: py.Path, Torch: py.Torch, Sandbox: o.Sandbox,
		RunsDir: t.TempDir(), Data: &eval.LocalData{Dirs: map[string]string{spec.Name: dataDir}},
		Checks: verify.Checks(),
	}
	// The data once, before the cases share it.
	if _, err := ev.Data.Resolve(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = 2
	}
	slots := make(chan struct{}, parallel)
	t.Run("cases", func(t *testing.T) {
		for _, c := range contractCases {
			if len(o.Only) > 0 && !slices.Contains(o.Only, c.name) {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				s := *spec
				if c.spec != nil {
					c.spec(&s)
				}
				src := program(t, &s, c.program)
				if c.edit != nil {
					src = c.edit(src)
				}
				res, err := ev.Evaluate(context.Background(), eval.Request{Track: &s, Program: []byte(src), Name: c.name + ".py", Seed: 1})
				if err != nil {
					t.Fatalf("Evaluate: %v", err)
				}
				ok := false
				for _, v := range c.want {
					ok = ok || res.Verdict == v
				}
				if ok && len(c.rules) > 0 {
					ok = slices.Contains(c.rules, res.Rule)
				}
				if ok && c.reason != "" {
					ok = strings.Contains(res.Reason+res.Traceback, c.reason)
				}
				if !ok {
					t.Errorf("verdict %s (rule %q), want %v (rules %q, reason with %q)\nreason: %s\ntraceback: %s",
						res.Verdict, res.Rule, c.want, c.rules, c.reason, res.Reason, res.Traceback)
				}
			})
		}
	})
}

// loadTrack writes the red team's track to a folder and loads it.
func loadTrack(t *testing.T) *track.Spec {
	t.Helper()
	dir := t.TempDir()
	sub, err := fs.Sub(redteam.Programs, "testdata/track")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		t.Fatal(err)
	}
	spec, err := track.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// program returns a red-team program, or the track's reference.
func program(t *testing.T, spec *track.Spec, name string) string {
	t.Helper()
	if name == "reference" {
		b, err := spec.ReferenceSource()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	b, err := fs.ReadFile(redteam.Programs, filepath.Join("testdata", name+".py"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
