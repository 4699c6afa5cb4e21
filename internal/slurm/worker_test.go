package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/executortest"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// workerJobs lists the worker jobs the executor's folder saw: one output
// file each.
func workerJobs(t *testing.T, x *Executor) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(x.Dir, "workers", "*", "worker-*.out"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Phases run by workers pass the executor contract as jobs of their own
// do, and fewer jobs than phases ran them.
func TestWorkerContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training programs in Slurm workers")
	}
	x := testExecutor(t)
	x.Workers = Workers{N: 2, Idle: 20 * time.Second}
	t.Cleanup(func() { x.Close() })
	executortest.Run(t, x, executortest.Options{})
	phases, _ := filepath.Glob(filepath.Join(x.Dir, "frontier-*", reportName))
	jobs := workerJobs(t, x)
	t.Logf("%d phases ran in %d worker jobs", len(phases), len(jobs))
	if len(jobs) == 0 || len(jobs) >= len(phases) {
		t.Errorf("%d phases ran in %d worker jobs: want fewer jobs than phases", len(phases), len(jobs))
	}
}

// tinyData is the tiny track's data, built once per test binary for the
// tests that run a phase of its reference (a build is about 11 s of CPU);
// the phases only read it. TestMain removes it.
var tinyData struct {
	once  sync.Once
	dir   string
	files *eval.DataFiles
	err   error
}

// tinyFiles returns the tiny track's data, built on first use.
func tinyFiles(t *testing.T, spec *track.Spec) *eval.DataFiles {
	t.Helper()
	tinyData.once.Do(func() {
		if tinyData.dir, tinyData.err = os.MkdirTemp("", "slurmtest-data-"); tinyData.err != nil {
			return
		}
		tinyData.files, tinyData.err = (&eval.LocalData{Dirs: map[string]string{spec.Name: tinyData.dir}}).Resolve(context.Background(), spec)
	})
	if tinyData.err != nil {
		t.Fatal(tinyData.err)
	}
	return tinyData.files
}

// removeTinyData removes the tiny track's data, if a test built it.
func removeTinyData() {
	if tinyData.dir != "" {
		os.RemoveAll(tinyData.dir)
	}
}

// tinyPhase is the fast phase of the tiny track's reference.
func tinyPhase(t *testing.T, key string) eval.PhaseJob {
	t.Helper()
	spec, err := track.NewRegistry(tracks.FS).Get("tiny")
	if err != nil {
		t.Fatal(err)
	}
	files := tinyFiles(t, spec)
	src, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	return eval.PhaseJob{Track: spec, Data: files, Program: src, Name: "train.py", Mode: "fast",
		Limit: spec.Limits.FastCheck.D(), Key: key + "-" + filepath.Base(t.TempDir()), Seed: 1}
}

// A worker cancelled while it runs a phase (by an administrator, or its
// node taken away) gives the phase back: another worker runs it from the
// start, and the phase's result is that run's.
func TestWorkerLostPhaseRunsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a training program in Slurm workers")
	}
	x := testExecutor(t)
	x.Workers = Workers{N: 1, Idle: 20 * time.Second}
	t.Cleanup(func() { x.Close() })
	job := tinyPhase(t, "worker-lost")
	done := make(chan struct{})
	var run *eval.PhaseRun
	var err error
	go func() {
		defer close(done)
		run, err = x.Execute(context.Background(), job)
	}()
	// Cancel the worker once it holds the phase.
	var first string
	for deadline := time.Now().Add(3 * time.Minute); first == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no worker claimed the phase")
		}
		m, _ := filepath.Glob(filepath.Join(x.Dir, "workers", "*", "claimed", "*", x.jobName(job)))
		if len(m) > 0 {
			first = filepath.Base(filepath.Dir(m[0]))
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if err := x.Client.Cancel(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if run.Program.Status != runner.StatusOK || !strings.Contains(string(run.Telemetry), `"event":"final"`) {
		t.Errorf("the phase after its worker was cancelled: %+v\n%s", run.Program, run.Telemetry)
	}
	if jobs := workerJobs(t, x); len(jobs) != 2 {
		t.Errorf("worker jobs %v: want the cancelled one and one more", jobs)
	}
}

// A frontier that gives up on a queued or running phase takes it out of
// the queue, or has its worker stop it; the worker lives on for the next.
func TestWorkerCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a training program in Slurm workers")
	}
	x := testExecutor(t)
	x.Workers = Workers{N: 1, Idle: 30 * time.Second}
	t.Cleanup(func() { x.Close() })
	job := tinyPhase(t, "worker-cancel")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := x.Execute(ctx, job)
		done <- err
	}()
	var claimed []string
	for deadline := time.Now().Add(3 * time.Minute); len(claimed) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no worker claimed the phase")
		}
		claimed, _ = filepath.Glob(filepath.Join(x.Dir, "workers", "*", "claimed", "*", x.jobName(job)))
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled phase returned no error")
	}
	cdir := filepath.Dir(filepath.Dir(filepath.Dir(claimed[0])))
	// The worker stops the phase within seconds and lets it go, with no
	// result for anyone to read.
	start := time.Now()
	for exists(claimed[0]) {
		if time.Since(start) > time.Minute {
			t.Fatal("the worker did not stop the cancelled phase")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the worker stopped the phase %v after the cancel", time.Since(start).Round(10*time.Millisecond))
	if exists(doneFile(cdir, x.jobName(job))) || exists(filepath.Join(x.Dir, x.jobName(job), reportName)) {
		t.Error("a cancelled phase left a result")
	}
	// The same worker runs the next phase.
	next := tinyPhase(t, "worker-cancel-next")
	run, err := x.Execute(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if run.Program.Status != runner.StatusOK {
		t.Errorf("the next phase: %+v", run.Program)
	}
	if jobs := workerJobs(t, x); len(jobs) != 1 {
		t.Errorf("worker jobs %v: want the one that ran both", jobs)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Workers that cannot start (here a frontier that exits at once) are not
// submitted again forever: after a few in a row, the phases waiting for
// them fail with what the last one said.
func TestWorkersFailingAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("submits Slurm jobs")
	}
	x := testExecutor(t)
	bin := filepath.Join(t.TempDir(), "frontier")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'frontier: no Python with PyTorch on this node' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	x.Frontier = bin
	x.Workers = Workers{N: 1, Idle: 20 * time.Second}
	t.Cleanup(func() { x.Close() })
	_, err := x.Execute(context.Background(), tinyPhase(t, "worker-fails"))
	if err == nil || !strings.Contains(err.Error(), "worker jobs in a row") || !strings.Contains(err.Error(), "no Python with PyTorch") {
		t.Fatalf("Execute: %v, want the workers' failure with what they said", err)
	}
	if jobs := workerJobs(t, x); len(jobs) != maxWorkerFailures {
		t.Errorf("worker jobs %v: want %d", jobs, maxWorkerFailures)
	}
	// The next phase of the class fails at once, without a new worker.
	if _, err := x.Execute(context.Background(), tinyPhase(t, "worker-fails-next")); err == nil {
		t.Error("a phase of a broken class ran")
	}
	if jobs := workerJobs(t, x); len(jobs) != maxWorkerFailures {
		t.Errorf("worker jobs after the next phase %v: want %d", jobs, maxWorkerFailures)
	}
}
