package bench

import (
	"context"

	"github.com/frontier-bench/frontier/internal/store"
)

// Learnability is how much an attempt at a task can teach now: the
// variance p(1-p) of its success, with p the chance that an attempt
// reaches the goal, estimated from past attempts with a uniform prior
// ((successes+1)/(trials+2)). A task always solved or never solved
// teaches little; one solved half the time the most (LILO's argument for
// sampling by learnability). An untried task has p = 1/2.
func Learnability(successes, trials int) float64 {
	p := float64(successes+1) / float64(trials+2)
	return p * (1 - p)
}

// taskRecord is a task's past attempts.
type taskRecord struct{ successes, trials int }

// history counts, per task, the finished attempts of every run like this
// one (same suite, scaffold, model and hints) and whether each reached
// the run's success FSR.
func (b *Bench) history(ctx context.Context) (map[string]taskRecord, error) {
	st := b.env.Store
	runs, err := st.BenchRuns(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]taskRecord{}
	for _, r := range runs {
		if r.Suite != b.run.Suite || r.Scaffold != b.run.Scaffold || r.Model != b.run.Model || r.Hints != b.run.Hints {
			continue
		}
		as, err := st.BenchAttempts(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			if a.State != store.AttemptDone {
				continue
			}
			rec := out[a.Task]
			rec.trials++
			if a.FSR >= b.cfg.Success {
				rec.successes++
			}
			out[a.Task] = rec
		}
	}
	return out, nil
}

// pickLearnable returns the pending attempt whose task is the most
// learnable; among equals, the task tried least, then the first in the
// run's order.
func pickLearnable(pending []*store.BenchAttempt, hist map[string]taskRecord) *store.BenchAttempt {
	var best *store.BenchAttempt
	bestL, bestN := -1.0, 0
	for _, a := range pending {
		h := hist[a.Task]
		l := Learnability(h.successes, h.trials)
		if l > bestL+1e-12 || (l > bestL-1e-12 && h.trials < bestN) {
			best, bestL, bestN = a, l, h.trials
		}
	}
	return best
}
