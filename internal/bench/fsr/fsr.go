// Package fsr is the published benchmark's score: the fraction of a
// record's speedup a search recovered (FSR), its mean over a task's seeds
// and its mean and interquartile mean over a suite's tasks, each with a
// bootstrap interval, and the order of the benchmark's hint settings. The
// benchmark scores its attempts with it and every reader of its results
// (the bench report, the dashboard) aggregates with it; it depends on
// nothing.
package fsr

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Of is the FSR of a search: the fraction of the speedup from record i to record i+1 that a
// search recovered: (start - best) / (start - goal), where start and goal
// are the two records' train times and best is the best train time among
// the search's acceptable programs *including the start program*, so that
// a search that finds nothing faster scores 0, never less. A gap that is
// not positive (the goal is not faster than the start) scores 0, as in the
// published benchmark. A best time that is not a positive number (no
// acceptable program) counts as the start's. FSR is not capped at 1: a
// search that beats the goal recovers more than the human record did.
func Of(start, goal, best float64) float64 {
	gap := start - goal
	if !(gap > 0) || math.IsInf(gap, 0) {
		return 0
	}
	if !(best > 0) || best > start {
		best = start
	}
	return (start - best) / gap
}

// Mean is the arithmetic mean; 0 for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// IQM is the interquartile mean: the mean of the values left after
// dropping the floor(n/4) lowest and the floor(n/4) highest (scipy's
// trim_mean(xs, 0.25), which rliable uses). It is robust to a few tasks
// that are solved outright or not at all, and with fewer than four values
// it is the mean. 0 for no values.
func IQM(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := len(s) / 4
	return Mean(s[k : len(s)-k])
}

// Interval is a statistic with a confidence interval.
type Interval struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// N is how many values it was computed from.
	N int `json:"n"`
}

// Bootstrap returns stat over xs with its percentile bootstrap interval at
// level (0.95): stat over resamples of xs drawn with replacement, and the
// (1-level)/2 and (1+level)/2 quantiles of those (linear interpolation
// between order statistics). The generator is seeded with seed, so the
// interval is the same each time. One value, or values that are all
// equal, give an interval of width zero: a resample cannot differ.
func Bootstrap(xs []float64, stat func([]float64) float64, resamples int, level float64, seed uint64) Interval {
	iv := Interval{N: len(xs)}
	if len(xs) == 0 {
		return iv
	}
	iv.Value = stat(xs)
	iv.Lo, iv.Hi = iv.Value, iv.Value
	if len(xs) == 1 || resamples < 1 {
		return iv
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	stats := make([]float64, resamples)
	buf := make([]float64, len(xs))
	for b := range stats {
		for i := range buf {
			buf[i] = xs[rng.IntN(len(xs))]
		}
		stats[b] = stat(buf)
	}
	slices.Sort(stats)
	iv.Lo = quantile(stats, (1-level)/2)
	iv.Hi = quantile(stats, (1+level)/2)
	return iv
}

// quantile is the q-quantile of sorted xs, interpolating linearly between
// order statistics (R's type 7, NumPy's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Outcome is one attempt's score: a task with a seed.
type Outcome struct {
	Task string
	Seed int
	FSR  float64
}

// TaskScore is a task's FSR over its seeds: the mean, with a bootstrap
// interval over the seeds.
type TaskScore struct {
	Task string   `json:"task"`
	FSR  Interval `json:"fsr"`
}

// Scores are a configuration's results over a suite: per task the mean
// over seeds, and over tasks the mean and the interquartile mean of those,
// each with a bootstrap interval over the tasks (it says how much the
// figure depends on which tasks the suite holds).
type Scores struct {
	Tasks []TaskScore `json:"tasks"`
	Mean  Interval    `json:"mean"`
	IQM   Interval    `json:"iqm"`
}

// Resamples is the number of bootstrap resamples of every interval.
const Resamples = 2000

// Summarize scores outcomes: tasks in the order they first appear.
func Summarize(outcomes []Outcome, seed uint64) Scores {
	var order []string
	byTask := map[string][]float64{}
	for _, o := range outcomes {
		if _, ok := byTask[o.Task]; !ok {
			order = append(order, o.Task)
		}
		byTask[o.Task] = append(byTask[o.Task], o.FSR)
	}
	var sc Scores
	perTask := make([]float64, 0, len(order))
	for i, t := range order {
		iv := Bootstrap(byTask[t], Mean, Resamples, 0.95, seed+uint64(i)+1)
		sc.Tasks = append(sc.Tasks, TaskScore{Task: t, FSR: iv})
		perTask = append(perTask, iv.Value)
	}
	sc.Mean = Bootstrap(perTask, Mean, Resamples, 0.95, seed)
	sc.IQM = Bootstrap(perTask, IQM, Resamples, 0.95, seed)
	return sc
}

// HintSettings are the hint settings of the published benchmark, in the
// order its tables list them.
var HintSettings = []string{"none", "1", "2", "3", "1+2", "1+2+3"}
