package slurm

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/executortest"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// testNode is the executor a node's frontier builds: this node's Python
// and sandbox.
func testNode(ctx context.Context) (eval.Executor, error) {
	py, err := pyenv.Find(ctx, "")
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.Wrap(ctx, runner.NewLocal(nil), sandbox.ModeAuto, sandbox.Options{})
	if err != nil {
		return nil, err
	}
	local := &eval.Local{Runner: sb, Python: py.Path, Sandbox: string(sb.Mode()), Visible: py.Paths, Env: py.ProgramEnv(), BLAS: py.BLASName()}
	return eval.NewNode(local), nil
}

// servePhase is phase-exec as the frontier binary runs it on a node: this
// node's executor (its Python, its sandbox) runs the phase in dir.
func servePhase(dir string) int {
	ctx := context.Background()
	node, err := testNode(ctx)
	if err == nil {
		err = ServePhase(ctx, dir, node)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveWorker is phase-worker as the frontier binary runs it on a node.
func serveWorker(args []string) int {
	fs := flag.NewFlagSet("phase-worker", flag.ContinueOnError)
	var opt WorkerOptions
	fs.DurationVar(&opt.Limit, "limit", 0, "")
	fs.DurationVar(&opt.Idle, "idle", 0, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: phase-worker [--limit D] [--idle D] DIR", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	node, err := testNode(ctx)
	if err == nil {
		err = ServeWorker(ctx, fs.Arg(0), node, opt, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testExecutor runs phases on the test cluster, with this test binary as
// the frontier of the nodes.
func testExecutor(t *testing.T) *Executor {
	t.Helper()
	tc := newTestCluster(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Executor{Client: tc.c, Frontier: exe, Dir: filepath.Join(t.TempDir(), "slurm")}
}

// The Slurm executor passes the executor contract: the same programs get
// the same verdicts as on this machine's executor.
func TestExecutorContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training programs as Slurm jobs")
	}
	executortest.Run(t, testExecutor(t), executortest.Options{})
}

// firstExecutorEnv, when set, makes the test binary a frontier that runs
// the phase in it (JSON, with the executor's folder) and is killed by the
// test while the job is in flight.
const firstExecutorEnv = "FRONTIER_SLURM_TEST_FIRST_EXECUTOR"

type firstPhase struct {
	Dir string        `json:"dir"`
	Job eval.PhaseJob `json:"job"`
}

func firstExecutor(phase string) int {
	var p firstPhase
	if err := json.Unmarshal([]byte(phase), &p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	exe, _ := os.Executable()
	x := &Executor{Client: &Client{Poll: time.Second}, Frontier: exe, Dir: p.Dir}
	_, err := x.Execute(context.Background(), p.Job)
	fmt.Println(err)
	return 1 // the test kills it before
}

// A frontier killed while a phase's job is in flight leaves the job to
// Slurm; a new one asked for the same evaluation (the same key) finds the
// job, follows it and reads its result, without submitting another.
func TestExecutorResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a training program as a Slurm job")
	}
	x := testExecutor(t)
	spec, err := track.NewRegistry(tracks.FS).Get("tiny")
	if err != nil {
		t.Fatal(err)
	}
	files := tinyFiles(t, spec)
	src, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	job := eval.PhaseJob{Track: spec, Data: files, Program: src, Name: "train.py", Mode: "fast",
		Limit: spec.Limits.FastCheck.D(), Key: "resume-test-" + filepath.Base(t.TempDir()), Seed: 1}
	b, _ := json.Marshal(firstPhase{Dir: x.Dir, Job: job})
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), firstExecutorEnv+"="+string(b))
	proc.Stdout, proc.Stderr = os.Stderr, os.Stderr
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	name := x.jobName(job)
	var found []Info
	for deadline := time.Now().Add(2 * time.Minute); len(found) == 0 || found[0].State != Running; {
		if time.Now().After(deadline) {
			proc.Process.Kill()
			t.Fatalf("the first frontier's job does not run: %+v", found)
		}
		time.Sleep(200 * time.Millisecond)
		found, _ = x.Client.Find(context.Background(), name, time.Hour)
	}
	proc.Process.Kill()
	proc.Wait()

	run, err := x.Execute(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	after, err := x.Client.Find(context.Background(), name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].ID != found[0].ID {
		t.Errorf("jobs of the phase after the resume: %+v, want only the first one (%s)", after, found[0].ID)
	}
	if run.Program.Status != runner.StatusOK || !strings.Contains(string(run.Telemetry), `"event":"final"`) {
		t.Errorf("the resumed phase's run: %+v\n%s", run.Program, run.Telemetry)
	}
}
