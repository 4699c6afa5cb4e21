package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
)

// A val loss far under the Bayes-optimal loss is impossible for a causal
// model: invalid. Near the floor, and in the fast check's short slice, it
// is not.
func TestJudgeLossFloor(t *testing.T) {
	spec := testTrack(t, bigramTarget)
	spec.Data.LossFloor = 2.388721
	ok := runner.Result{Status: runner.StatusOK, Wall: time.Minute}
	judge := func(mode string, loss float64) *phaseOutcome {
		tel := &harness.Telemetry{Final: &harness.Final{Steps: 10, TrainTimeMs: 100, ValLoss: loss, Probe: true},
			Checks: &harness.Checks{}, Probe: &harness.Probe{OK: true, Scorer: true}}
		return judgePhase(spec, mode, ok, nil, tel)
	}
	if o := judge("full", 0.10); o.verdict != Invalid || o.rule != RuleLossFloor || !strings.Contains(o.reason, "under the track's loss floor 2.3887") {
		t.Errorf("loss 0.10: %s %q %s", o.verdict, o.rule, o.reason)
	}
	for _, c := range []struct {
		mode string
		loss float64
	}{{"full", 2.35}, {"full", 3.0}, {"fast", 0.10}} {
		if o := judge(c.mode, c.loss); o.verdict != "" {
			t.Errorf("%s run, loss %.2f: %s %q %s", c.mode, c.loss, o.verdict, o.rule, o.reason)
		}
	}
	spec.Data.LossFloor = 0 // unknown floor (FineWeb): no check
	if o := judge("full", 0.10); o.verdict != "" {
		t.Errorf("no floor: %s %s", o.verdict, o.reason)
	}
}
