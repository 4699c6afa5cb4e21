package harness

import (
	"math"
	"os"
	"strings"
	"testing"
)

// The behavioural checks, each on testProgram with one FH_* switch: a
// cheat must be found with the right code and a message that says what,
// where and how much; the honest variant next to it must pass.

// Training before train_begin is found however it is done, unless the
// program restores the state it started from.
func TestTrainingBeforeTrainBegin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		warm string
		want string // error message fragment; "" to pass
	}{
		{"steps", "5 backward passes and 5 optimizer steps before train_begin"},
		{"grad", "5 backward passes and 0 optimizer steps before train_begin"}, // autograd.grad, manual update
		{"manual_grad", "0 backward passes and 5 optimizer steps"},             // gradients set by hand
		{"restore", ""}, // the speedrun's warm-up
		{"no_step", ""}, // compile warm-up: no update
	}
	for _, c := range cases {
		t.Run(c.warm, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFast)
			r.env = []string{"FH_PRETRAIN=" + c.warm}
			res := r.exec(t)
			if c.want == "" {
				if res.code != 0 || res.tel.Final == nil {
					res.dump(t)
					t.Fatalf("exit %d: an honest warm-up failed", res.code)
				}
				if ch := res.tel.Checks; ch == nil || ch.PretrainBackward != 5 || ch.PretrainTensors != 5 || !ch.PretrainExact {
					t.Errorf("checks %+v; want 5 backward passes reaching 5 tensors, recorded exactly", res.tel.Checks)
				}
				return
			}
			e := res.wantError(t, 1, ErrPretrain, "the program trained before the clock started")
			for _, w := range []string{c.want, "train.py:", "elements changed", "state_dict"} {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
			if !strings.Contains(e.Traceback, "train.py") {
				t.Errorf("traceback does not name the program:\n%s", e.Traceback)
			}
		})
	}
}

// A model fitted to the data before the clock without autograd (a bigram
// table counted from the training shards) is found by scoring the model
// that started the clock; the same table left at zero passes, its loss
// recorded; a logits_fn that does not use the trained tensors is not
// judged, and the result says so.
func TestFittedBeforeTrainBegin(t *testing.T) {
	t.Parallel()
	for _, fit := range []string{"zero", "count", "copy"} {
		t.Run(fit, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFast)
			r.cfg.Verify.MinInitialLoss = 3.5
			r.env = []string{"FH_FIT=" + fit}
			if fit == "copy" { // logits_fn answers from another copy of the model: nothing to judge
				r.env = []string{"FH_LOGITS=copy"}
			}
			res := r.exec(t)
			if fit == "copy" {
				ch := res.tel.Checks
				if res.code != 0 || ch == nil || ch.InitialLoss != nil || !strings.Contains(ch.InitialSkipped, "do not depend on the tensors training updates") {
					res.dump(t)
					t.Fatalf("exit %d, checks %+v: want the check skipped, saying why", res.code, ch)
				}
				return
			}
			if fit == "zero" {
				ch := res.tel.Checks
				if res.code != 0 || ch == nil || ch.InitialLoss == nil || *ch.InitialLoss < 4.1 || ch.InitialTensors != 6 || ch.InitialLossMin != 3.5 {
					res.dump(t)
					t.Fatalf("exit %d, checks %+v: want the initial model scored near ln(64) = 4.16 over 6 tensors", res.code, ch)
				}
				return
			}
			e := res.wantError(t, 1, ErrPretrain, "the model that started the clock was already fitted to data")
			for _, w := range []string{"the tensors it trains (6)", "ln(64) = 4.1589", "the limit is 3.5000", "compute them after it"} {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
		})
	}
}

// During validation logits_fn may not train, change a weight, or answer a
// window it has seen before differently.
func TestStatefulValidation(t *testing.T) {
	t.Parallel()
	cases := []struct{ logits, want string }{
		{"ttt", "a backward pass ran during the final validation (at train.py:"},
		{"mutate", "1 of 5 tensors that training updates changed during the final validation"},
		{"memo", "when it came again later in the final validation, and the same on a third call: logits_fn keeps state"},
	}
	for _, c := range cases {
		t.Run(c.logits, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFast)
			r.env = []string{"FH_LOGITS=" + c.logits}
			e := r.exec(t).wantError(t, 1, ErrStatefulEval, c.want)
			if c.logits == "memo" && !strings.Contains(e.Message, "position") {
				t.Errorf("message %q does not say where", e.Message)
			}
		})
	}
	// The same in an intermediate validation with the probe on: the run
	// stops there.
	t.Run("intermediate", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.ValEvery = 5
		r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
		r.env = []string{"FH_LOGITS=ttt", "FH_STEPS=10"}
		e := r.exec(t).wantError(t, 1, ErrStatefulEval, "during the validation after step 5")
		if e.Step != 5 {
			t.Errorf("error at step %d, want 5", e.Step)
		}
	})
}

// Logits that differ between two calls on the same input fail the run
// unless the config allows it.
func TestNondeterministicLogits(t *testing.T) {
	t.Parallel()
	t.Run("rechecks", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		r.env = []string{"FH_LOGITS=noise"}
		r.exec(t).wantError(t, 1, ErrNondeterministic, "logits_fn gave different logits for the same input")
	})
	t.Run("probe", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
		r.env = []string{"FH_LOGITS=noise", "FH_STEPS=3"}
		e := r.exec(t).wantError(t, 1, ErrNondeterministic, "in the final validation: validation batch")
		if !strings.Contains(e.Message, "of the logit scale") {
			t.Errorf("message %q does not say how much", e.Message)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
		r.cfg.Verify.AllowNondeterministic = true
		r.env = []string{"FH_LOGITS=noise", "FH_STEPS=3"}
		res := r.exec(t)
		if p := res.tel.Probe; res.code != 0 || p == nil || !p.OK || p.NoiseFloor == 0 || p.Tolerance < 4*p.NoiseFloor {
			res.dump(t)
			t.Fatalf("exit %d, probe %+v", res.code, p)
		}
	})
}

// A model that looks at another row of the batch, only in batches of the
// validation's shape, is caught by the probe's cross-row check.
func TestCrossRowLeak(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
	r.env = []string{"FH_LOGITS=rows", "FH_STEPS=3"}
	res := r.exec(t)
	p := res.tel.Probe
	if res.code != 0 || p == nil {
		res.dump(t)
		t.Fatalf("exit %d, probe %+v", res.code, p)
	}
	l := p.Leak
	if p.OK || p.Fault != ProbeFaultLeak || l == nil || l.Kind != "row" || l.Row == l.SourceRow || l.Size <= p.Tolerance ||
		!strings.Contains(p.Message, "rows must be independent") {
		t.Fatalf("probe %+v, leak %+v", p, l)
	}
	// Row i sees row i-1: the row after the replaced one moves.
	if l.Row != l.SourceRow+1 {
		t.Errorf("leak in row %d from row %d; want the next row", l.Row, l.SourceRow)
	}
}

func TestCompileBudget(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.cfg.CompileBudgetMs = 1 // importing torch alone takes longer
	e := r.exec(t).wantError(t, 1, ErrCompileBudget, "over the track's compile budget of 1 ms")
	if !strings.Contains(e.Traceback, "train.py") {
		t.Errorf("traceback does not name the program:\n%s", e.Traceback)
	}
}

// The validation shard through an inherited descriptor: the harness reads
// it and closes it before the program runs, and the config names no path.
func TestValidationDescriptor(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T, r *run) {
		f, err := os.Open(r.cfg.ValFile)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r.files = []*os.File{f}
		r.cfg.ValFile, r.cfg.ValFD = "", 3
	}
	t.Run("one process", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
		open(t, r)
		r.env = []string{"FH_FD=3", "FH_STEPS=5"}
		res := r.exec(t)
		if res.code != 0 || res.tel.Final == nil {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
		// The descriptor number may be reused (the telemetry file), but not
		// by the shard.
		if !strings.Contains(res.stdout, "fd: ") || strings.Contains(res.stdout, "fd: shard") ||
			strings.Contains(res.stdout, "val_file") {
			t.Errorf("the program found the shard at its descriptor or a val path in the config:\n%s", res.stdout)
		}
		if v := res.tel.Final.ValLoss; math.IsNaN(v) || v <= 0 || res.tel.Final.ValTokens != 4096 {
			t.Errorf("final %+v", res.tel.Final)
		}
		b, err := os.ReadFile(r.dir + "/" + ConfigFile)
		if err != nil || strings.Contains(string(b), "val_000000") {
			t.Errorf("config.json names the validation shard (%v):\n%s", err, b)
		}
		if p := res.tel.Probe; p == nil || !p.OK {
			t.Errorf("probe %+v", p)
		}
	})
	t.Run("workers", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.WorldSize = 2
		r.shiftValidation(t)
		open(t, r)
		res := r.exec(t)
		if res.code != 0 || res.tel.Final == nil {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
		r.checkShiftValidation(t, res, 2)
	})
	t.Run("not inherited", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		r.cfg.ValFile, r.cfg.ValFD = "", 3
		r.exec(t).wantError(t, 2, ErrConfig, "descriptor 3, but it is not open in this process")
	})
}
