package bench

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// A search's best time is a single timing of the fastest of many
// programs, picked for being low, and the start's time was taken
// elsewhere or at another moment. With --retime K the best node is run K
// more times in alternation with its start program (ABBA: start first in
// even pairs, the best first in odd ones, the same seed in a pair), and
// FSR is scored from that series: the best's time is the start's time
// times the ratio of the two means, measured together.

// retimed is what a re-timing found.
type retimed struct {
	// ok is false when the series cannot score the attempt (the start
	// failed a run): FSR stays the single timing's.
	ok bool
	// bestMs is the best node's time on the score's scale: the attempt's
	// start time times the series' ratio; the start's time when a run of
	// the best failed.
	bestMs  float64
	note    string
	stopped string
}

// retimeSeed is the seed of pair i of attempt a's re-timing: apart from
// the search's (the attempt's seed) and from every other seed's.
func retimeSeed(a *store.BenchAttempt, k, i int) int { return 1000 + a.Seed*k + i }

// retime runs the re-timing of attempt a's best program (bestHash) against
// its start program, whose time on the score's scale is rootMs. Each pair
// is recorded in the attempt as it finishes, so that a re-timing cut off
// by a kill resumes with its finished pairs (a pair cut in the middle
// runs again whole).
func (b *Bench) retime(ctx context.Context, a *store.BenchAttempt, bestHash string, rootMs float64) (retimed, error) {
	st := b.env.Store
	k := b.cfg.Retime
	task, err := b.suite.Task(a.Task)
	if err != nil {
		return retimed{}, err
	}
	spec, err := b.trackOf(task)
	if err != nil {
		return retimed{}, err
	}
	start, err := st.Program(ctx, a.StartHash)
	if err != nil {
		return retimed{}, err
	}
	best, err := st.Program(ctx, bestHash)
	if err != nil {
		return retimed{}, err
	}
	// The pairs a cut-off re-timing finished.
	done := map[[2]int]*store.Evaluation{} // (0 start or 1 best, seed)
	for _, id := range a.RetimeEvaluations {
		ev, err := st.Evaluation(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return retimed{}, err
		}
		who := 0
		if ev.ProgramHash == bestHash {
			who = 1
		}
		done[[2]int{who, ev.Seed}] = ev
	}
	for _, h := range []string{a.StartHash, bestHash} {
		if err := st.InterruptEvaluations(ctx, h, a.StartedAt); err != nil {
			return retimed{}, err
		}
	}
	var startMs, bestMs []float64
	var evs []int64
	for i := range k {
		seed := retimeSeed(a, k, i)
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		pair := [2]*store.Evaluation{done[[2]int{0, seed}], done[[2]int{1, seed}]}
		if pair[0] == nil || pair[1] == nil {
			if reason, detail := b.stopReason(ctx); reason != "" {
				return retimed{stopped: joinReason(reason, detail)}, nil
			}
			for _, who := range order {
				src, name := start, "the start"
				if who == 1 {
					src, name = best, "the best node"
				}
				b.progress("  re-timing pair %d of %d: %s (seed %d)", i+1, k, name, seed)
				res, err := b.env.Evaluator.Evaluate(ctx, eval.Request{Track: spec, Program: src, Name: programName(spec), Seed: seed, SkipFast: true})
				if err != nil {
					return retimed{}, fmt.Errorf("re-time %s with seed %d: %w", name, seed, err)
				}
				pair[who] = &store.Evaluation{ID: res.EvaluationID, Verdict: string(res.Verdict), Reason: res.Reason,
					TrainTimeMs: res.Metrics.TrainTimeMs, Seed: seed}
			}
			a.RetimeEvaluations = append(a.RetimeEvaluations, pair[0].ID, pair[1].ID)
			if err := st.UpdateBenchAttempt(ctx, a); err != nil {
				return retimed{}, err
			}
		}
		evs = append(evs, pair[0].ID, pair[1].ID)
		for who, ev := range pair {
			if ev.Verdict == string(eval.Acceptable) {
				continue
			}
			a.RetimeN, a.RetimeEvaluations = i, evs
			if who == 0 {
				return retimed{note: fmt.Sprintf("re-timing: the start program's run with seed %d is %s (%s): the series cannot score the attempt, which keeps its single timing",
					seed, ev.Verdict, firstLine(ev.Reason))}, nil
			}
			return retimed{ok: true, bestMs: rootMs, note: fmt.Sprintf("re-timing: the best node's run with seed %d is %s (%s): it does not reach the target with every seed, so the start stays the best",
				seed, ev.Verdict, firstLine(ev.Reason))}, nil
		}
		startMs, bestMs = append(startMs, pair[0].TrainTimeMs), append(bestMs, pair[1].TrainTimeMs)
	}
	s, bt := stats.Summarize(startMs, 0.95), stats.Summarize(bestMs, 0.95)
	a.RetimeN, a.RetimeEvaluations, a.RetimeStartMs, a.RetimeBestMs = k, evs, s.Mean, bt.Mean
	a.RetimeP = 0
	if w, err := stats.WelchLess(bestMs, startMs, spec.Verification.Alpha); err == nil && !math.IsNaN(w.P) {
		a.RetimeP = w.P
	}
	out := retimed{ok: true, bestMs: rootMs * bt.Mean / s.Mean}
	if !(bt.Mean < s.Mean) {
		out.note = fmt.Sprintf("re-timing: in %d runs of each in alternation, the best node (%s) was not faster than the start (%s): its single timing was noise",
			k, seconds(bt.Mean), seconds(s.Mean))
	}
	return out, nil
}
