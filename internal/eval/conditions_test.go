package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/hostload"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/store"
)

// A phase's conditions say what the rest of the machine took while the
// program ran: the machine's busy time less the program's and the judge's.
func TestConditionsOf(t *testing.T) {
	at := time.Now()
	start := hostload.Sample{At: at, LoadAvg: []float64{1.5, 1, 0.5}, Busy: 100 * time.Second, Steal: time.Second, OK: true, CPUs: 2}
	end := hostload.Sample{At: at.Add(10 * time.Second), LoadAvg: []float64{3, 1.5, 0.75}, Busy: 118 * time.Second, Steal: 1500 * time.Millisecond, OK: true, CPUs: 2}
	rr := runner.Result{Wall: 10 * time.Second, CPU: 12 * time.Second, CPUSource: "procs"}
	c := conditionsOf(start, end, rr, time.Second)
	want := store.CPUUse{WallMs: 10000, OwnMs: 12000, OwnSource: "procs", OthersMs: 5000, StealMs: 500, CPUs: 2}
	if c == nil || c.CPU == nil || *c.CPU != want || c.LoadAvg[0] != 1.5 || c.LoadAvgEnd[0] != 3 {
		t.Fatalf("conditions %+v (cpu %+v), want cpu %+v and both load averages", c, c.CPU, want)
	}
	text := c.Summary()
	for _, w := range []string{"own CPU 12.00s (procs)", "others 0.50 of 2 CPUs", "steal 0.05", "load 1.50 -> 3.00"} {
		if !strings.Contains(text, w) {
			t.Errorf("%q lacks %q", text, w)
		}
	}
	// Without /proc/stat the load is all there is; without that too,
	// nothing.
	if c := conditionsOf(hostload.Sample{LoadAvg: []float64{1, 1, 1}}, hostload.Sample{}, rr, 0); c == nil || c.CPU != nil || c.Summary() != "load 1.00 -> ?" {
		t.Errorf("load only: %+v, %q", c, c.Summary())
	}
	if c := conditionsOf(hostload.Sample{}, hostload.Sample{}, runner.Result{}, 0); c != nil || c.Summary() != "" {
		t.Errorf("nothing known: %+v", c)
	}
}

// The report and the result show the program's CPU time beside its wall
// time, and each phase the load it ran under.
func TestReportShowsConditions(t *testing.T) {
	cond := &store.Conditions{LoadAvg: []float64{2, 1, 1}, LoadAvgEnd: []float64{2.5, 1, 1},
		CPU: &store.CPUUse{WallMs: 80000, OwnMs: 150000, OwnSource: "cgroup", OthersMs: 40000, CPUs: 2}}
	res := &Result{Verdict: Acceptable, Full: &Phase{Mode: "full", Status: runner.StatusOK, WallMs: 80000, Conditions: cond}}
	o := &phaseOutcome{phase: res.Full, tel: &harness.Telemetry{}}
	(&Evaluator{}).fill(res, o)
	if res.Metrics.CPUMs != 150000 || res.TimedConditions() != cond {
		t.Fatalf("metrics %+v, timed conditions %+v", res.Metrics, res.TimedConditions())
	}
	res.Metrics.TrainTimeMs, res.Metrics.Steps = 70000, 100
	var b strings.Builder
	if err := WriteReport(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"wall 1m20.0s, CPU 2m30.0s", "ran under: own CPU 150.00s (cgroup), others 0.50 of 2 CPUs, load 2.00 -> 2.50"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
}
