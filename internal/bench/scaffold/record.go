package scaffold

import (
	"context"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/store"
)

// nodeCalls records the model calls of one node of a bench attempt.
type nodeCalls struct {
	st   Store
	node int64
}

func (c nodeCalls) CallStarted(ctx context.Context, call *store.LLMCall) error {
	return c.st.InsertBenchCall(ctx, c.node, call)
}

func (c nodeCalls) CallFinished(ctx context.Context, call *store.LLMCall) error {
	return c.st.FinishLLMCall(ctx, call)
}

// recorder returns a client that records every call of node n through
// inner (search.Recorder).
func (w *worker) recorder(inner llm.Client, n *store.BenchNode, purpose string) *search.Recorder {
	return &search.Recorder{Inner: inner, Log: nodeCalls{w.s.Store, n.ID}, Redact: w.s.Redact, Purpose: purpose}
}

// charge adds what the recorded calls cost to their node.
func charge(n *store.BenchNode, rec *search.Recorder) {
	for _, call := range rec.Calls {
		n.InputTokens += call.InputTokens
		n.OutputTokens += call.OutputTokens
		n.CostUSD += call.CostUSD
	}
}
