package fsr

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestOf checks Of against cases computed by hand.
func TestOf(t *testing.T) {
	cases := []struct {
		name              string
		start, goal, best float64
		want              float64
	}{
		// (100 - 80) / (100 - 60) = 20 / 40
		{"half the gap", 100, 60, 80, 0.5},
		{"the goal reached", 100, 60, 60, 1},
		// (100 - 50) / 40 = 1.25: beating the human record counts
		{"beyond the goal", 100, 60, 50, 1.25},
		// The start program is the best: t_best = t_start, nothing recovered.
		{"start is the best", 100, 60, 100, 0},
		// A slower best is impossible (the start counts), so it is the start.
		{"slower than the start", 100, 60, 130, 0},
		{"no acceptable program", 100, 60, 0, 0},
		{"NaN best", 100, 60, math.NaN(), 0},
		// A negative gap (record 6 -> 7 of the speedrun): 0 whatever the search did.
		{"negative gap", 766259, 773072, 700000, 0},
		{"zero gap", 100, 100, 90, 0},
		// Ties: a best equal to the goal's time to the millisecond.
		{"tie with the goal", 2968348, 2209926, 2209926, 1},
	}
	for _, c := range cases {
		if got := Of(c.start, c.goal, c.best); !near(got, c.want) {
			t.Errorf("%s: FSR(%v, %v, %v) = %v, want %v", c.name, c.start, c.goal, c.best, got, c.want)
		}
	}
}

// TestIQM checks the interquartile mean against cases computed by hand.
func TestIQM(t *testing.T) {
	cases := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0.7}, 0.7},
		{[]float64{0, 1, 2}, 1},                 // fewer than 4: the mean
		{[]float64{4, 1, 3, 2}, 2.5},            // drop 1 and 4: mean(2, 3)
		{[]float64{5, 1, 4, 2, 3}, 3},           // drop 1 and 5: mean(2, 3, 4)
		{[]float64{0, 0, 0, 0, 0, 0, 0, 10}, 0}, // drop 0 and 10 (2 each side): a solved outlier does not move it
		{[]float64{0.2, 0.2, 0.2, 0.2}, 0.2},    // ties
		{[]float64{-1, 0, 0.5, 1, 2, 100, 3, 4}, (0.5 + 1 + 2 + 3) / 4}, // sorted -1 0 | 0.5 1 2 3 | 4 100
	}
	for _, c := range cases {
		if got := IQM(c.xs); !near(got, c.want) {
			t.Errorf("IQM(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	xs := []float64{3, 1, 2, 4}
	IQM(xs)
	if xs[0] != 3 {
		t.Error("IQM sorted its argument in place")
	}
}

// TestBootstrap checks the percentile bootstrap on cases whose resampling
// distribution is known exactly.
func TestBootstrap(t *testing.T) {
	// Two values 0 and 1: a resample's mean is 0 (p 1/4), 0.5 (p 1/2) or 1
	// (p 1/4), so the 2.5% and 97.5% quantiles are 0 and 1.
	iv := Bootstrap([]float64{0, 1}, Mean, 4000, 0.95, 1)
	if iv.Value != 0.5 || iv.Lo != 0 || iv.Hi != 1 || iv.N != 2 {
		t.Errorf("Bootstrap([0 1]) = %+v, want 0.5 in [0, 1]", iv)
	}
	// At level 0.4 the quantiles 30% and 70% both fall on 0.5.
	if iv := Bootstrap([]float64{0, 1}, Mean, 4000, 0.4, 1); iv.Lo != 0.5 || iv.Hi != 0.5 {
		t.Errorf("Bootstrap([0 1]) at 40%% = %+v, want [0.5, 0.5]", iv)
	}
	// Ties: every resample of equal values is the same.
	if iv := Bootstrap([]float64{0.3, 0.3, 0.3}, Mean, 500, 0.95, 7); !near(iv.Lo, 0.3) || !near(iv.Hi, 0.3) || !near(iv.Value, 0.3) {
		t.Errorf("Bootstrap of ties = %+v, want a point at 0.3", iv)
	}
	// One value: a point.
	if iv := Bootstrap([]float64{0.8}, Mean, 500, 0.95, 7); iv.Lo != 0.8 || iv.Hi != 0.8 || iv.N != 1 {
		t.Errorf("Bootstrap of one value = %+v", iv)
	}
	if iv := Bootstrap(nil, Mean, 500, 0.95, 7); iv != (Interval{}) {
		t.Errorf("Bootstrap of nothing = %+v", iv)
	}
	// The same seed, the same interval; the interval holds the statistic.
	xs := []float64{0, 0.1, 0.4, 0.45, 0.9, 1.2}
	a, b := Bootstrap(xs, IQM, 1000, 0.95, 42), Bootstrap(xs, IQM, 1000, 0.95, 42)
	if a != b {
		t.Errorf("the same seed gave %+v and %+v", a, b)
	}
	if !(a.Lo <= a.Value && a.Value <= a.Hi) || a.Lo < 0 || a.Hi > 1.2 {
		t.Errorf("interval %+v does not hold its value inside the data's range", a)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 1: 5, 0.5: 3, 0.25: 2, 0.1: 1.4} {
		if got := quantile(s, q); !near(got, want) {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

// TestScore: per task the mean over seeds; over tasks the mean and the IQM
// of those.
func TestSummarize(t *testing.T) {
	sc := Summarize([]Outcome{
		{Task: "a", Seed: 0, FSR: 0.2}, {Task: "a", Seed: 1, FSR: 0.4},
		{Task: "b", Seed: 0, FSR: 0}, {Task: "b", Seed: 1, FSR: 0},
		{Task: "c", Seed: 0, FSR: 1}, {Task: "c", Seed: 1, FSR: 1},
		{Task: "d", Seed: 0, FSR: 0.5}, {Task: "d", Seed: 1, FSR: 0.7},
	}, 1)
	if len(sc.Tasks) != 4 || sc.Tasks[0].Task != "a" || !near(sc.Tasks[0].FSR.Value, 0.3) || sc.Tasks[0].FSR.N != 2 {
		t.Fatalf("per task: %+v", sc.Tasks)
	}
	// Task means 0.3, 0, 1, 0.6: mean 0.475; IQM drops 0 and 1: mean(0.3, 0.6).
	if !near(sc.Mean.Value, 0.475) || !near(sc.IQM.Value, 0.45) || sc.Mean.N != 4 {
		t.Errorf("mean %+v, IQM %+v; want 0.475 and 0.45", sc.Mean, sc.IQM)
	}
	if b := sc.Tasks[1].FSR; b.Lo != 0 || b.Hi != 0 {
		t.Errorf("a task with tied seeds: %+v, want a point", b)
	}
	if sc.Mean.Lo > sc.Mean.Value || sc.Mean.Hi < sc.Mean.Value {
		t.Errorf("mean interval %+v", sc.Mean)
	}
}
