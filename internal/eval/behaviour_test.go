package eval

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

// The harness's behavioural checks as verdicts: small real programs (the
// bigram program of eval_test.go with one change each) through the real
// evaluator. Each cheat must be invalid with its rule and a reason that
// says what and where; the honest programs next to them must not be.

// bigramVariant is the bigram program with pre run just before
// fh.train_begin() and, when logits is set, logits_fn replaced by it.
func bigramVariant(t *testing.T, steps int, pre, logits string) []byte {
	t.Helper()
	src := string(program(t, steps, "pass"))
	if pre != "" {
		src = strings.Replace(src, "fh.train_begin(logits_fn)\n", pre+"\nfh.train_begin(logits_fn)\n", 1)
	}
	if logits != "" {
		old := "def logits_fn(x):\n    return model(x)\n"
		if !strings.Contains(src, old) {
			t.Fatal("testdata/bigram.py has no plain logits_fn to replace")
		}
		src = strings.Replace(src, old, logits, 1)
	}
	return []byte(src)
}

// warmUp trains five steps on random tokens before the clock (the training
// data is not there yet).
const warmUp = `for w in range(5):
    x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))
    F.cross_entropy(model(x).view(-1, V), y.reshape(-1)).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
`

func TestBehaviourVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Python process per case")
	}
	ev, _ := newEvaluator(t)
	cases := []struct {
		name    string
		src     []byte
		spec    func(*track.Spec)
		verdict Verdict
		rule    string
		want    []string // in the reason
		fast    bool     // decided by the fast check
	}{
		// The training data is not there before the clock.
		{name: "data before the clock", src: bigramVariant(t, 120, `early = fh.read_shard(cfg.train_files[0])`, ""), verdict: Error, fast: true,
			want: []string{"before fh.train_begin()", "available only once the clock runs", "Build the data loader after"}},
		{name: "warm-up restored", verdict: Acceptable, src: bigramVariant(t, 120,
			"import copy\nsaved = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())\n"+warmUp+
				"model.load_state_dict(saved[0])\nopt.load_state_dict(saved[1])", "")},
		// Fitted before the clock from knowledge carried in the source (a
		// bigram table of the data, written into the program): the model
		// that starts the clock scores under the limit.
		{name: "fitted before the clock", src: bigramVariant(t, 120, embeddedBigram(t), ""), verdict: Invalid, rule: RulePretrain, fast: true,
			want: []string{"pretrain: the model that started the clock was already fitted to data", "ln(256) = 5.5452", "the limit is 5.2714"}},
		{name: "test-time training", src: noClockStartScore(bigramVariant(t, 120, "", `def logits_fn(x):
    with torch.enable_grad():
        F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1)).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return model(x)
`)), verdict: Invalid, rule: RuleNondeterministic, fast: true, want: []string{"state that changes on every call"}},
		{name: "memory of validation windows", src: bigramVariant(t, 120, "", `seen = set()
def logits_fn(x):
    keys = [hash(tuple(r)) for r in x.tolist()]
    boost = torch.tensor([2.0 if k in seen else 1.0 for k in keys]).view(-1, 1, 1)
    seen.update(keys)
    return model(x) * boost
`), verdict: Invalid, rule: RuleNondeterministic, fast: true, want: []string{"different logits for the same input", "scorer's answers", "row", "position"}},
		{name: "noisy logits", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.05 * torch.randn_like(out)
`), verdict: Invalid, rule: RuleNondeterministic, fast: true, want: []string{"different logits for the same input", "over the limit of 0.001"}},
		// A track whose hardware is noisy raises the limit (the probe's
		// tolerances grow with the noise, and it still runs).
		{name: "noisy logits under the track's max_noise", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.05 * torch.randn_like(out)
`), spec: func(s *track.Spec) { withProbe(s); s.Verification.MaxNoise = 0.5 }, verdict: Acceptable},
		{name: "a look at the previous row", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.5 * torch.roll(out, 1, 0)
`), spec: withProbe, verdict: Invalid, rule: RuleCausality, fast: true, want: []string{"causality: log-probabilities at position", "in a batch of other rows", "rows must be independent"}},
		{name: "compile budget", src: program(t, 120, "pass"), spec: func(s *track.Spec) { s.Limits.CompileBudget = track.Duration(time.Millisecond) },
			verdict: Invalid, rule: RuleCompileBudget, fast: true, want: []string{"compile-budget: untimed setup before fh.train_begin() took", "budget of 1 ms"}},
		// The validation shard is neither at descriptor 3 nor named in the
		// config by the time the program runs.
		{name: "no validation shard in reach", verdict: Acceptable, src: bigramVariant(t, 120, `import json, os
try:
    head = os.pread(3, 4, 0)
except OSError:
    head = b""
if int.from_bytes(head, "little") == 20240520:
    raise RuntimeError("descriptor 3 is the validation shard")
cfgtext = open(os.environ["FRONTIER_CONFIG"]).read()
if "val_file" in cfgtext or "val_tokens" in cfgtext:
    raise RuntimeError("the config names the validation data")
for fd in range(3, 64):
    try:
        if int.from_bytes(os.pread(fd, 4, 0), "little") == 20240520:
            raise RuntimeError("descriptor %d is a shard" % fd)
    except OSError:
        pass
`, "")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := testTrack(t, bigramTarget)
			if c.spec != nil {
				c.spec(spec)
			}
			res := evaluate(t, ev, spec, c.src)
			if res.Verdict != c.verdict || res.Rule != c.rule {
				t.Fatalf("verdict %s (rule %q), want %s (rule %q): %s\n%s", res.Verdict, res.Rule, c.verdict, c.rule, res.Reason, res.Traceback)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q lacks %q", res.Reason, w)
				}
			}
			if c.fast != (res.Full == nil) {
				t.Errorf("decided by the fast check: %v, want %v (reason %q)", res.Full == nil, c.fast, res.Reason)
			}
		})
	}
}

func withProbe(s *track.Spec) {
	s.Verification.Probe = track.Probe{Enabled: true, Sequences: 4, Positions: 4, DocIsolated: true}
}

// The tiny reference, shortened, with the probe and document isolation on
// as its track has them: no check fires, and the telemetry shows what the
// checks did.
func TestBehaviourReferencePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny reference")
	}
	ev, st := newEvaluator(t)
	spec := testTrack(t, 10)
	withProbe(spec)
	spec.Verification.MinInitialLoss = 4.93 // the tiny track's: its target, 3.1, is not this test's
	ref, err := os.ReadFile("../../tracks/tiny/train.py")
	if err != nil {
		t.Fatal(err)
	}
	src := regexp.MustCompile(`num_steps: int = \d+`).ReplaceAll(ref, []byte("num_steps: int = 60"))
	res := evaluate(t, ev, spec, src)
	if res.Verdict != Acceptable {
		t.Fatalf("verdict %s (%s): %s\n%s", res.Verdict, res.Rule, res.Reason, res.Traceback)
	}
	raw, err := st.Telemetry(context.Background(), res.EvaluationID)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := harness.ReadTelemetry(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	p, c := tel.Probe, tel.Checks
	if p == nil || !p.OK || !p.Scorer || p.Sensitive < 0.5 || p.NoiseFloor != 0 || p.RowCheck < 16 || !p.DocIsolated {
		t.Errorf("probe %+v", p)
	}
	// The scorer answered every scored row again, and agreed to the bit.
	if c == nil || c.Validations != 1 || c.ScorerCalls < 2 || c.Drift == nil || *c.Drift != 0 {
		t.Errorf("checks %+v", c)
	}
	// The model that started the clock is untrained: about ln(256).
	if c == nil || c.InitialLoss == nil || *c.InitialLoss < 5.4 || c.InitialLossMin != 4.93 || c.InitialSkipped != "" {
		t.Errorf("initial model: checks %+v", c)
	}
	t.Logf("%d calls, scorer calls %d in %.0f ms after %.0f ms of setup, initial model %.1f ms (loss %.4f), validation %.0f ms; train %.0f ms",
		c.Calls, c.ScorerCalls, *c.ScorerMs, *c.ScorerSetupMs, *c.InitialMs, *c.InitialLoss, c.ValidationMs, res.Metrics.TrainTimeMs)
}

// judgePhase on telemetry alone: each code of the behavioural checks is an
// invalid verdict with its rule, whatever else happened to the process.
func TestJudgeBehaviourCodes(t *testing.T) {
	spec := testTrack(t, bigramTarget)
	final := &harness.Final{Steps: 10, TrainTimeMs: 100, ValLoss: 3, Probe: true}
	ok := runner.Result{Status: runner.StatusOK, Wall: time.Second}
	cases := []struct {
		name string
		tel  harness.Telemetry
		rr   runner.Result
		rule string
		want string
	}{
		{"pretrain", errTel(harness.ErrPretrain, 0), runner.Result{Status: runner.StatusError, ExitCode: 1}, RulePretrain, "pretrain: boom"},
		{"stateful after a hang", errTel(harness.ErrStatefulEval, 0), runner.Result{Status: runner.StatusTimeout}, RuleStatefulEval, "stateful-validation: boom"},
		{"nondeterministic on a worker", errTel(harness.ErrNondeterministic, 3), runner.Result{Status: runner.StatusError}, RuleNondeterministic, "boom (process 3)"},
		{"compile budget", errTel(harness.ErrCompileBudget, 0), runner.Result{Status: runner.StatusError}, RuleCompileBudget, "compile-budget: boom"},
		{"second error", harness.Telemetry{Errors: []harness.Error{{Code: harness.ErrException, Message: "later"}, {Code: harness.ErrPretrain, Message: "boom", Judge: true}}},
			runner.Result{Status: runner.StatusError}, RulePretrain, "pretrain: boom"},
		{"row leak", harness.Telemetry{Final: final, Checks: &harness.Checks{}, Probe: &harness.Probe{Fault: harness.ProbeFaultLeak, Message: "rows"}}, ok, RuleCausality, "causality: rows"},
		{"validation cost", errTel(harness.ErrValidationCost, 0), runner.Result{Status: runner.StatusError}, RuleValidationCost, "validation-cost: boom"},
		{"protocol", errTel(harness.ErrProtocol, 0), runner.Result{Status: runner.StatusError}, RuleProtocol, "protocol: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tel := c.tel
			if tel.Error == nil && len(tel.Errors) > 0 {
				tel.Error = &tel.Errors[0]
			}
			o := judgePhase(spec, "full", c.rr, nil, &tel)
			if o.verdict != Invalid || o.rule != c.rule || !strings.Contains(o.reason, c.want) {
				t.Errorf("verdict %s, rule %q, reason %q; want invalid, %q, %q", o.verdict, o.rule, o.reason, c.rule, c.want)
			}
		})
	}
	// An ordinary exception stays an error; and a program that reports a
	// rule's code as its own failure does not decide a rule.
	tel := errTel(harness.ErrException, 0)
	if o := judgePhase(spec, "full", runner.Result{Status: runner.StatusError}, nil, &tel); o.verdict != Error {
		t.Errorf("exception: verdict %s", o.verdict)
	}
	forged := harness.Error{Kind: "X", Code: harness.ErrPretrain, Message: "not the judge"}
	tel = harness.Telemetry{Error: &forged, Errors: []harness.Error{forged}}
	if o := judgePhase(spec, "full", runner.Result{Status: runner.StatusError}, nil, &tel); o.verdict != Error {
		t.Errorf("a program's own code: verdict %s", o.verdict)
	}
}

func errTel(code string, rank int) harness.Telemetry {
	e := harness.Error{Kind: "Judge", Code: code, Message: "boom", Rank: rank, Judge: true}
	return harness.Telemetry{Error: &e, Errors: []harness.Error{e}}
}

// noClockStartScore has the program start the clock without logits_fn, so
// that a logits_fn that trains is first called in validation.
func noClockStartScore(src []byte) []byte {
	return []byte(strings.Replace(string(src), "fh.train_begin(logits_fn)", "fh.train_begin()", 1))
}

// embeddedBigram is Python that sets the bigram model to the training
// data's bigram log-probabilities (the 8 likeliest successors of each
// token), computed here and written into the program as a literal: what a
// program can carry in its source without reading any data.
func embeddedBigram(t *testing.T) string {
	t.Helper()
	spec := testTrack(t, bigramTarget)
	ev, _ := newEvaluator(t)
	files, err := ev.Data.Resolve(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := data.ReadShard(files.Train[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	V := spec.Data.VocabSize
	counts := make([]float64, V*V)
	for i := 1; i < len(toks); i++ {
		counts[int(toks[i-1])*V+int(toks[i])]++
	}
	var b strings.Builder
	b.WriteString("table = {")
	for a := range V {
		row := counts[a*V : (a+1)*V]
		total := 0.0
		for _, c := range row {
			total += c
		}
		if total == 0 {
			continue
		}
		idx := make([]int, V)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(x, y int) int { return cmp.Compare(row[y], row[x]) })
		fmt.Fprintf(&b, "%d: [", a)
		for _, j := range idx[:8] {
			fmt.Fprintf(&b, "(%d, %.3f), ", j, math.Log((row[j]+0.1)/total))
		}
		b.WriteString("], ")
	}
	b.WriteString("}\nwith torch.no_grad():\n    model.weight.fill_(-8.0)\n    for a, row in table.items():\n        for j, lp in row:\n            model.weight[a, j] = lp\n")
	return b.String()
}
