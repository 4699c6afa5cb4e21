package eval

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
)

// A full run's limit is a prediction: made from a fast check of a few
// steps, or set by hand. On a machine whose load changes while the run
// goes, the prediction is often wrong, and a run that keeps stepping at a
// plausible rate would be killed for the load, not for itself. So the
// limit is the first deadline only: when it comes and the run is still
// stepping, the deadline moves to when the live step rate says the run
// will end (with half as much again to spare), never past the hard
// ceiling (the track's full_run_max). A run that stops stepping is
// stopped: at the first deadline, or, once it is past it, as soon as no
// step came for the stall window.

// stallFloor is the least time without a step after which a run past its
// first deadline counts as hung: longer than a validation pass or a
// checkpoint of a track's programs takes between two step messages.
const stallFloor = 60 * time.Second

// stallSteps is how many intervals between two step messages a run past
// its first deadline may go without one.
const stallSteps = 4

// deadline follows one run's steps (the judge's telemetry) and decides
// when the run has run too long. Its methods may be called from several
// goroutines.
type deadline struct {
	mu      sync.Mutex
	start   time.Time
	first   time.Duration // the limit: the first deadline
	ceiling time.Duration // the hard limit, never extended
	planned int           // the steps the program plans, 0 when unknown
	stall   time.Duration // the least stall window (stallFloor)

	at       time.Time // the deadline now
	extended int       // how many times it moved
	alive    time.Time // the last telemetry line
	steps    int       // steps done at the last step message
	stepAt   time.Time // when that message came
	interval time.Duration
	perStep  time.Duration // wall time per step between the last two messages
}

func newDeadline(start time.Time, limit, ceiling time.Duration, planned int) *deadline {
	return &deadline{start: start, first: limit, ceiling: max(ceiling, limit), planned: planned, stall: stallFloor,
		at: start.Add(limit), alive: start}
}

// begin starts the clock: the program starts now.
func (d *deadline) begin(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.start, d.at, d.alive = now, now.Add(d.first), now
}

// observe notes one telemetry line of the judge, seen at now.
func (d *deadline) observe(line []byte, now time.Time) {
	var ev struct {
		Event string `json:"event"`
		Step  int    `json:"step"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.alive = now
	if ev.Event != harness.EventStep || ev.Step+1 <= d.steps {
		return
	}
	if d.stepAt.IsZero() {
		// One message: the time since the start per step, setup
		// included, is the rate's upper bound until a second comes.
		d.perStep = now.Sub(d.start) / time.Duration(ev.Step+1)
	} else {
		d.interval = now.Sub(d.stepAt)
		d.perStep = d.interval / time.Duration(ev.Step+1-d.steps)
	}
	d.steps, d.stepAt = ev.Step+1, now
}

// window is how long a run past its first deadline may go without a
// telemetry line.
func (d *deadline) window() time.Duration {
	return max(d.stall, stallSteps*d.interval)
}

// check says whether the run must stop at now, and why; it moves the
// deadline when the run earned it.
func (d *deadline) check(now time.Time) (stop bool, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hard := d.start.Add(d.ceiling)
	quiet := now.Sub(d.alive)
	switch {
	case !now.Before(hard):
		return true, fmt.Sprintf("it reached the hard limit of %s (the track's full_run_max) after %s", d.ceiling, d.progress())
	case d.extended > 0 && quiet > d.window():
		return true, fmt.Sprintf("past its limit of %s, it sent nothing for %s (after %s): it stopped stepping", d.first, quiet.Round(time.Second), d.progress())
	case now.Before(d.at):
		return false, ""
	case quiet > d.window():
		return true, fmt.Sprintf("stopped at its limit of %s after %s", d.first, d.progress())
	case d.perStep <= 0:
		// Alive, but no step yet: a setup that the load made slower
		// than the fast check's. It gets the stall window at a time,
		// and is stopped once it goes quiet.
		d.at = now.Add(d.window())
		if d.at.After(hard) {
			d.at = hard
		}
		d.extended++
		return false, ""
	}
	// Still stepping: the live rate says when it will end.
	rest := d.window()
	if d.planned > d.steps {
		need := time.Duration(d.planned-d.steps) * d.perStep
		if now.Add(need).After(hard) {
			return true, fmt.Sprintf("stopped at its limit of %s after %s: at %s a step, its %d planned steps need %s more, past the hard limit of %s",
				d.first, d.progress(), d.perStep.Round(time.Millisecond), d.planned, need.Round(time.Second), d.ceiling)
		}
		rest = max(rest, need*3/2)
	}
	d.at = now.Add(rest)
	if d.at.After(hard) {
		d.at = hard
	}
	d.extended++
	return false, ""
}

// progress says how far the run got.
func (d *deadline) progress() string {
	s := fmt.Sprintf("%d steps", d.steps)
	if d.planned > 0 {
		s = fmt.Sprintf("%d of %d planned steps", d.steps, d.planned)
	}
	if d.perStep > 0 {
		s += fmt.Sprintf(" at %s a step", d.perStep.Round(time.Millisecond))
	}
	return s
}

// limit is the deadline the run ended under, as a duration from its start,
// and a note when it moved.
func (d *deadline) limit() (time.Duration, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	got := d.at.Sub(d.start).Round(time.Second)
	if d.extended == 0 {
		return d.first, ""
	}
	return got, fmt.Sprintf("its limit of %s was extended %d time(s), to %s, while it kept stepping (%s; hard limit %s)",
		d.first, d.extended, got, d.progress(), d.ceiling)
}
