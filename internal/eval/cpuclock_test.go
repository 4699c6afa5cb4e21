package eval

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

func TestTrainCPU(t *testing.T) {
	marks := func(ms ...any) *CPUReadings {
		r := &CPUReadings{Source: "procs"}
		for i := 0; i < len(ms); i += 3 {
			r.Marks = append(r.Marks, CPUMark{Mark: ms[i].(string), AtMs: float64(ms[i+1].(int)), CPUMs: float64(ms[i+2].(int))})
		}
		return r
	}
	cases := []struct {
		name    string
		r       *CPUReadings
		charged float64
		want    float64
		err     string
	}{
		{name: "one stretch", r: marks("begin", 1000, 500, "end", 11000, 18500), want: 18000},
		{name: "a designated validation left out", r: marks("begin", 0, 0, "pause", 4000, 8000, "resume", 5000, 8600, "end", 9000, 16600), want: 16000},
		// 400 ms charged of a validation that ran at 0.6 CPU per wall ms.
		{name: "charged at the validations' rate", r: marks("begin", 0, 0, "pause", 4000, 8000, "resume", 5000, 8600, "end", 9000, 16600), charged: 400, want: 16240},
		{name: "charged without a designated validation", r: marks("begin", 0, 0, "end", 10000, 15000), charged: 100, want: 15150},
		{name: "no end", r: marks("begin", 0, 0, "pause", 4000, 8000), err: "did not end"},
		{name: "out of order", r: marks("begin", 0, 0, "resume", 4000, 8000, "end", 5000, 9000), err: "out of order"},
		{name: "twice begun", r: marks("begin", 0, 0, "begin", 1, 1, "end", 5000, 9000), err: "out of order"},
		{name: "after the end", r: marks("begin", 0, 0, "end", 5000, 9000, "pause", 6000, 9500), err: "out of order"},
		{name: "a failed reading", r: &CPUReadings{Err: "at the clock's end: the job is not running"}, err: "not running"},
		{name: "nothing read", r: nil, err: "no CPU time"},
	}
	for _, c := range cases {
		got, err := trainCPU(c.r, c.charged)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, %v; want an error with %q", c.name, got, err, c.err)
		case c.err == "" && (err != nil || math.Abs(got-c.want) > 1e-9):
			t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// On a track timed by CPU time the run's time is the program's CPU time
// over the judge's train window: the designated validations are left out,
// and time spent waiting does not count.
func TestCPUClock(t *testing.T) {
	ev, st := newEvaluator(t)
	spec := testTrack(t, bigramTarget)
	spec.Hardware.Clock = track.ClockCPU
	spec.Telemetry.ValEvery = 40
	// 120 steps that each wait 20 ms: 2.4 s of wall time without work.
	res := evaluate(t, ev, spec, program(t, 120, "__import__(\"time\").sleep(0.02)\n    if fh.want_validation(step):\n        fh.validate(logits_fn)"))
	if res.Verdict != Acceptable {
		t.Fatalf("verdict %s: %s\n%s", res.Verdict, res.Reason, res.Traceback)
	}
	m, full := res.Metrics, res.Full
	if m.Clock != track.ClockCPU || full == nil || full.CPU == nil || m.TrainTimeMs != full.TrainCPUMs {
		t.Fatalf("clock %q, train time %v, full phase %+v: want the CPU clock's time", m.Clock, m.TrainTimeMs, full)
	}
	var marks []string
	for _, mk := range full.CPU.Marks {
		marks = append(marks, mk.Mark)
	}
	if got := strings.Join(marks, " "); got != "begin pause resume pause resume end" {
		t.Errorf("marks %q: want the two designated validations (steps 40 and 80) left out", got)
	}
	if m.TrainTimeMs <= 0 || m.TrainTimeMs > m.WallTrainMs-1500 {
		t.Errorf("CPU train time %.0f ms against %.0f ms of wall train time: the 2.4 s of waiting must not count", m.TrainTimeMs, m.WallTrainMs)
	}
	if m.CPUMs > 0 && m.TrainTimeMs > m.CPUMs {
		t.Errorf("CPU train time %.0f ms is more than the whole run's CPU time %.0f ms", m.TrainTimeMs, m.CPUMs)
	}
	rec, err := st.Evaluation(context.Background(), res.EvaluationID)
	if err != nil || rec.TrainTimeMs != m.TrainTimeMs {
		t.Fatalf("stored train time %v (%v): want the CPU time %v", rec.TrainTimeMs, err, m.TrainTimeMs)
	}
	var sb strings.Builder
	if err := WriteReport(&sb, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "of CPU  (the track's clock;") {
		t.Errorf("the report does not say the time is CPU time:\n%s", sb.String())
	}
}

// A program that ended before frontier heard the end of the clock (as one
// that exits right after its last answer does) is charged every CPU of the
// machine from the last periodic reading to when the end was heard: ending
// early hides nothing.
func TestCPUClockLateEnd(t *testing.T) {
	w := newCPUWatch()
	w.r.Marks = []CPUMark{{Mark: "begin", AtMs: 1000, CPUMs: 500}}
	w.last, w.lastAt = 20*time.Second, time.Now().Add(-400*time.Millisecond)
	w.observe([]byte(`{"event":"clock","mark":"end","at_ms":30000,"t_ms":30001}`))
	w.observe([]byte(`{"event":"clock","mark":"end","at_ms":1,"source":"program"}`)) // not the judge's
	w.ended(runner.Result{CPU: 19 * time.Second})
	r := w.readings()
	if len(r.Marks) != 2 || !r.Late || r.Err != "" {
		t.Fatalf("readings %+v: want begin and a late end", r)
	}
	min := 20000 + 400*float64(w.threads)
	if got := r.Marks[1].CPUMs; got < min {
		t.Errorf("late end read %.0f ms: want at least the last reading and %d CPUs busy since, %.0f ms", got, w.threads, min)
	}
	// The runner's account wins when it is larger.
	w = newCPUWatch()
	w.r.Marks = []CPUMark{{Mark: "begin", AtMs: 1000, CPUMs: 500}}
	w.observe([]byte(`{"event":"clock","mark":"end","at_ms":30000}`))
	w.ended(runner.Result{CPU: time.Hour})
	if r := w.readings(); r.Marks[1].CPUMs != 3600e3 {
		t.Errorf("late end read %.0f ms: want the runner's account of the run, 3600000", r.Marks[1].CPUMs)
	}
	// A mark that starts a stretch cannot be late: it is an error.
	w = newCPUWatch()
	w.observe([]byte(`{"event":"clock","mark":"begin","at_ms":10}`))
	if _, err := trainCPU(w.readings(), 0); err == nil || !strings.Contains(err.Error(), "begin") {
		t.Errorf("a begin read after the program ended: %v", err)
	}
}
