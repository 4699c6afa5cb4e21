package evolve

import (
	"context"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/propose"
)

// requestLog keeps what the engine asked of a proposer (all but the
// program and the prompt).
type requestLog struct {
	inner propose.Proposer
	mu    sync.Mutex
	reqs  []propose.Request
}

func (l *requestLog) Propose(ctx context.Context, req propose.Request) (*propose.Proposal, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, propose.Request{Parent: propose.Program{ValLoss: req.Parent.ValLoss}, Target: req.Target, Seed: req.Seed, Attempt: req.Attempt})
	l.mu.Unlock()
	return l.inner.Propose(ctx, req)
}

// The mutate baseline spends a parent's loss margin only when the engine
// hands it the parent's measured loss, the track's target and the child's
// attempt: every proposal of a search must carry them.
func TestProposerSeesTheParentsLoss(t *testing.T) {
	st := openStore(t, "")
	rec := &requestLog{inner: propose.NewMutate()}
	opts := fakeOptions(t, st, Model{Name: "mutate", Kind: propose.KindMutate, Proposer: rec})
	cfg := smallConfig()
	runEngine(t, opts, cfg)
	attempts := map[int]int{}
	for _, r := range rec.reqs {
		// hashOutcome's losses are 4.35 to 4.74; a parent is acceptable.
		if r.Parent.ValLoss < 4.35 || r.Parent.ValLoss > opts.Track.TargetValLoss || r.Target != opts.Track.TargetValLoss {
			t.Errorf("seed %d: parent's loss %v, target %v; want the parent's measured loss and %v", r.Seed, r.Parent.ValLoss, r.Target, opts.Track.TargetValLoss)
		}
		attempts[r.Attempt]++
	}
	if len(rec.reqs) < cfg.BranchingFactor*cfg.Budget.MaxIterations || len(attempts) != cfg.BranchingFactor || attempts[1] < cfg.Budget.MaxIterations {
		t.Errorf("%d proposals, by attempt %v: want %d iterations of attempts 1 to %d", len(rec.reqs), attempts, cfg.Budget.MaxIterations, cfg.BranchingFactor)
	}
}
