package eval

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

func builtin(t *testing.T, name string) *track.Spec {
	t.Helper()
	s, err := track.NewRegistry(tracks.FS).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNanogptTracks(t *testing.T) {
	cases := []struct {
		name   string
		target float64
		gpus   int
		kind   string
	}{
		{"nanogpt", 3.28, 8, "torchrun"},
		{"nanogpt-1gpu", 3.28, 1, "python"},
		{"nanogpt-medium", 2.92, 8, "torchrun"},
	}
	refs := map[string]string{}
	for _, c := range cases {
		s := builtin(t, c.name)
		d := s.Data
		if s.TargetValLoss != c.target || s.Hardware.Device != "cuda" || s.Hardware.GPUs != c.gpus || s.Launcher.Kind != c.kind ||
			s.Launcher.NProcPerNode != max(1, c.gpus*boolInt(c.kind == "torchrun")) || s.Contract != "harness" ||
			d.ValTokens != 10485760 || d.ValSeqLen != 1024 || d.VocabSize != 50257 || d.BOSID != 50256 ||
			d.Val != "fineweb_val_000000.bin" || d.Dir != "fineweb10B" {
			t.Errorf("%s: spec %+v", c.name, s)
		}
		files := &DataFiles{Train: []string{"/d/fineweb_train_000001.bin"}, Val: "/d/fineweb_val_000000.bin"}
		for _, mode := range []string{"fast", "full"} {
			if err := programConfig(s, files, 0, mode, "/run/full").Validate(); err != nil {
				t.Errorf("%s %s: %v", c.name, mode, err)
			}
			jc, err := judgeConfig(s, files, mode)
			if err == nil {
				jc.TelemetryFD, jc.ClientFDs = 3, []int{4}
				err = jc.Validate()
			}
			if err != nil {
				t.Errorf("%s %s judge: %v", c.name, mode, err)
			}
		}
		src, err := s.ReferenceSource()
		if err != nil {
			t.Fatal(err)
		}
		refs[c.name] = string(src)
	}
	if refs["nanogpt"] != refs["nanogpt-1gpu"] {
		t.Error("nanogpt and nanogpt-1gpu must run the same reference program")
	}
	// The medium reference differs only in its title and Hyperparameters.
	strip := func(s string) string {
		s = s[strings.Index(s, "\n"):]
		return hyperRE.ReplaceAllString(s, "")
	}
	if strip(refs["nanogpt"]) != strip(refs["nanogpt-medium"]) {
		t.Error("nanogpt-medium's reference differs from nanogpt's outside its Hyperparameters")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

var hyperRE = regexp.MustCompile(`(?s)@dataclass\nclass Hyperparameters:.*?\n\n\n`)

// shrink rewrites Hyperparameters fields ("name: type = value") of a
// program, the way a track variant for a small machine would.
func shrink(t *testing.T, src string, values map[string]string) []byte {
	t.Helper()
	for name, v := range values {
		re := regexp.MustCompile(`(?m)^(    ` + name + `: \w+ = )[^\n#]*`)
		if !re.MatchString(src) {
			t.Fatalf("no Hyperparameters field %s", name)
		}
		src = re.ReplaceAllString(src, "${1}"+v+" ")
	}
	return []byte(src)
}

// TestNanogptReferenceOnCPU runs the nanogpt reference program, shrunk to a
// tiny model, on two CPU processes (gloo, DistributedDataParallel) with two
// micro-batches of gradient accumulation per step, on the tiny data.
func TestNanogptReferenceOnCPU(t *testing.T) {
	ev := logEvaluator(t)
	spec := builtin(t, "nanogpt")
	src, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	prog := shrink(t, string(src), map[string]string{
		"n_layer": "2", "n_head": "2", "n_embd": "64", "seq_len": "64",
		"total_batch_tokens": "1024", "micro_batch_seqs": "4", // 2 processes x 2 micro-batches x 4 x 64
		"num_steps": "24", "lr": "3e-3", "warmup_steps": "2", "warmdown_steps": "8",
	})
	tiny := testTrack(t, 5.5)
	cpu := *spec
	cpu.Name = "logtest"
	cpu.Data = tiny.Data
	cpu.Hardware = track.Hardware{Device: "cpu", Threads: 1}
	cpu.Launcher = track.Launcher{Kind: "torchrun", NProcPerNode: 2}
	cpu.Limits = track.Limits{FastCheck: track.Duration(2 * time.Minute), FullRun: track.Duration(4 * time.Minute),
		CompileBudget: track.Duration(time.Minute), FastSteps: 2, FastValTokens: 1024}
	cpu.Telemetry = track.Telemetry{LogEvery: 8, ValEvery: 12, ProfileSteps: []int{4, 5}, TopK: 15}
	cpu.TargetValLoss = 5.5
	cpu.Verification.Probe = track.Probe{Enabled: true, Sequences: 2, Positions: 4}

	res, err := ev.Evaluate(context.Background(), Request{Track: &cpu, Program: prog, Name: "nanogpt/train_gpt.py"})
	if err != nil {
		t.Fatal(err)
	}
	requireAcceptable(t, res)
	if testing.Verbose() {
		var b strings.Builder
		WriteReport(&b, res)
		t.Logf("report:\n%s", b.String())
	}
	m := res.Metrics
	// 24 steps of 1024 tokens: the harness counts tokens over both processes.
	if m.Steps != 24 || m.Tokens != 24*1024 || m.ValTokens != tiny.Data.ValTokens || res.Fast.Steps != 2 {
		t.Fatalf("metrics %+v, fast %+v", m, res.Fast)
	}
	if len(res.Vals) != 2 || res.TopOps == nil || len(res.Sections) == 0 {
		t.Fatalf("vals %+v, top ops %v, sections %d", res.Vals, res.TopOps, len(res.Sections))
	}
	// The judge scored the model that started the clock.
	if c := res.Checks; c == nil || c.InitialLoss == nil || *c.InitialLoss < MinInitialLoss(&cpu) {
		t.Errorf("initial model: checks %+v", c)
	}
	var names []string
	for _, s := range res.Sections {
		names = append(names, s.Name)
	}
	if got := fmt.Sprint(names); !strings.Contains(got, "forward") || !strings.Contains(got, "optimizer") {
		t.Fatalf("sections %v", got)
	}
	if res.FingerprintClass == "" || res.Environment.Torch == "" {
		t.Fatalf("fingerprint class %q, environment %+v", res.FingerprintClass, res.Environment)
	}
}

// The initial-model limit of each built-in track lies between its target
// and an untrained model's ln(V), and reaches the harness's config.
func TestMinInitialLoss(t *testing.T) {
	for _, c := range []struct {
		name string
		want float64
	}{
		{"tiny", 5.0214}, // ln 256 = 5.5452, target 3.45
		{"nanogpt", 8.9387},
		{"nanogpt-medium", 8.8487},
	} {
		s := builtin(t, c.name)
		got := MinInitialLoss(s)
		if math.Abs(got-c.want) > 1e-4 {
			t.Errorf("%s: %.4f, want %.4f", c.name, got, c.want)
		}
		files := &DataFiles{Train: []string{"/d/train_000001.bin"}, Val: "/d/val_000000.bin"}
		if cfg, err := judgeConfig(s, files, "full"); err != nil || cfg.Verify.MinInitialLoss != got {
			t.Errorf("%s: judge config has %v (%v), want %v", c.name, cfg.Verify.MinInitialLoss, err, got)
		}
		s.Verification.MinInitialLoss = -1
		if got := MinInitialLoss(s); got != 0 {
			t.Errorf("%s: a negative limit turns the check off, got %v", c.name, got)
		}
		s.Verification.MinInitialLoss = 7
		if got := MinInitialLoss(s); got != 7 {
			t.Errorf("%s: the track's own limit, got %v", c.name, got)
		}
	}
	s := builtin(t, "tiny")
	s.TargetValLoss = 5.5 // close to ln(V) = 5.5452: the limit keeps 0.1 under it
	if got := MinInitialLoss(s); math.Abs(got-5.4452) > 1e-4 {
		t.Errorf("target near ln(V): %.4f, want 5.4452", got)
	}
	s.TargetValLoss = 6 // over ln(V): no limit can be told from the target
	if got := MinInitialLoss(s); got != 0 {
		t.Errorf("target over ln(V): %v, want 0 (off)", got)
	}
}
