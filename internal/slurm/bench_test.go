package slurm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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
