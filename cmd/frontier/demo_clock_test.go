package main

import (
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/evolve"
)

// The demo's estimate comes from the reference's own evaluation, once,
// and counts what is left: the children's fast checks and full runs and
// the series, a pair at once or one run after the other.
func TestDemoClock(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		together bool
		want     []string
	}{
		// 6 x (10s + 90s) + 5 x 1.1 x 90s = 1095s
		{true, []string{"took 90s on this machine (training 80.00s), its fast check 10s", "about 18 minutes (6 more programs, then 5 pairs at once)", "until about 10:19"}},
		// 6 x 100s + 5 x 2 x 90s = 1500s
		{false, []string{"about 25 minutes (6 more programs, then 5 pairs one after the other)", "until about 10:26"}},
	} {
		var out strings.Builder
		d := newDemoClock(&out, demoOptions{evaluations: 7, pairs: 5, together: tc.together})
		at := t0
		d.now = func() time.Time { return at }
		ref := func(kind string, since time.Time) []evolve.RunningEval {
			return []evolve.RunningEval{{ChildID: 1, Kind: kind, Since: since}}
		}
		d.observe(evolve.Status{Running: ref("fast", t0)})
		at = t0.Add(5 * time.Second)
		d.observe(evolve.Status{Running: ref("fast", t0)})
		at = t0.Add(10 * time.Second)
		d.observe(evolve.Status{Running: ref("full", at), Evaluations: 1})
		if out.Len() != 0 {
			t.Fatalf("an estimate before the reference's full run ended: %q", out.String())
		}
		at = t0.Add(100 * time.Second)
		d.observe(evolve.Status{Evaluations: 1, ReferenceTimeMs: 80000})
		// A child's run that ends later says nothing more.
		d.observe(evolve.Status{Evaluations: 2, ReferenceTimeMs: 80000, Running: []evolve.RunningEval{{ChildID: 2, Kind: "full", Since: at}}})
		at = t0.Add(150 * time.Second)
		d.observe(evolve.Status{Evaluations: 2, ReferenceTimeMs: 80000})
		got := out.String()
		if strings.Count(got, "\n") != 1 {
			t.Errorf("together=%v: want one line, got %q", tc.together, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("together=%v: %q lacks %q", tc.together, got, w)
			}
		}
	}
}

func TestRoundText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		95 * time.Second: "95s", 205 * time.Second: "3.4 minutes", 39*time.Minute + 40*time.Second: "40 minutes",
	} {
		if got := roundText(d); got != want {
			t.Errorf("roundText(%s) = %q, want %q", d, got, want)
		}
	}
}

// A reference whose full run failed (no reference time) gives no
// estimate: the demo stops there.
func TestDemoClockReferenceFailed(t *testing.T) {
	var out strings.Builder
	d := newDemoClock(&out, demoOptions{evaluations: 7, pairs: 5})
	t0 := time.Now()
	d.observe(evolve.Status{Running: []evolve.RunningEval{{ChildID: 1, Kind: "full", Since: t0}}})
	d.observe(evolve.Status{})
	if out.Len() != 0 {
		t.Errorf("an estimate without the reference's time: %q", out.String())
	}
}
