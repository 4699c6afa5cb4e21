package eval

import (
	"fmt"
	"github.com/frontier-bench/frontier/internal/track"
	"strings"
	"testing"
	"time"
)

// stepLine is the judge's step message for step i (0-based).
func stepLine(i int) []byte {
	return fmt.Appendf(nil, `{"event":"step","step":%d,"train_time_ms":1}`, i)
}

// run feeds d a run that sends a step message every 25 steps at perStep a
// step, from its start until until, checking every second, and returns
// when it was stopped (zero when it was not) and why.
func runSteps(d *deadline, t0 time.Time, perStep time.Duration, steps int, until time.Duration) (time.Duration, string) {
	next, step := t0.Add(25*perStep), 24
	for now := t0; now.Sub(t0) <= until; now = now.Add(time.Second) {
		for step < steps && !next.After(now) {
			d.observe(stepLine(step), next)
			step += 25
			next = next.Add(25 * perStep)
		}
		if stop, why := d.check(now); stop {
			return now.Sub(t0), why
		}
	}
	return 0, ""
}

func TestDeadline(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	// The fast check predicted 100 ms a step, so 1200 steps were given
	// 180 s; under load the run goes at 300 ms a step (6 minutes), inside
	// the 20-minute ceiling: it is not killed, and the limit says why.
	d := newDeadline(t0, 180*time.Second, 20*time.Minute, 1200)
	d.begin(t0)
	if at, why := runSteps(d, t0, 300*time.Millisecond, 1200, 7*time.Minute); at != 0 {
		t.Fatalf("a run stepping at a plausible rate was stopped at %s: %s", at, why)
	}
	limit, note := d.limit()
	if limit <= 180*time.Second || limit > 20*time.Minute || !strings.Contains(note, "extended") || !strings.Contains(note, "300ms a step") {
		t.Errorf("limit %s, note %q", limit, note)
	}

	// The same run stops stepping at step 700 (a hang): it is stopped
	// within the stall window of its last step, not at the ceiling.
	d = newDeadline(t0, 180*time.Second, 20*time.Minute, 1200)
	d.begin(t0)
	at, why := runSteps(d, t0, 300*time.Millisecond, 700, 20*time.Minute)
	hungAt := 700 * 300 * time.Millisecond // 210 s
	if at == 0 || at > hungAt+stallFloor+25*300*time.Millisecond+2*time.Second || !strings.Contains(why, "stopped stepping") {
		t.Errorf("a run that hung after %s was stopped at %s (%q): want within a minute of its last step", hungAt, at, why)
	}

	// A run that hangs before its first deadline is stopped there.
	d = newDeadline(t0, 180*time.Second, 20*time.Minute, 1200)
	d.begin(t0)
	if at, why := runSteps(d, t0, 300*time.Millisecond, 100, 20*time.Minute); at != 180*time.Second || !strings.Contains(why, "stopped at its limit of 3m0s") {
		t.Errorf("a run that hung at 30 s was stopped at %s (%q): want at its limit, 3m0s", at, why)
	}

	// A run whose live rate cannot end before the ceiling is stopped at
	// its first deadline, and the reason says what it would need.
	d = newDeadline(t0, 180*time.Second, 10*time.Minute, 1200)
	d.begin(t0)
	at, why = runSteps(d, t0, time.Second, 1200, 20*time.Minute)
	if at != 180*time.Second || !strings.Contains(why, "past the hard limit of 10m0s") || !strings.Contains(why, "1200 planned steps") {
		t.Errorf("a run needing 20 minutes of a 10-minute ceiling: stopped at %s (%q)", at, why)
	}

	// A setup slower than the fast check's: no step yet at the first
	// deadline, but lines still coming. It is not stopped there; once it
	// goes quiet for the stall window, it is.
	d = newDeadline(t0, 3*time.Second, 2*time.Minute, 30)
	d.begin(t0)
	d.observe([]byte(`{"event":"start"}`), t0.Add(2*time.Second))
	if stop, why := d.check(t0.Add(3 * time.Second)); stop {
		t.Errorf("a run alive in its setup at its first deadline was stopped: %q", why)
	}
	if stop, why := d.check(t0.Add(2*time.Second + stallFloor + time.Second)); !stop || !strings.Contains(why, "sent nothing") {
		t.Errorf("a run quiet for the stall window after its first deadline: stop %v (%q)", stop, why)
	}

	// Without a plan the run goes on while it steps, never past the
	// ceiling.
	d = newDeadline(t0, 60*time.Second, 5*time.Minute, 0)
	d.begin(t0)
	at, why = runSteps(d, t0, 300*time.Millisecond, 1_000_000, 20*time.Minute)
	if at != 5*time.Minute || !strings.Contains(why, "hard limit of 5m0s") {
		t.Errorf("an endless run with no plan: stopped at %s (%q): want at the ceiling", at, why)
	}
}

// --limit fixes the full run's limit; otherwise the fast check sizes the
// first deadline and the track's full_run_max is the ceiling.
func TestFullLimits(t *testing.T) {
	spec := testTrack(t, bigramTarget)
	spec.Limits.FullRun = 300e9
	spec.Limits.FullRunMax = 1200e9
	spec.Data.ValTokens = 65536
	fast := fastOutcome(300, 900, 3, 1200)
	lim, note := (&Evaluator{}).fullLimits(spec, fast, 0)
	if lim.limit != 554*time.Second || lim.ceiling != 1200*time.Second || lim.planned != 1200 || !strings.Contains(note, "9m14s") {
		t.Errorf("sized: %+v, %q", lim, note)
	}
	lim, note = (&Evaluator{FullLimit: 90 * time.Second}).fullLimits(spec, fast, 0)
	if lim.limit != 90*time.Second || lim.ceiling != 0 || !strings.Contains(note, "--limit") {
		t.Errorf("--limit 90s: %+v, %q", lim, note)
	}
	// A reference measured at 400 s here raises the first deadline to
	// twice that; one measured at 100 s leaves the fast check's; and none
	// raises it past the ceiling.
	for _, c := range []struct {
		ref, want time.Duration
		note      string
	}{
		{400 * time.Second, 800 * time.Second, "the reference's full run took 6m40s here: the limit is 13m20s"},
		{100 * time.Second, 554 * time.Second, "9m14s"},
		{900 * time.Second, 1200 * time.Second, "the limit is 20m0s"},
	} {
		lim, note = (&Evaluator{}).fullLimits(spec, fast, c.ref)
		if lim.limit != c.want || lim.ceiling != 1200*time.Second || !strings.Contains(note, c.note) {
			t.Errorf("reference %s: %+v, %q", c.ref, lim, note)
		}
	}
	lim, _ = (&Evaluator{FullLimit: 90 * time.Second}).fullLimits(spec, fast, 400*time.Second)
	if lim.limit != 90*time.Second {
		t.Errorf("--limit 90s with a reference of 400s: %+v: --limit wins", lim)
	}
}

// A full run whose steps slow down after the fast check (as on a machine
// whose load grows) outlives the limit the fast check predicted while it
// keeps stepping; with --limit the same run times out at the limit.
func TestSlowingRunIsNotKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a program for about 40 s")
	}
	ev, _ := newEvaluator(t)
	spec := testTrack(t, bigramTarget)
	spec.Limits.FullRun = track.Duration(3e9)
	spec.Limits.FullRunMax = track.Duration(120e9)
	spec.Telemetry.LogEvery = 5
	// 30 steps, the first two (the fast check's) fast, then a second
	// each: about 28 s of steps, where the fast check predicts a few.
	prog := program(t, 30, "if step >= 2: time.sleep(1)")
	prog = append([]byte("import time\n"), prog...)
	res := evaluate(t, ev, spec, prog)
	if res.Verdict == Timeout || res.Full == nil || res.Full.Steps != 30 || !strings.Contains(res.Full.LimitNote, "extended") {
		t.Fatalf("verdict %s (%s); full run %+v", res.Verdict, res.Reason, res.Full)
	}
	ev.FullLimit = 3 * time.Second
	res = evaluate(t, ev, spec, prog)
	if res.Verdict != Timeout || !strings.Contains(res.Full.LimitNote, "--limit") {
		t.Fatalf("with --limit 3s: verdict %s (%s); full run %+v", res.Verdict, res.Reason, res.Full)
	}
}
