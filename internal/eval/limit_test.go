package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
)

// fastOutcome is a fast check that ran steps at stepMs each after a first
// step of firstMs, planning planned steps.
func fastOutcome(stepMs, firstMs float64, steps, planned int) *phaseOutcome {
	tel := &harness.Telemetry{Final: &harness.Final{Steps: steps, PlannedSteps: planned, PreTrainMs: 3000, ValMs: 200, ValTokens: 2048}}
	t := firstMs
	for i := range steps {
		if i > 0 {
			t += stepMs
		}
		tel.Steps = append(tel.Steps, harness.Step{Step: i, TrainTimeMs: t})
	}
	return &phaseOutcome{phase: &Phase{Mode: "fast"}, tel: tel}
}

// The full run's limit grows with what the fast check measured on this
// machine, within the track's bounds, and says why.
func TestFullLimit(t *testing.T) {
	spec := testTrack(t, bigramTarget)
	spec.Limits.FullRun = 300e9 // 5 minutes
	spec.Limits.FullRunMax = 1200e9
	spec.Data.ValTokens = 65536
	spec.Hardware.ReferenceStepMs = 40
	cases := []struct {
		name   string
		fast   *phaseOutcome
		want   time.Duration
		inNote []string
	}{
		{"no fast check", nil, 300 * time.Second, nil},
		{"fast machine", fastOutcome(40, 500, 3, 1200), 300 * time.Second, nil},
		// 1200 steps at 300 ms: 360 s of training, 3 s of setup, 6.4 s of
		// validation, half as much again: 554 s.
		{"busy machine", fastOutcome(300, 900, 3, 1200), 554 * time.Second,
			[]string{"300.0 ms a step", "7.5x", "1200 planned steps", "the full run's limit is 9m14s instead of 5m0s"}},
		{"too slow", fastOutcome(2000, 900, 3, 1200), 1200 * time.Second, []string{"full_run_max", "likely time out"}},
		{"no plan", fastOutcome(300, 900, 3, 0), 300 * time.Second, nil},
	}
	for _, c := range cases {
		got, note := fullLimit(spec, c.fast)
		if got != c.want {
			t.Errorf("%s: limit %s, want %s (%s)", c.name, got, c.want, note)
		}
		if c.inNote == nil && note != "" {
			t.Errorf("%s: note %q", c.name, note)
		}
		for _, w := range c.inNote {
			if !strings.Contains(note, w) {
				t.Errorf("%s: note %q lacks %q", c.name, note, w)
			}
		}
	}
}

// A full run that times out says how fast its steps were and what to do.
func TestTimeoutReason(t *testing.T) {
	spec := testTrack(t, bigramTarget)
	spec.Hardware.ReferenceStepMs = 40
	full := &phaseOutcome{phase: &Phase{Mode: "full", Steps: 500}, tel: &harness.Telemetry{Steps: []harness.Step{{Step: 499, TrainTimeMs: 200000}}}}
	o := judgePhase(spec, "full", runner.Result{Status: runner.StatusTimeout}, nil, full.tel)
	if o.verdict != Timeout {
		t.Fatalf("verdict %s", o.verdict)
	}
	r := timeoutReason(spec, full, fastOutcome(380, 900, 3, 1200), 554*time.Second)
	for _, w := range []string{"limit of 9m14s", "after 500 steps at 400.0 ms a step", "10.0x", "the fast check ran 380.0 ms a step", "full_run_max"} {
		if !strings.Contains(r, w) {
			t.Errorf("reason %q lacks %q", r, w)
		}
	}
}
