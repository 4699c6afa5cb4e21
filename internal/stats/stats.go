// Package stats holds the statistics of repeated runs: summaries with
// confidence intervals, the one-sided one-sample t-test the speedrun uses to
// accept a record (mean val loss below the target at p < 0.01), and Welch's
// t-test to compare times with a baseline.
package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes a sample.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation (n-1)
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	// CILo and CIHi bound the mean with confidence Level (Student's t);
	// both equal Mean when N < 2.
	CILo  float64 `json:"ci_lo"`
	CIHi  float64 `json:"ci_hi"`
	Level float64 `json:"level"`
}

// Summarize returns the summary of xs with a two-sided confidence interval
// at level (for example 0.95).
func Summarize(xs []float64, level float64) Summary {
	s := Summary{N: len(xs), Level: level}
	if len(xs) == 0 {
		return s
	}
	s.Min, s.Max = xs[0], xs[0]
	for _, x := range xs {
		s.Mean += x
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	s.CILo, s.CIHi = s.Mean, s.Mean
	if len(xs) < 2 {
		return s
	}
	var ss float64
	for _, x := range xs {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(len(xs)-1))
	q := studentT(float64(len(xs) - 1)).Quantile(1 - (1-level)/2)
	half := q * s.SD / math.Sqrt(float64(len(xs)))
	s.CILo, s.CIHi = s.Mean-half, s.Mean+half
	return s
}

// TTest is the result of a t-test.
type TTest struct {
	T     float64 `json:"t"`
	DF    float64 `json:"df"`
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	// Significant is P < Alpha.
	Significant bool `json:"significant"`
}

func (t TTest) String() string {
	verdict := "not significant"
	if t.Significant {
		verdict = "significant"
	}
	return fmt.Sprintf("t = %.3f, df = %.1f, p = %.4g (%s at alpha %g)", t.T, t.DF, t.P, verdict, t.Alpha)
}

// ErrTooFew means a test needs more observations.
var ErrTooFew = errors.New("too few observations")

// MeanBelow tests H1: the mean of xs is below mu (one-sided one-sample
// t-test), the speedrun's acceptance rule.
func MeanBelow(xs []float64, mu, alpha float64) (TTest, error) {
	s := Summarize(xs, 0.95)
	if s.N < 2 {
		return TTest{}, fmt.Errorf("one-sample t-test: %w: need at least 2 runs, have %d", ErrTooFew, s.N)
	}
	df := float64(s.N - 1)
	r := TTest{DF: df, Alpha: alpha}
	if s.SD == 0 {
		// No spread: the mean is below mu with certainty or not at all.
		r.T = math.Inf(-1)
		r.P = 0
		if s.Mean >= mu {
			r.T, r.P = math.Inf(1), 1
		}
	} else {
		r.T = (s.Mean - mu) / (s.SD / math.Sqrt(float64(s.N)))
		r.P = studentT(df).CDF(r.T)
	}
	r.Significant = r.P < alpha
	return r, nil
}

// WelchLess tests H1: the mean of xs is below the mean of ys (one-sided
// Welch's t-test, unequal variances).
func WelchLess(xs, ys []float64, alpha float64) (TTest, error) {
	a, b := Summarize(xs, 0.95), Summarize(ys, 0.95)
	if a.N < 2 || b.N < 2 {
		return TTest{}, fmt.Errorf("welch t-test: %w: need at least 2 runs on each side, have %d and %d", ErrTooFew, a.N, b.N)
	}
	va, vb := a.SD*a.SD/float64(a.N), b.SD*b.SD/float64(b.N)
	r := TTest{Alpha: alpha}
	if va+vb == 0 {
		r.DF = float64(a.N + b.N - 2)
		r.T, r.P = math.Inf(-1), 0
		if a.Mean >= b.Mean {
			r.T, r.P = math.Inf(1), 1
		}
	} else {
		r.T = (a.Mean - b.Mean) / math.Sqrt(va+vb)
		r.DF = (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
		r.P = studentT(r.DF).CDF(r.T)
	}
	r.Significant = r.P < alpha
	return r, nil
}

func studentT(df float64) distuv.StudentsT {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
}

// MinPairs is the smallest number of runs of each of two programs for
// which a comparison can reach significance at alpha without resting on
// the normal approximation alone: even when every run of one program beats
// every run of the other, a rank (permutation) test cannot give a p below
// 1 / C(2n, n). For n = 2 that is 1/6, so two runs of each can never show
// a difference at alpha 0.01; Welch's t-test would claim one only from its
// assumption that timing noise is normal, with one or two degrees of
// freedom. MinPairs(0.01) is 5 (1/252), MinPairs(0.05) is 4 (1/70).
func MinPairs(alpha float64) int {
	for n := 1; n < 40; n++ {
		if 1/binomial(2*n, n) < alpha {
			return n
		}
	}
	return 40
}

// RankFloor is the smallest p a rank test can give for n runs of each
// program: 1 / C(2n, n).
func RankFloor(n int) float64 { return 1 / binomial(2*n, n) }

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// DiffInterval is the two-sided confidence interval at level of
// mean(ys) - mean(xs), with Welch's standard error and degrees of freedom:
// how much longer ys takes than xs. It needs two observations on each
// side.
func DiffInterval(xs, ys []float64, level float64) (lo, hi float64, err error) {
	a, b := Summarize(xs, level), Summarize(ys, level)
	if a.N < 2 || b.N < 2 {
		return 0, 0, fmt.Errorf("interval of a difference: %w: need at least 2 runs on each side, have %d and %d", ErrTooFew, a.N, b.N)
	}
	d := b.Mean - a.Mean
	va, vb := a.SD*a.SD/float64(a.N), b.SD*b.SD/float64(b.N)
	if va+vb == 0 {
		return d, d, nil
	}
	df := (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
	half := studentT(df).Quantile(1-(1-level)/2) * math.Sqrt(va+vb)
	return d - half, d + half, nil
}

// Upper is the one-sided p-value of a t statistic with df degrees of
// freedom: P(T >= t).
func Upper(t, df float64) float64 {
	if df <= 0 || math.IsNaN(t) {
		return math.NaN()
	}
	return 1 - studentT(df).CDF(t)
}

// Quantile is Student's t quantile: the t with P(T <= t) = p at df
// degrees of freedom.
func Quantile(p, df float64) float64 { return studentT(df).Quantile(p) }
