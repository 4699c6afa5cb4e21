package eval

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/testdeps"
	"github.com/frontier-bench/frontier/internal/track"
)

func TestNodeGPUs(t *testing.T) {
	cases := []struct {
		configured, inherited string
		probed                int
		want                  []int
		err                   string
	}{
		{"", "", 0, []int{}, ""},
		{"", "", 4, []int{0, 1, 2, 3}, ""},
		{"", "2,3", 2, []int{2, 3}, ""},
		{"", "1,5,7", 2, []int{1, 5}, ""}, // the probe saw fewer than listed
		{"0, 2", "5,6", 8, []int{0, 2}, ""},
		{"", "GPU-8f3e", 1, nil, "frontier.yaml"},
		{"0,x", "", 1, nil, "configured GPUs"},
	}
	for _, c := range cases {
		got, err := NodeGPUs(c.configured, c.inherited, c.probed)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("NodeGPUs(%q, %q, %d) err = %v, want %q", c.configured, c.inherited, c.probed, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("NodeGPUs(%q, %q, %d) = %v, %v; want %v", c.configured, c.inherited, c.probed, got, err, c.want)
		}
	}
}

// started is one process the fake runner is running.
type started struct {
	devices string // CUDA_VISIBLE_DEVICES, "(unset)" when absent
	release chan struct{}
}

// gpuRunner is a fake runner: it reports each job's devices, waits until
// the test releases the job, and writes a harness result so that the
// evaluation ends acceptable.
type gpuRunner struct {
	starts chan started
}

func (g *gpuRunner) Run(ctx context.Context, j runner.Job) (runner.Result, error) {
	devs := "(unset)"
	for _, kv := range j.Env {
		if v, ok := strings.CutPrefix(kv, "CUDA_VISIBLE_DEVICES="); ok {
			devs = v
		}
	}
	s := started{devices: devs, release: make(chan struct{})}
	g.starts <- s
	select {
	case <-s.release:
	case <-ctx.Done():
		return runner.Result{Status: runner.StatusCanceled}, nil
	}
	return runner.Result{Status: runner.StatusOK, Wall: time.Second}, nil
}

// fakeData names small shards: the fake runner reads nothing, but the
// judge reads the validation text before the program starts.
type fakeData struct{ dir string }

func newFakeData(t *testing.T) fakeData {
	dir := t.TempDir()
	for _, f := range []string{"train_000001.bin", "val_000000.bin"} {
		if err := data.WriteShardFile(filepath.Join(dir, f), make([]uint16, 9000)); err != nil {
			t.Fatal(err)
		}
	}
	return fakeData{dir}
}

func (d fakeData) Resolve(context.Context, *track.Spec) (*DataFiles, error) {
	return &DataFiles{Train: []string{filepath.Join(d.dir, "train_000001.bin")}, Val: filepath.Join(d.dir, "val_000000.bin")}, nil
}

func gpuEvaluator(t *testing.T, devices ...int) (*Evaluator, *gpuRunner) {
	t.Helper()
	pool, err := runner.NewGPUPool(devices)
	if err != nil {
		t.Fatal(err)
	}
	g := &gpuRunner{starts: make(chan started, 8)}
	if shared.err != nil {
		testdeps.Missing(t, "torch", "no Python with NumPy for the judge: %v", shared.err)
	}
	return &Evaluator{Executor: NewNode(&Local{Runner: g, Python: shared.python.Path, GPUs: pool}), Python: shared.python.Path,
		RunsDir: t.TempDir(), Data: newFakeData(t)}, g
}

func cudaTrack(t *testing.T, gpus int) *track.Spec {
	s := testTrack(t, 3.0)
	s.Name = fmt.Sprintf("cuda%d", gpus)
	s.Hardware = track.Hardware{Device: "cuda", GPUs: gpus}
	s.Launcher = track.Launcher{Kind: "torchrun", NProcPerNode: gpus}
	return s
}

func waitStart(t *testing.T, g *gpuRunner) started {
	t.Helper()
	select {
	case s := <-g.starts:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no process started within 10s")
	}
	return started{}
}

func noStart(t *testing.T, g *gpuRunner, within time.Duration) {
	t.Helper()
	select {
	case s := <-g.starts:
		t.Fatalf("a process started on %q while its GPUs were busy", s.devices)
	case <-time.After(within):
	}
}

// evaluateAsync runs an evaluation (full run only) in the background. The
// fake runner never talks to the judge: the program "exited without a
// result", which is what these tests expect besides where it ran.
func evaluateAsync(ctx context.Context, ev *Evaluator, spec *track.Spec) <-chan error {
	done := make(chan error, 1)
	go func() {
		res, err := ev.Evaluate(ctx, Request{Track: spec, Program: []byte("print(1)\n"), Name: "p.py", SkipFast: true})
		if err == nil && res.Verdict != NoResult {
			err = fmt.Errorf("verdict %s: %s", res.Verdict, res.Reason)
		}
		done <- err
	}()
	return done
}

func TestGPUsSideBySide(t *testing.T) {
	ev, g := gpuEvaluator(t, 0, 1)
	ctx := context.Background()

	// Two one-GPU evaluations on a two-GPU node run at the same time, on
	// different devices.
	d1 := evaluateAsync(ctx, ev, cudaTrack(t, 1))
	d2 := evaluateAsync(ctx, ev, cudaTrack(t, 1))
	a, b := waitStart(t, g), waitStart(t, g)
	if got := []string{a.devices, b.devices}; !slices.Contains(got, "0") || !slices.Contains(got, "1") {
		t.Fatalf("devices %v, want 0 and 1", got)
	}

	// A two-GPU evaluation waits until both are free.
	d3 := evaluateAsync(ctx, ev, cudaTrack(t, 2))
	noStart(t, g, 300*time.Millisecond)
	// a may be either evaluation's process: wait for whichever ends.
	close(a.release)
	var rest <-chan error
	select {
	case err := <-d1:
		if err != nil {
			t.Fatal(err)
		}
		rest = d2
	case err := <-d2:
		if err != nil {
			t.Fatal(err)
		}
		rest = d1
	}
	noStart(t, g, 300*time.Millisecond)
	close(b.release)
	if err := <-rest; err != nil {
		t.Fatal(err)
	}
	c := waitStart(t, g)
	if c.devices != "0,1" {
		t.Fatalf("two-GPU run on %q", c.devices)
	}

	// A cpu track sees no GPU and does not wait for one.
	d4 := evaluateAsync(ctx, ev, testTrack(t, 3.0))
	cpu := waitStart(t, g)
	if cpu.devices != "" {
		t.Fatalf("cpu track sees CUDA_VISIBLE_DEVICES=%q", cpu.devices)
	}
	close(cpu.release)
	close(c.release)
	for _, d := range []<-chan error{d3, d4} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
}

func TestGPUsLogContract(t *testing.T) {
	ev, g := gpuEvaluator(t, 3, 5)
	spec := cudaTrack(t, 2)
	spec.Contract = "log"
	spec.Data.ValTokens = 8192
	spec.Limits.FastValTokens = 1024
	done := make(chan *Result, 1)
	go func() {
		res, err := ev.Evaluate(context.Background(), Request{Track: spec, Program: readTestdata(t, "speedrun_mini.py"), Name: "m.py", SkipFast: true})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	s := waitStart(t, g)
	if s.devices != "3,5" {
		t.Fatalf("log-contract run on %q", s.devices)
	}
	close(s.release)
	// The fake runner printed nothing: no result, and the devices are back.
	if res := <-done; res == nil || res.Verdict != NoResult {
		t.Fatalf("result %+v", res)
	}
	devs, release, err := ev.Executor.(Node).Harness.(*Local).GPUs.Acquire(context.Background(), 2)
	if err != nil || !slices.Equal(devs, []int{3, 5}) {
		t.Fatalf("devices not released: %v, %v", devs, err)
	}
	release()
}

func TestGPUsErrors(t *testing.T) {
	ev, g := gpuEvaluator(t, 0)
	_, err := ev.Evaluate(context.Background(), Request{Track: cudaTrack(t, 2), Program: []byte("print(1)\n"), Name: "p.py", SkipFast: true})
	if err == nil || !strings.Contains(err.Error(), "needs 2 GPUs but this node's pool has 1") {
		t.Fatalf("err = %v", err)
	}

	// Waiting for a busy GPU ends with the context.
	hold := evaluateAsync(context.Background(), ev, cudaTrack(t, 1))
	s := waitStart(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = ev.Evaluate(ctx, Request{Track: cudaTrack(t, 1), Program: []byte("print(1)\n"), Name: "p.py", SkipFast: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	close(s.release)
	if err := <-hold; err != nil {
		t.Fatal(err)
	}

	// Without a pool, a cuda track sees what frontier sees.
	t.Setenv("CUDA_VISIBLE_DEVICES", "4")
	ev.Executor.(Node).Harness.(*Local).GPUs = nil
	d := evaluateAsync(context.Background(), ev, cudaTrack(t, 1))
	if s := waitStart(t, g); s.devices != "4" {
		t.Fatalf("devices %q", s.devices)
	} else {
		close(s.release)
	}
	if err := <-d; err != nil {
		t.Fatal(err)
	}
}

func TestComparable(t *testing.T) {
	r := func(class, hash, level string) *Result {
		return &Result{FingerprintClass: class, Track: TrackInfo{Hash: hash}, Verification: level}
	}
	a := r("cuda|8x NVIDIA H100 80GB HBM3|torch 2.9.0|cuda 12.6", "h1", "full")
	cases := []struct {
		b    *Result
		want bool
	}{
		{r("cuda|8x NVIDIA H100 80GB HBM3|torch 2.9.0|cuda 12.6", "h1", "full"), true},
		{r("cuda|8x NVIDIA H200|torch 2.9.0|cuda 12.6", "h1", "full"), false},
		{r("cuda|8x NVIDIA H100 80GB HBM3|torch 2.10.0|cuda 12.6", "h1", "full"), false},
		{r("cuda|8x NVIDIA H100 80GB HBM3|torch 2.9.0|cuda 12.6", "h2", "full"), false},
		{r("cuda|8x NVIDIA H100 80GB HBM3|torch 2.9.0|cuda 12.6", "h1", "log"), false},
		{nil, false},
	}
	for i, c := range cases {
		if got := Comparable(a, c.b); got != c.want {
			t.Errorf("case %d: Comparable = %v, want %v", i, got, c.want)
		}
	}
	if Comparable(r("", "h1", "full"), r("", "h1", "full")) {
		t.Error("results without a fingerprint class compared")
	}
}
