package eval

import (
	"time"

	"github.com/frontier-bench/frontier/internal/hostload"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/store"
)

// A timing on a shared machine depends on what else ran beside it: every
// phase records the load it ran under (conditions), and its own CPU time
// beside its wall time.

// meter samples the machine around one run of a program.
type meter struct {
	start    hostload.Sample
	judgePid int
	judge0   time.Duration
	judgeOK  bool
}

// startMeter samples the machine before a program starts. judgePid, when
// not 0, is the judge's process: its CPU time is the evaluation's, not
// other work's.
func startMeter(judgePid int) *meter {
	m := &meter{start: hostload.Now(), judgePid: judgePid}
	if judgePid > 0 {
		m.judge0, m.judgeOK = cpuOf(judgePid)
	}
	return m
}

// stop samples the machine again once the program ended and returns the
// conditions it ran under.
func (m *meter) stop(rr runner.Result) *store.Conditions {
	var judge time.Duration
	if m.judgeOK {
		if j1, ok := cpuOf(m.judgePid); ok {
			judge = max(j1-m.judge0, 0)
		}
	}
	end := hostload.Now()
	return conditionsOf(m.start, end, rr, judge)
}

// cpuOf is a process's CPU time, false when it cannot be read.
func cpuOf(pid int) (time.Duration, bool) {
	d, err := hostload.ProcessCPU(pid)
	return d, err == nil
}

// conditionsOf makes the conditions of a run from the machine's samples at
// its start and end, the runner's account of the program (its own CPU
// time) and the CPU time the judge took meanwhile.
func conditionsOf(start, end hostload.Sample, rr runner.Result, judge time.Duration) *store.Conditions {
	c := &store.Conditions{LoadAvg: start.LoadAvg, LoadAvgEnd: end.LoadAvg}
	if u, ok := hostload.Between(start, end, rr.CPU+judge); ok && rr.CPUSource != "" {
		c.CPU = &store.CPUUse{
			WallMs: ms(rr.Wall), OwnMs: ms(rr.CPU), OwnSource: rr.CPUSource,
			OthersMs: ms(u.Others), StealMs: ms(u.Steal), CPUs: u.CPUs,
		}
	}
	if c.LoadAvg == nil && c.LoadAvgEnd == nil && c.CPU == nil {
		return nil
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TimedConditions are the conditions of the phase whose time the result
// reports: the full run's, else the fast check's; nil when neither ran.
func (r *Result) TimedConditions() *store.Conditions {
	for _, ph := range []*Phase{r.Full, r.Fast} {
		if ph != nil && ph.Conditions != nil {
			return ph.Conditions
		}
	}
	return nil
}
