package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/hostload"
	"github.com/frontier-bench/frontier/internal/store"
)

// A score compares a search's times with the records' times. Those must be
// taken under the same conditions: a calibration says when and under what
// load it was taken, and an attempt whose nodes all ran far slower than
// the start's time (calibrated or published) says so.

// slowFactor is how much slower than the start's time the fastest
// acceptable node of an attempt may be before the attempt warns: a
// search's changes are small next to a factor of 1.5, so every node that
// slow says the machine, not the programs, differs from where the start
// was timed.
const slowFactor = 1.5

// slowAfter is the number of acceptable nodes, all that slow, after which
// a search warns while it runs.
const slowAfter = 3

// loadAvg is the load average now, from Env.LoadAvg when set.
func (e Env) loadAvg() []float64 {
	if e.LoadAvg != nil {
		return e.LoadAvg()
	}
	return hostload.Now().LoadAvg
}

// loadText writes a load average as "1.20/0.90/0.70", or "unknown".
func loadText(l []float64) string {
	if len(l) == 0 {
		return "unknown"
	}
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, "/")
}

// ConditionsText says when and under what load a calibration was taken.
func ConditionsText(at time.Time, c store.Conditions) string {
	s := "taken " + at.Format("2006-01-02 15:04")
	if len(c.LoadAvg) > 0 {
		s += ", load average (1/5/15 min) " + loadText(c.LoadAvg) + " at its start"
	}
	if len(c.LoadAvgEnd) > 0 {
		s += " and " + loadText(c.LoadAvgEnd) + " at its end"
	}
	return s
}

// slowNote is the warning of an attempt whose fastest acceptable node
// (fastestMs, of timed acceptable nodes) took more than slowFactor times
// its start's time startMs, scored from tm; "" when there is nothing to
// say. loadNow is the load average now.
func slowNote(suite string, tm taskTimes, startMs, fastestMs float64, timed int, loadNow []float64) string {
	if timed == 0 || !(startMs > 0) || !(fastestMs > slowFactor*startMs) {
		return ""
	}
	ratio := fastestMs / startMs
	if tm.source == TimesCalibrated && tm.startCal != nil {
		return fmt.Sprintf("the fastest of %d acceptable nodes took %.1fx the start's calibrated time (%s; the calibration was %s; load average now %s): "+
			"this machine is slower now than when it was calibrated, so the nodes and the records were not timed under the same conditions; "+
			"calibrate again (frontier bench calibrate %s) on a quiet machine",
			timed, ratio, seconds(startMs), ConditionsText(tm.startCal.CreatedAt, tm.startCal.Conditions), loadText(loadNow), suite)
	}
	return fmt.Sprintf("the fastest of %d acceptable nodes took %.1fx the start's %s time (%s; load average now %s): no node can beat the start, "+
		"so tree, forest and AIDE only ever expand the start; time the records on this machine first (frontier bench calibrate %s)",
		timed, ratio, tm.source, seconds(startMs), loadText(loadNow), suite)
}
