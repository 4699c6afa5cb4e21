package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// BenchmarkSubmitToStart measures, one job at a time, how long a trivial
// job takes from the call to Run to the first instruction of its command
// (read from the command's own clock: the node is this machine), and to
// the moment Run returns its end. Run it with a fixed count:
//
//	go test -run '^$' -bench SubmitToStart -benchtime 12x ./internal/slurm/
//
// It reports the median, the quartiles, the smallest and the largest, in
// seconds: "after-a-job" submits each job as soon as the one before has
// ended (the next phase of an evaluation, on a cluster of one free node),
// "idle" after the node has been idle for 3 s.
func BenchmarkSubmitToStart(b *testing.B) {
	tc := newTestCluster(b)
	tc.c.Log = nil
	b.Run("after-a-job", func(b *testing.B) { benchStart(b, tc, 0) })
	b.Run("idle", func(b *testing.B) { benchStart(b, tc, 3*time.Second) })
}

func benchStart(b *testing.B, tc *testCluster, pause time.Duration) {
	var toStart, toEnd []float64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		time.Sleep(pause)
		b.StartTimer()
		dir := b.TempDir()
		s := Spec{
			Name: "ft-bench-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(int(pause.Seconds())) + "-" + strconv.Itoa(i), Argv: []string{"/bin/sh", "-c", "date +%s%N > start"},
			Dir: dir, CPUs: 1, Memory: 64 << 20, TimeLimit: time.Minute,
		}
		t0 := time.Now()
		res, err := tc.c.Run(context.Background(), s, nil)
		if err != nil || !res.OK() {
			b.Fatalf("%v: %+v", err, res)
		}
		end := time.Since(t0)
		out, err := os.ReadFile(filepath.Join(dir, "start"))
		if err != nil {
			b.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		toStart = append(toStart, time.Unix(0, ns).Sub(t0).Seconds())
		toEnd = append(toEnd, end.Seconds())
	}
	report := func(xs []float64, name string) {
		slices.Sort(xs)
		q := func(p float64) float64 { return xs[int(p*float64(len(xs)-1)+0.5)] }
		b.ReportMetric(q(0.5), name+"-median-s")
		b.ReportMetric(q(0.25), name+"-q1-s")
		b.ReportMetric(q(0.75), name+"-q3-s")
		b.ReportMetric(xs[0], name+"-min-s")
		b.ReportMetric(xs[len(xs)-1], name+"-max-s")
	}
	report(toStart, "start")
	report(toEnd, "end")
}

// BenchmarkPhaseWait measures, per evaluation phase, the time from
// Execute to the phase's start on the node (PhaseRun.Waited) and to
// Execute's return, with a job per phase and with a worker, alternating
// one phase of each so that both see the same machine:
//
//	go test -run '^$' -bench PhaseWait -benchtime 10x ./internal/slurm/
//
// The phase's program exits at once: what is measured is the way to the
// node and back, not training. The worker's first phase, which waits for
// the worker's own job to start, is reported apart ("worker-first").
func BenchmarkPhaseWait(b *testing.B) {
	tc := newTestCluster(b)
	tc.c.Log = nil
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	perJob := &Executor{Client: tc.c, Frontier: exe, Dir: filepath.Join(dir, "jobs")}
	byWorker := &Executor{Client: tc.c, Frontier: exe, Dir: filepath.Join(dir, "workers"), Workers: Workers{N: 1, Idle: 2 * time.Minute}}
	defer byWorker.Close()
	base := tinyPhaseB(b)
	var wait, total = map[string][]float64{}, map[string][]float64{}
	run := func(name string, x *Executor, i int) {
		job := base
		job.Key = fmt.Sprintf("bench-%s-%d-%d", name, os.Getpid(), i)
		t0 := time.Now()
		r, err := x.Execute(context.Background(), job)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if name == "worker" && i == 0 {
			name = "worker-first"
		}
		wait[name] = append(wait[name], r.Waited.Seconds())
		total[name] = append(total[name], time.Since(t0).Seconds())
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			run("job", perJob, i)
			run("worker", byWorker, i)
		} else {
			run("worker", byWorker, i)
			run("job", perJob, i)
		}
	}
	for _, name := range []string{"job", "worker", "worker-first"} {
		for _, m := range []struct {
			what string
			xs   []float64
		}{{"wait", wait[name]}, {"total", total[name]}} {
			xs := m.xs
			if len(xs) == 0 {
				continue
			}
			slices.Sort(xs)
			q := func(p float64) float64 { return xs[int(p*float64(len(xs)-1)+0.5)] }
			b.ReportMetric(q(0.5), name+"-"+m.what+"-median-s")
			if len(xs) > 2 {
				b.ReportMetric(q(0.25), name+"-"+m.what+"-q1-s")
				b.ReportMetric(q(0.75), name+"-"+m.what+"-q3-s")
			}
			b.Logf("%s %s (s, n=%d): %.2f", name, m.what, len(xs), xs)
		}
	}
}

// tinyPhaseB is a phase of the tiny track whose program exits at once.
func tinyPhaseB(b *testing.B) eval.PhaseJob {
	spec, err := track.NewRegistry(tracks.FS).Get("tiny")
	if err != nil {
		b.Fatal(err)
	}
	files, err := (&eval.LocalData{Dirs: map[string]string{spec.Name: b.TempDir()}}).Resolve(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	// One CPU each, so that the idle worker's job and a phase's job fit
	// on the test cluster's node side by side: otherwise a phase's job
	// would wait for the worker to give the node up.
	spec.Hardware.Threads = 1
	return eval.PhaseJob{Track: spec, Data: files, Program: []byte("raise SystemExit(0)\n"), Name: "train.py", Mode: "fast",
		Limit: spec.Limits.FastCheck.D(), Seed: 1}
}
