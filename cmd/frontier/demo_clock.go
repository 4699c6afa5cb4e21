package main

import (
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/evolve"
)

// demoClock says, once the reference's evaluation has ended, how long the
// rest of the demo should take on this machine: the demo's budget counts
// evaluations, not minutes, and the "15 to 20 minutes" of its first line
// holds only on a machine as fast as the one the track was calibrated on.
// It watches the search's statuses and times each evaluation from the
// status that shows it running to the first that does not.
type demoClock struct {
	w           io.Writer
	evaluations int  // full evaluations of the search, the reference's included
	pairs       int  // runs of each program in the series
	together    bool // the series runs the two programs of a pair at once

	mu      sync.Mutex
	now     func() time.Time
	running map[int64]evolve.RunningEval
	fast    time.Duration // the first fast check's wall time
	said    bool
}

func newDemoClock(w io.Writer, o demoOptions) *demoClock {
	return &demoClock{w: w, evaluations: o.evaluations, pairs: o.pairs, together: o.together,
		now: time.Now, running: map[int64]evolve.RunningEval{}}
}

// observe takes one status of the search.
func (d *demoClock) observe(s evolve.Status) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.said {
		return
	}
	now := d.now()
	cur := make(map[int64]evolve.RunningEval, len(s.Running))
	for _, r := range s.Running {
		cur[r.ChildID] = r
	}
	for id, r := range d.running {
		if c, ok := cur[id]; ok && c.Kind == r.Kind && c.Since.Equal(r.Since) {
			continue
		}
		took := now.Sub(r.Since)
		switch r.Kind {
		case "fast":
			if d.fast == 0 {
				d.fast = took
			}
		case "full":
			// The search samples nothing before the reference has its
			// verdict, so the first full evaluation to end is the
			// reference's.
			if s.ReferenceTimeMs > 0 {
				d.say(took, s)
				return
			}
		}
	}
	d.running = cur
}

// say prints the estimate from the reference's full evaluation (full) and
// the first fast check.
func (d *demoClock) say(full time.Duration, s evolve.Status) {
	d.said = true
	rest, how := d.estimate(full, s.Evaluations)
	fmt.Fprintf(d.w, "frontier demo: the reference's full evaluation took %s on this machine (training %s)%s; the rest should take about %s (%s), until about %s, less when programs fail early.\n",
		roundText(full), secsText(s.ReferenceTimeMs), d.fastText(), roundText(rest), how, d.now().Add(rest).Format("15:04"))
}

func (d *demoClock) fastText() string {
	if d.fast == 0 {
		return ""
	}
	return ", its fast check " + roundText(d.fast)
}

// estimate is the time the demo should still take after the reference's
// full evaluation (full), with started full evaluations begun: each
// child left a fast check and a full evaluation as long as the
// reference's (children that train less end sooner), then the series, a
// pair at a time: two runs at once end in about the time of one, 10%
// more for the slower of the two; one after the other, in two.
func (d *demoClock) estimate(full time.Duration, started int) (time.Duration, string) {
	children := max(0, d.evaluations-max(started, 1))
	rest := time.Duration(children) * (d.fast + full)
	how := fmt.Sprintf("%d more programs", children)
	if d.pairs > 0 {
		per := 2.0
		pairing := "one after the other"
		if d.together {
			per, pairing = 1.1, "at once"
		}
		rest += time.Duration(math.Round(float64(d.pairs) * per * float64(full)))
		how += fmt.Sprintf(", then %d pairs %s", d.pairs, pairing)
	}
	return rest, how
}

// roundText is a duration for a person: seconds under two minutes,
// minutes to a tenth under ten, else whole minutes.
func roundText(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < 10*time.Minute:
		return fmt.Sprintf("%.1f minutes", d.Minutes())
	}
	return fmt.Sprintf("%.0f minutes", d.Minutes())
}
