package runs

import "math"

// Outcome is what the aggregates read of one member.
type Outcome struct {
	ID           int64
	Verdict      Verdict
	ValLoss      float64 // 0: not measured
	TrainTimeMs  float64 // 0: not measured
	Score        float64 // step_avg_ms x val_loss; 0: not measured
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
}

// Measured reports whether x is a measurement: finite and positive. Losses
// and times are never zero or negative when measured.
func Measured(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// Timed reports whether o can hold the record: acceptable, with a measured
// train time.
func (o Outcome) Timed() bool { return o.Verdict == Acceptable && Measured(o.TrainTimeMs) }

// Faster reports whether o is timed and faster than cur (cur.ID == 0:
// there is none yet); of equal times the older member (the lower id) is
// the faster, whatever the order they are added in.
func (o Outcome) Faster(cur Outcome) bool {
	return o.Timed() && (cur.ID == 0 || o.TrainTimeMs < cur.TrainTimeMs || (o.TrainTimeMs == cur.TrainTimeMs && o.ID < cur.ID))
}

// Objectives: what ranks programs of the same verdict class, lower is
// better.
const (
	ObjectiveScore = "score" // the paper's step_avg_ms x val_loss
	ObjectiveTime  = "time"  // train time
	ObjectiveLoss  = "loss"  // validation loss
)

// ObjectiveValue is the figure an objective ranks o by; +Inf when it is not
// measured, so that it ranks last. An unknown objective ranks by score.
func ObjectiveValue(objective string, o Outcome) float64 {
	v := o.Score
	switch objective {
	case ObjectiveTime:
		v = o.TrainTimeMs
	case ObjectiveLoss:
		v = o.ValLoss
	}
	if !Measured(v) {
		return math.Inf(1)
	}
	return v
}

// Tally aggregates members in the order they are added: counts by class
// and by verdict, the fastest acceptable timing, the lowest valid loss,
// tokens and cost. The zero value is empty and ready to use.
type Tally struct {
	Members  int
	Classes  map[Class]int
	Verdicts map[Verdict]int
	// Fastest is the acceptable member with the shortest measured train
	// time, the first one on a tie; ID 0 when none. It is one timing: a
	// candidate record, not a record until a claim confirms it (see
	// Claim and Standing).
	Fastest Outcome
	// Lowest is the valid member with the lowest measured validation loss;
	// ID 0 when none.
	Lowest       Outcome
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64 // NaN and ±Inf costs are left out
}

// Add counts one member.
func (t *Tally) Add(o Outcome) {
	if t.Classes == nil {
		t.Classes, t.Verdicts = map[Class]int{}, map[Verdict]int{}
	}
	t.Members++
	t.Classes[ClassOf(o.Verdict)]++
	t.Verdicts[o.Verdict]++
	if o.Faster(t.Fastest) {
		t.Fastest = o
	}
	if o.Verdict.Valid() && Measured(o.ValLoss) && (t.Lowest.ID == 0 || o.ValLoss < t.Lowest.ValLoss) {
		t.Lowest = o
	}
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	if !math.IsInf(o.CostUSD, 0) && !math.IsNaN(o.CostUSD) {
		t.CostUSD += o.CostUSD
	}
}

// Judged is the number of members in the paper's breakdown: acceptable,
// loss too high or buggy. Buggy includes apply_failed, whose edit never
// applied: judged, but never run (see Ran).
func (t *Tally) Judged() int {
	return t.Classes[ClassAcceptable] + t.Classes[TooHigh] + t.Classes[Buggy]
}

// Ran is the number of judged members a process ran: Judged without the
// edits that never applied.
func (t *Tally) Ran() int { return t.Judged() - t.Verdicts[ApplyFailed] }

// AcceptableRate is the share of judged members that are acceptable; 0
// when none was judged.
func (t *Tally) AcceptableRate() float64 {
	if n := t.Judged(); n > 0 {
		return float64(t.Classes[ClassAcceptable]) / float64(n)
	}
	return 0
}
