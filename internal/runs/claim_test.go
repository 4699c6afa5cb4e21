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

// The record's speedup over the reference comes from the claims that made
// it, never from a series' mean against a single timing taken at another
// moment: the run showed one program at -12.2% (its series' mean
// under load against the reference's quiet single timing) and +28.9% (its
// series) on two lines.
func TestRecordVsReference(t *testing.T) {
	nan := math.NaN()
	// The reference (#1) timed 107 s once, quietly; under load, the series
	// measured #5 at 120 s against the reference's 168.8 s.
	c5 := Claim{ID: 1, ChildID: 5, BaselineID: 1, Method: MethodSeries, State: ClaimConfirmed, Pairs: 5, SingleMs: 100_000,
		TimeMs: 120_000, BaselineMs: 168_800, TimeSD: 2000, TimeP: 0.001, LossP: 0.001, SpeedupLo: nan, SpeedupHi: nan}
	c5.Speedup = Speedup(c5.BaselineMs, c5.TimeMs)
	rec := RecordOf([]Claim{c5}, Outcome{ID: 1, Verdict: Acceptable, TrainTimeMs: 107_000})
	if rec.ID != 5 || rec.Ms != 120_000 || rec.SingleMs != 100_000 {
		t.Fatalf("record %+v: want #5, its series' mean 120 s and its single timing 100 s", rec)
	}
	s, basis := rec.VsReference([]Claim{c5}, 1)
	if FormatSpeedup(s) != "+28.9%" || !strings.Contains(basis, "#5 vs the reference, series n = 5") {
		t.Errorf("vs the reference %s (%s), want the series' +28.9%%", FormatSpeedup(s), basis)
	}
	if old := Speedup(107_000, rec.Ms); FormatSpeedup(old) != "-12.1%" {
		t.Fatalf("the figure the issue saw: %s", FormatSpeedup(old))
	}
	// A later record confirmed against #5 chains the two series' ratios.
	c9 := Claim{ID: 2, ChildID: 9, BaselineID: 5, Method: MethodSeries, State: ClaimConfirmed, Pairs: 5, SingleMs: 90_000,
		TimeMs: 100_000, BaselineMs: 125_000, TimeSD: 1000, TimeP: 0.001}
	claims := []Claim{c5, c9}
	rec = RecordOf(claims, Outcome{ID: 1, Verdict: Acceptable, TrainTimeMs: 107_000})
	s, basis = rec.VsReference(claims, 1)
	want := 1 - (120_000.0/168_800)*(100_000.0/125_000)
	if rec.ID != 9 || math.Abs(s-want) > 1e-12 || !strings.Contains(basis, "chained") || !strings.Contains(basis, "#9 vs #5") {
		t.Errorf("chained: record #%d, %s (%s), want %s", rec.ID, FormatSpeedup(s), basis, FormatSpeedup(want))
	}
	// The reference as the record, and the record's single timing.
	rec = RecordOf(nil, Outcome{ID: 1, Verdict: Acceptable, TrainTimeMs: 107_000})
	if s, _ := rec.VsReference(nil, 1); !math.IsNaN(s) || rec.SingleMs != 107_000 {
		t.Errorf("the reference: %g, single %g", s, rec.SingleMs)
	}
	// A claim settled without its series holds single timings: the
	// reference stays a single timing, not "the mean of its 5 runs" (a demo
	// with the engine's confirmation off showed that line).
	for _, st := range []ClaimState{ClaimSkipped, ClaimSuperseded, ClaimFailed, ClaimQueued, ClaimRunning} {
		skipped := Claim{ID: 3, ChildID: 4, BaselineID: 1, Method: MethodSeries, State: st, Pairs: 5, SingleMs: 112_030,
			TimeMs: 112_030, BaselineMs: 203_240, TimeSD: nan, BaselineSD: nan, TimeP: nan, LossP: nan}
		rec = RecordOf([]Claim{skipped}, Outcome{ID: 1, Verdict: Acceptable, TrainTimeMs: 203_240})
		if rec.ID != 1 || rec.N != 1 || rec.Ms != 203_240 {
			t.Errorf("the reference beside a %s claim: record %+v, want #1's single timing (n = 1)", st, rec)
		}
	}
	// A series that ran makes the baseline's estimate its mean.
	ran := Claim{ID: 3, ChildID: 4, BaselineID: 1, Method: MethodSeries, State: ClaimRejected, Pairs: 5, SingleMs: 90_000,
		TimeMs: 104_000, BaselineMs: 105_000, TimeSD: 900, BaselineSD: 800, TimeP: 0.2, LossP: 0.001}
	if rec = RecordOf([]Claim{ran}, Outcome{ID: 1, Verdict: Acceptable, TrainTimeMs: 107_000}); rec.ID != 1 || rec.N != 5 || rec.Ms != 105_000 {
		t.Errorf("the reference after a rejected series: record %+v, want its series' mean 105 s (n = 5)", rec)
	}
	if b := (Claim{Method: MethodSeries, State: ClaimQueued}).Basis(); b != "single timings" {
		t.Errorf("a queued claim's basis %q", b)
	}
}
