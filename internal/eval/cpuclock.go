package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
)

// On a track whose clock is CPU time (hardware.clock: cpu), the time of a
// run is the CPU time the program's processes took while the judge's clock
// ran, not the wall time: on a shared machine the wall time of the same
// program moves with the load beside it, its CPU time far less. The judge
// cannot see the program's processes, so it tells frontier at once when
// its clock begins, pauses for a designated validation, resumes and ends
// (the "clock" event); frontier reads the program's CPU time on each mark
// (runner.CPUMeter) and the judge's marks and the readings make the time.

// CPUMark is the program's CPU time when frontier heard one of the
// judge's clock marks.
type CPUMark struct {
	Mark string `json:"mark"` // begin, pause, resume or end
	// AtMs is the mark's moment on the judge's clock (ms since it started).
	AtMs  float64 `json:"at_ms"`
	CPUMs float64 `json:"cpu_ms"`
}

// CPUReadings are a phase's marks with the program's CPU time at each.
type CPUReadings struct {
	// Source is where the CPU time was read (runner.CPUMeter.Source).
	Source string    `json:"source"`
	Marks  []CPUMark `json:"marks"`
	// Err is the first reading that failed, "" when none did.
	Err string `json:"err,omitempty"`
	// Late says the end was heard after the program had ended, and read
	// from the last periodic reading or the runner's account of the run.
	Late bool `json:"late,omitempty"`
}

// cpuWatch takes the readings of one run of a program as the judge's
// marks arrive.
type cpuWatch struct {
	meter runner.CPUMeter
	mu    sync.Mutex
	r     CPUReadings
	// threads is how many CPUs the program could keep busy: the
	// machine's (a program may start more threads than its track says).
	threads int
	// late are the marks heard after the program had ended (it may end as
	// soon as it sent its last answer, before frontier heard the end), and
	// when each was heard. Each takes the last periodic reading plus every
	// thread busy from then until the mark was heard, or the runner's
	// account of the whole run if larger: never less than the truth, so
	// that ending early hides nothing.
	late   []int
	heard  []time.Time
	last   time.Duration // the latest periodic reading
	lastAt time.Time     // when it was taken
	ran    time.Duration // the runner's account, once the program ended
}

// newCPUWatch returns a watch for one run of a program.
func newCPUWatch() *cpuWatch {
	return &cpuWatch{threads: runtime.NumCPU(), lastAt: time.Now()}
}

// cpuSampleInterval is how often a running program's CPU time is read
// between marks, for a mark heard after it ended.
const cpuSampleInterval = 250 * time.Millisecond

// observe reads the program's CPU time if line is a clock mark. A mark
// that starts a timed stretch (begin, resume) takes the reading that may
// miss a process ending meanwhile, one that ends it (pause, end) the
// reading that may count it twice: a stretch is never read shorter than
// the work in it.
func (w *cpuWatch) observe(line []byte) {
	if !bytes.Contains(line, []byte(`"event":"clock"`)) {
		return
	}
	var m struct {
		Event  string  `json:"event"`
		Source string  `json:"source"`
		Mark   string  `json:"mark"`
		AtMs   float64 `json:"at_ms"`
	}
	// Only the judge writes marks (it never passes on a program's).
	if json.Unmarshal(line, &m) != nil || m.Event != harness.EventClock || m.Source != "" {
		return
	}
	var d time.Duration
	var err error
	switch m.Mark {
	case "begin", "resume":
		d, err = w.meter.Lower()
	default:
		d, err = w.meter.Upper()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	mark := CPUMark{Mark: m.Mark, AtMs: m.AtMs, CPUMs: ms(d)}
	switch {
	case errors.Is(err, runner.ErrNotRunning) && (m.Mark == "end" || m.Mark == "pause"):
		w.late = append(w.late, len(w.r.Marks))
		w.heard = append(w.heard, time.Now())
	case err != nil:
		if w.r.Err == "" {
			w.r.Err = fmt.Sprintf("at the clock's %s: %v", m.Mark, err)
		}
		return
	}
	w.r.Marks = append(w.r.Marks, mark)
}

// sample reads the running program's CPU time every cpuSampleInterval
// until ctx ends.
func (w *cpuWatch) sample(ctx context.Context) {
	t := time.NewTicker(cpuSampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			at := time.Now()
			if d, err := w.meter.Upper(); err == nil {
				w.mu.Lock()
				if d >= w.last {
					w.last, w.lastAt = d, at
				}
				w.mu.Unlock()
			}
		}
	}
}

// ended records the runner's account of the program once it ended.
func (w *cpuWatch) ended(rr runner.Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ran = rr.CPU
}

// readings returns what was read; call it once the judge's telemetry is
// all in.
func (w *cpuWatch) readings() *CPUReadings {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.r
	r.Source = w.meter.Source()
	r.Marks = append([]CPUMark(nil), w.r.Marks...)
	for k, i := range w.late {
		gap := max(w.heard[k].Sub(w.lastAt), 0)
		r.Marks[i].CPUMs = ms(max(w.last+gap*time.Duration(w.threads), w.ran))
		r.Late = true
	}
	return &r
}

// trainCPU is the CPU time of the program's training from the readings:
// the CPU time over each timed stretch (begin to the first pause, each
// resume to the next pause or the end), plus the validation time the
// judge charged to the clock (chargedMs, wall time), converted at the
// rate the program used CPU during the designated validations.
func trainCPU(r *CPUReadings, chargedMs float64) (float64, error) {
	if r == nil {
		return 0, errors.New("no CPU time was read")
	}
	if r.Err != "" {
		return 0, errors.New(r.Err)
	}
	var timed, excludedCPU, excludedWall, timedWall float64
	var start *CPUMark
	want := "begin"
	for i := range r.Marks {
		m := &r.Marks[i]
		ok := m.Mark == want || (want == "pause" && m.Mark == "end")
		if !ok {
			return 0, fmt.Errorf("the judge's clock marks came out of order: %s where %s was due (mark %d of %d)", m.Mark, want, i+1, len(r.Marks))
		}
		switch m.Mark {
		case "begin", "resume":
			if m.Mark == "resume" {
				excludedCPU += max(m.CPUMs-start.CPUMs, 0)
				excludedWall += m.AtMs - start.AtMs
			}
			start, want = m, "pause"
		case "pause", "end":
			timed += max(m.CPUMs-start.CPUMs, 0)
			timedWall += m.AtMs - start.AtMs
			start, want = m, "resume"
			if m.Mark == "end" {
				want = ""
			}
		}
	}
	if want != "" {
		return 0, fmt.Errorf("the judge's clock did not end (%d marks)", len(r.Marks))
	}
	if chargedMs > 0 {
		// Charged time is wall time of designated validations; the program
		// used CPU then at the rate it did in them.
		rate := 1.0
		switch {
		case excludedWall > 0:
			rate = excludedCPU / excludedWall
		case timedWall > 0:
			rate = timed / timedWall
		}
		timed += chargedMs * rate
	}
	return timed, nil
}
