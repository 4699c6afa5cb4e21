package scaffold

import (
	"context"
	"encoding/json"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/store"
)

// recorder is an llm.Client that records every call of one node: the
// redacted request before it is sent, then the answer, usage and cost,
// which it also adds to the node. A store failure is kept in err: it ends
// the search, unlike a failed call, which fails the node.
type recorder struct {
	w       *worker
	inner   llm.Client
	node    *store.BenchNode
	purpose string
	err     error
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	st, redact := r.w.s.Store, r.w.s.Redact
	reqJSON, _ := json.Marshal(req)
	call := &store.LLMCall{Purpose: r.purpose, Model: req.Model, Request: redact(string(reqJSON))}
	if err := st.InsertBenchCall(ctx, r.node.ID, call); err != nil {
		r.err = err
		return nil, &storeError{err}
	}
	resp, err := r.inner.Complete(ctx, req)
	call.State = store.CallDone
	if err != nil {
		call.State, call.Error = store.CallFailed, redact(err.Error())
	}
	if resp != nil {
		u := resp.Usage
		call.Answer = redact(resp.Text)
		call.ServerModel, call.Provider, call.FinishReason = resp.Model, resp.Provider, resp.FinishReason
		call.InputTokens, call.OutputTokens, call.ReasoningTokens, call.CachedTokens = u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedTokens
		call.Estimated, call.CostUSD, call.PriceUnknown = u.Estimated, resp.CostUSD, resp.PriceUnknown
		call.LatencyMs, call.Attempts, call.RequestID = float64(resp.Latency)/1e6, resp.Attempts, resp.RequestID
		r.node.InputTokens += u.InputTokens
		r.node.OutputTokens += u.OutputTokens
		r.node.CostUSD += resp.CostUSD
	}
	if ferr := st.FinishLLMCall(context.WithoutCancel(ctx), call); ferr != nil {
		r.err = ferr
		return nil, &storeError{ferr}
	}
	return resp, err
}

// storeError is a failure to record: it ends the search.
type storeError struct{ err error }

func (e *storeError) Error() string { return "record a model call: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }
