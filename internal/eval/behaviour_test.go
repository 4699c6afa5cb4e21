package eval

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

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
		src = strings.Replace(src, "fh.train_begin()\n", pre+"\nfh.train_begin()\n", 1)
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

// warmUp trains five steps on the training tokens before the clock.
const warmUp = `for w in range(5):
    i = (400 + w) * B * T
    x, y = tokens[i:i + B * T].view(B, T), tokens[i + 1:i + B * T + 1].view(B, T)
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
		{name: "pretrain", src: bigramVariant(t, 120, warmUp, ""), verdict: Invalid, rule: RulePretrain, fast: true,
			want: []string{"pretrain: the program trained before the clock started", "5 backward passes and 5 optimizer steps", "train.py:", "elements changed"}},
		// Fitted without autograd: bigram counts of the training tokens.
		{name: "fitted before the clock", src: bigramVariant(t, 120, `c = torch.bincount(tokens[:-1] * V + tokens[1:], minlength=V * V).view(V, V).float() + 0.1
with torch.no_grad():
    model.weight.copy_((c / c.sum(1, keepdim=True)).log())
`, ""), verdict: Invalid, rule: RulePretrain, fast: true,
			want: []string{"pretrain: the model that started the clock was already fitted to data", "ln(256) = 5.5452", "the limit is 5.1839"}},
		{name: "warm-up restored", verdict: Acceptable, src: bigramVariant(t, 120,
			"import copy\nsaved = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())\n"+warmUp+
				"model.load_state_dict(saved[0])\nopt.load_state_dict(saved[1])", "")},
		{name: "warm-up without the optimizer state", src: bigramVariant(t, 120,
			"import copy\nsaved = copy.deepcopy(model.state_dict())\n"+warmUp+"model.load_state_dict(saved)", ""),
			verdict: Invalid, rule: RulePretrain, fast: true, want: []string{"the state of optimizer Adam", "load the optimizer's state_dict() back"}},
		{name: "test-time training", src: bigramVariant(t, 120, "", `def logits_fn(x):
    with torch.enable_grad():
        F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1)).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return model(x)
`), verdict: Invalid, rule: RuleStatefulEval, fast: true, want: []string{"a backward pass ran during the final validation", "train.py:"}},
		{name: "memory of validation windows", src: bigramVariant(t, 120, "", `seen = set()
def logits_fn(x):
    keys = [hash(tuple(r)) for r in x.tolist()]
    boost = torch.tensor([2.0 if k in seen else 1.0 for k in keys]).view(-1, 1, 1)
    seen.update(keys)
    return model(x) * boost
`), verdict: Invalid, rule: RuleStatefulEval, fast: true, want: []string{"when it came again later in the final validation", "row", "position"}},
		{name: "noisy logits", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.05 * torch.randn_like(out)
`), verdict: Invalid, rule: RuleNondeterministic, fast: true, want: []string{"different logits for the same input", "of the logit scale"}},
		// A track whose hardware is noisy raises the limit (the probe's
		// tolerances grow with the noise, and it still runs).
		{name: "noisy logits under the track's max_noise", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.05 * torch.randn_like(out)
`), spec: func(s *track.Spec) { withProbe(s); s.Verification.MaxNoise = 0.5 }, verdict: Acceptable},
		{name: "a look at the previous row", src: bigramVariant(t, 120, "", `def logits_fn(x):
    out = model(x)
    return out + 0.5 * torch.roll(out, 1, 0)
`), spec: withProbe, verdict: Invalid, rule: RuleCausality, want: []string{"causality: logits of row", "rows must be independent"}},
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
if "val" in json.load(open(os.environ["FRONTIER_CONFIG"])).get("val_file", ""):
    raise RuntimeError("the config names the validation shard")
`, "")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := testTrack(t, 4.1)
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
	if p == nil || !p.OK || p.Sensitive < 0.5 || p.NoiseFloor != 0 || p.RowCheck != 32 || !p.DocIsolated {
		t.Errorf("probe %+v", p)
	}
	if c == nil || c.TrackedTensors == 0 || c.PretrainBackward != 0 || c.Validations != 1 || c.ExtraCalls == 0 || c.Drift == nil || *c.Drift != 0 {
		t.Errorf("checks %+v", c)
	}
	// The model that started the clock is untrained: about ln(256).
	if c == nil || c.InitialLoss == nil || *c.InitialLoss < 5.4 || c.InitialTensors != c.TrackedTensors || c.InitialLossMin != 4.93 || c.InitialSkipped != "" {
		t.Errorf("initial model: checks %+v", c)
	}
	t.Logf("probe %.0f ms (%d calls), extra calls %d in %.0f ms, weight checks %.1f ms, tracking %.1f ms, initial model %.1f ms (loss %.4f); train %.0f ms",
		p.Ms, p.Calls, c.ExtraCalls, c.ExtraMs, c.ParamsCheckMs, c.TrackMs, c.InitialMs, *c.InitialLoss, res.Metrics.TrainTimeMs)
}

// judgePhase on telemetry alone: each code of the behavioural checks is an
// invalid verdict with its rule, whatever else happened to the process.
func TestJudgeBehaviourCodes(t *testing.T) {
	spec := testTrack(t, 4.1)
	final := &harness.Final{Steps: 10, TrainTimeMs: 100, ValLoss: 3}
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
		{"second error", harness.Telemetry{Errors: []harness.Error{{Code: harness.ErrException, Message: "later"}, {Code: harness.ErrPretrain, Message: "boom"}}},
			runner.Result{Status: runner.StatusError}, RulePretrain, "pretrain: boom"},
		{"row leak", harness.Telemetry{Final: final, Probe: &harness.Probe{Fault: harness.ProbeFaultLeak, Message: "rows"}}, ok, RuleCausality, "causality: rows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tel := c.tel
			if tel.Error == nil && len(tel.Errors) > 0 {
				tel.Error = &tel.Errors[0]
			}
			o := judgePhase(spec, "full", c.rr, &tel)
			if o.verdict != Invalid || o.rule != c.rule || !strings.Contains(o.reason, c.want) {
				t.Errorf("verdict %s, rule %q, reason %q; want invalid, %q, %q", o.verdict, o.rule, o.reason, c.rule, c.want)
			}
		})
	}
	// An ordinary exception stays an error.
	tel := errTel(harness.ErrException, 0)
	if o := judgePhase(spec, "full", runner.Result{Status: runner.StatusError}, &tel); o.verdict != Error {
		t.Errorf("exception: verdict %s", o.verdict)
	}
}

func errTel(code string, rank int) harness.Telemetry {
	e := harness.Error{Kind: "HarnessError", Code: code, Message: "boom", Rank: rank}
	return harness.Telemetry{Error: &e, Errors: []harness.Error{e}}
}
