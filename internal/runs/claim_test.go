package runs

import (
	"math"
	"strings"
	"testing"
)

// One pair of times gives one speedup whoever asks: the run showed
// -22.5% in the CLI, +29.04% in the report and 6.27% in confirm for the
// same programs, from three formulas.
func TestSpeedup(t *testing.T) {
	if s := Speedup(1000, 775); math.Abs(s-0.225) > 1e-12 || FormatSpeedup(s) != "+22.5%" {
		t.Errorf("Speedup(1000, 775) = %g (%s), want 0.225 (+22.5%%)", s, FormatSpeedup(s))
	}
	if s := Speedup(1000, 1100); FormatSpeedup(s) != "-10.0%" {
		t.Errorf("a slower program: %s", FormatSpeedup(s))
	}
	if s := Speedup(0, 900); !math.IsNaN(s) || FormatSpeedup(s) != "-" {
		t.Errorf("unmeasured baseline: %g %s", s, FormatSpeedup(s))
	}
}

func TestClaimEvidence(t *testing.T) {
	series := Claim{Method: MethodSeries, State: ClaimConfirmed, Pairs: 5, Alpha: 0.01, Speedup: 0.18,
		SpeedupLo: 0.12, SpeedupHi: 0.24, TimeP: 0.0021, LossP: 0.004}
	if e := series.Evidence(); !strings.Contains(e, "n = 5 each") || !strings.Contains(e, "+18.0%") ||
		!strings.Contains(e, "95% CI +12.0% to +24.0%") || !strings.Contains(e, "Welch p = 0.0021") {
		t.Errorf("series evidence %q", e)
	}
	rejected := series
	rejected.State, rejected.TimeP = ClaimRejected, 0.2
	if e := rejected.Evidence(); !strings.HasPrefix(e, "rejected") || !strings.Contains(e, "p = 0.2") {
		t.Errorf("rejected evidence %q", e)
	}
	if e := (Claim{Method: MethodSeries, State: ClaimQueued, Pairs: 5}).Evidence(); !strings.HasPrefix(e, "single timing") {
		t.Errorf("queued evidence %q", e)
	}
	failed := Claim{Method: MethodSeries, State: ClaimFailed, Pairs: 5, TimeP: math.NaN(), Speedup: math.NaN(),
		Reason: "error: the candidate's run with seed 3 crashed"}
	if e := failed.Evidence(); !strings.HasPrefix(e, "single timing; its series (n = 5 each) failed: error") {
		t.Errorf("failed evidence %q", e)
	}
	noise := Claim{Method: MethodNoise, State: ClaimConfirmed, Speedup: 0.6, NoiseCV: 0.031, NoiseDF: 8, TimeP: 1e-5}
	if e := noise.Evidence(); !strings.Contains(e, "single timing") || !strings.Contains(e, "3.1%") || !strings.Contains(e, "8 df") {
		t.Errorf("noise evidence %q", e)
	}
}

func TestStanding(t *testing.T) {
	if _, ok := Standing(nil); ok {
		t.Error("no claims: no record")
	}
	rec, ok := Standing([]Claim{
		{ChildID: 3, State: ClaimConfirmed, TimeMs: 900},
		{ChildID: 4, State: ClaimRejected, TimeMs: 500},
		{ChildID: 5, State: ClaimConfirmed, TimeMs: 700},
		{ChildID: 6, State: ClaimQueued, TimeMs: 100},
	})
	if !ok || rec.ChildID != 5 {
		t.Errorf("standing %+v, want #5", rec)
	}
}
