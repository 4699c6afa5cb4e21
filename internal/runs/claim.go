package runs

import (
	"fmt"
	"math"
	"strings"
)

// Speedup is the one definition of a speedup in frontier: the share of
// the baseline's train time that a program saves,
//
//	speedup = (t_baseline - t) / t_baseline
//
// so +0.225 means the program trains in 77.5% of the baseline's time, 0
// means as fast, and a negative value means slower. The CLI, the prompts,
// the report and the statistics of a confirmation all use it (times are
// means when there are several runs). NaN when either time is not
// measured.
func Speedup(baselineMs, ms float64) float64 {
	if !Measured(baselineMs) || !Measured(ms) {
		return math.NaN()
	}
	return (baselineMs - ms) / baselineMs
}

// FormatSpeedup writes a speedup (a fraction, see Speedup) as a signed
// percentage with one decimal ("+22.5%"), or "-" when it is not a number.
func FormatSpeedup(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*s)
}

// Method is how a claim that a program is faster was tested.
type Method string

// Methods.
const (
	// MethodSeries: the candidate and the program it claims to beat ran
	// in alternation, the same seeds each, and Welch's test compared the
	// times (with the one-sample test that the candidate's mean loss is
	// under the target).
	MethodSeries Method = "series"
	// MethodNoise: one timing of the candidate, judged against the
	// run-to-run noise the run measured in earlier series: its margin is
	// so far beyond the noise that a series would only spend budget.
	MethodNoise Method = "noise"
)

// ClaimState is where a claim stands.
type ClaimState string

// Claim states. Only Confirmed claims make records.
const (
	ClaimQueued    ClaimState = "queued"    // a series will run
	ClaimRunning   ClaimState = "running"   // its series is running
	ClaimConfirmed ClaimState = "confirmed" // the speedup (and the loss) passed
	// ClaimRejected: the series ran and the speedup or the loss is not
	// significant: the single timing was noise (or luck).
	ClaimRejected ClaimState = "rejected"
	// ClaimFailed: a run of the series failed (the candidate crashed or
	// timed out with another seed, or the program it was compared with
	// did).
	ClaimFailed ClaimState = "failed"
	// ClaimSkipped: no series could run (no budget left, or the
	// evaluator cannot run one); the candidate stays a single timing.
	ClaimSkipped ClaimState = "skipped"
	// ClaimSuperseded: a faster candidate was confirmed before this one's
	// series started.
	ClaimSuperseded ClaimState = "superseded"
)

// Done reports whether the claim has its outcome.
func (s ClaimState) Done() bool { return s != ClaimQueued && s != ClaimRunning }

// Claim is a candidate record and the evidence for it: a program (a
// member of a run) that measured faster than the standing record, and
// what testing it found. Times are means over the series (single timings
// for MethodNoise). Zero numbers are not measured; P values are NaN when
// no test ran.
type Claim struct {
	ID int64
	// ChildID is the candidate; BaselineID the program it was compared
	// with (the standing record when it was made, the reference at
	// first).
	ChildID, BaselineID int64
	Method              Method
	State               ClaimState
	// Source says who tested it: "engine" (the search, by itself) or
	// "cli" (frontier runs confirm).
	Source string
	// Pairs is the number of runs of each program (1 for MethodNoise).
	Pairs int
	Alpha float64
	// SingleMs is the candidate's one timing in the search, the one that
	// made it a candidate. Its gap to the series' mean measures how far a
	// selected single timing can be off, which the noise test must know.
	SingleMs float64
	// TimeMs and BaselineMs are the mean train times; TimeSD and
	// BaselineSD their sample standard deviations.
	TimeMs, BaselineMs float64
	TimeSD, BaselineSD float64
	// LossMean and LossSD are the candidate's validation losses.
	LossMean, LossSD float64
	// Speedup is runs.Speedup of the means; SpeedupLo and SpeedupHi bound
	// it with 95% confidence (from the interval of the difference of the
	// means, divided by the baseline's mean).
	Speedup, SpeedupLo, SpeedupHi float64
	// TimeP is the one-sided p of "the candidate is faster" (Welch's
	// test, or the test against the measured noise); LossP of "its mean
	// loss is under the target".
	TimeP, LossP float64
	// NoiseCV and NoiseDF describe the noise a MethodNoise claim was
	// judged against: the relative standard deviation of one timing, and
	// its degrees of freedom.
	NoiseCV float64
	NoiseDF int
	Reason  string
}

// Evidence says in one line what the claim rests on: the number of runs,
// the interval and the p-value, or that it is a single timing.
func (c Claim) Evidence() string {
	switch {
	case c.Method == MethodNoise && c.State == ClaimConfirmed:
		return fmt.Sprintf("single timing, %s beyond the measured noise (one timing varies by %.1f%%, %d df; p = %s)",
			FormatSpeedup(c.Speedup), 100*c.NoiseCV, c.NoiseDF, formatP(c.TimeP))
	case c.Method == MethodNoise:
		return "single timing"
	case c.State == ClaimQueued || c.State == ClaimRunning:
		return fmt.Sprintf("single timing; a series of %d pairs is %s", c.Pairs, c.State)
	case c.State == ClaimSkipped || c.State == ClaimSuperseded:
		return "single timing (not confirmed: " + string(c.State) + ")"
	case c.State == ClaimFailed && math.IsNaN(c.TimeP):
		r := []rune(c.Reason)
		if len(r) > 120 {
			r = append(r[:117], []rune("...")...)
		}
		return fmt.Sprintf("single timing; its series (n = %d each) failed: %s", c.Pairs, string(r))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in alternation, n = %d each: %s", c.State, c.Pairs, FormatSpeedup(c.Speedup))
	if !math.IsNaN(c.SpeedupLo) && !math.IsNaN(c.SpeedupHi) && (c.SpeedupLo != 0 || c.SpeedupHi != 0) {
		fmt.Fprintf(&b, " (95%% CI %s to %s)", FormatSpeedup(c.SpeedupLo), FormatSpeedup(c.SpeedupHi))
	}
	fmt.Fprintf(&b, ", Welch p = %s", formatP(c.TimeP))
	if !math.IsNaN(c.LossP) {
		fmt.Fprintf(&b, ", loss under target p = %s", formatP(c.LossP))
	}
	if c.Alpha > 0 {
		fmt.Fprintf(&b, " (alpha %g)", c.Alpha)
	}
	return b.String()
}

func formatP(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.2g", p)
}

// Standing is the run's record among claims: the confirmed claim with the
// shortest mean time (the first on a tie). ok is false when none is
// confirmed: the record is then the reference.
func Standing(claims []Claim) (rec Claim, ok bool) {
	for _, c := range claims {
		if c.State == ClaimConfirmed && Measured(c.TimeMs) && (!ok || c.TimeMs < rec.TimeMs) {
			rec, ok = c, true
		}
	}
	return rec, ok
}

// Brief is the evidence in a few words, for a table cell: "confirmed n=5
// p=0.002", "beyond noise p=1e-05", "single timing".
func (c Claim) Brief() string {
	switch {
	case c.Method == MethodNoise && c.State == ClaimConfirmed:
		return "beyond noise p=" + formatP(c.TimeP)
	case c.Method == MethodNoise || !c.State.Done() || c.State == ClaimSkipped || c.State == ClaimSuperseded:
		return "single timing"
	}
	return fmt.Sprintf("%s n=%d p=%s", c.State, c.Pairs, formatP(c.TimeP))
}

// Record is a run's record: the program of the confirmed claim with the
// shortest mean time (Claim set), else the reference (Claim nil); with the
// best estimate of its time and the number of timings behind it. ID is 0
// when there is none (the reference has no time yet).
//
// Ms is a series' mean when one measured the record, taken under the
// load of that series; SingleMs is the record's own single timing in the
// search. A child's single timing is compared with SingleMs, never with
// Ms: a mean taken under one load and a timing taken at a quieter moment
// are not measurements taken together.
type Record struct {
	ID       int64
	Ms       float64
	N        int
	SingleMs float64
	Claim    *Claim
}

// RecordOf is the record of a run whose claims are claims (in the order
// made) and whose reference measured ref. The engine, runs show and the
// report all read the record from here.
func RecordOf(claims []Claim, ref Outcome) Record {
	if c, ok := Standing(claims); ok {
		ms, n := EstimateOf(claims, c.ChildID, c.TimeMs)
		single := c.SingleMs
		if !Measured(single) {
			single = c.TimeMs
		}
		return Record{ID: c.ChildID, Ms: ms, N: n, SingleMs: single, Claim: &c}
	}
	if ref.ID == 0 || !ref.Timed() {
		return Record{}
	}
	ms, n := EstimateOf(claims, ref.ID, ref.TrainTimeMs)
	return Record{ID: ref.ID, Ms: ms, N: n, SingleMs: ref.TrainTimeMs}
}

// Basis says what a claim's speedup compares: "series" when it is the
// means of its interleaved series (both programs measured together), or
// "single timings" (the candidate's and its baseline's single timings in
// the search: a claim that was judged against the measured noise, or
// whose series has not run).
func (c Claim) Basis() string {
	if c.Method == MethodSeries && (c.State == ClaimConfirmed || c.State == ClaimRejected || c.State == ClaimFailed && !math.IsNaN(c.TimeP)) {
		return "series"
	}
	return "single timings"
}

// VsReference is the record's speedup over the reference (refID) and what
// it rests on, from the claims that made it, never from two figures
// measured apart: a record confirmed against the reference has its
// series' speedup; one confirmed against an earlier record chains the
// time ratios of the claims back to the reference, each measured
// together (1 - the product of t/t_baseline). NaN when the record is the
// reference or the chain is broken.
func (r Record) VsReference(claims []Claim, refID int64) (float64, string) {
	if r.Claim == nil {
		return math.NaN(), "the reference is the record"
	}
	ratio := 1.0
	var links []string
	cur := *r.Claim
	for range len(claims) + 1 {
		if !Measured(cur.TimeMs) || !Measured(cur.BaselineMs) {
			return math.NaN(), fmt.Sprintf("claim %d has no times", cur.ID)
		}
		ratio *= cur.TimeMs / cur.BaselineMs
		against := fmt.Sprintf("#%d", cur.BaselineID)
		if cur.BaselineID == refID {
			against = "the reference"
		}
		link := fmt.Sprintf("#%d vs %s, %s", cur.ChildID, against, cur.Basis())
		if cur.Basis() == "series" {
			link += fmt.Sprintf(" n = %d", cur.Pairs)
		}
		links = append(links, link)
		if cur.BaselineID == refID {
			if len(links) == 1 {
				return 1 - ratio, "from its claim: " + link
			}
			return 1 - ratio, "chained over its claims, each measured together: " + strings.Join(links, "; ")
		}
		next, ok := confirmedOf(claims, cur.BaselineID)
		if !ok {
			return math.NaN(), fmt.Sprintf("#%d, its baseline, has no confirmed claim against the reference", cur.BaselineID)
		}
		cur = next
	}
	return math.NaN(), "the claims form a loop"
}

// confirmedOf is the newest confirmed claim of member id.
func confirmedOf(claims []Claim, id int64) (Claim, bool) {
	for i := len(claims) - 1; i >= 0; i-- {
		if c := claims[i]; c.ChildID == id && c.State == ClaimConfirmed {
			return c, true
		}
	}
	return Claim{}, false
}

// EstimateOf is the best estimate of the train time of member id: the mean
// of its newest series that ran (as candidate or baseline), else single,
// its one timing. A claim settled without its series (skipped, superseded)
// holds the two single timings that made it, not means.
func EstimateOf(claims []Claim, id int64, single float64) (ms float64, n int) {
	for i := len(claims) - 1; i >= 0; i-- {
		c := claims[i]
		if c.Basis() != "series" || c.Pairs < 2 {
			continue
		}
		switch {
		case c.ChildID == id && Measured(c.TimeMs) && !math.IsNaN(c.TimeSD):
			return c.TimeMs, c.Pairs
		case c.BaselineID == id && Measured(c.BaselineMs):
			return c.BaselineMs, c.Pairs
		}
	}
	return single, 1
}
