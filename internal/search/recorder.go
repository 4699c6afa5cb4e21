package search

import (
	"context"
	"encoding/json"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/store"
)

// CallLog is where a Recorder records model calls: a call before it is
// sent (CallStarted gives it its id), then its answer or failure
// (CallFinished, called with a context that is not canceled, so that an
// answer that came in is recorded while the search is being aborted).
type CallLog interface {
	CallStarted(ctx context.Context, call *store.LLMCall) error
	CallFinished(ctx context.Context, call *store.LLMCall) error
}

// Recorder is an llm.Client that records every call it passes to Inner:
// the redacted request before it is sent, then the answer, usage and
// cost. A failure to record ends the call with a *StoreError (and sets
// Err), which a search tells from a failed call: it ends the search, not
// the candidate. Use one Recorder per candidate and purpose, from one
// goroutine.
type Recorder struct {
	Inner llm.Client
	Log   CallLog
	// Redact removes secrets from requests and answers before they are
	// recorded; nil means llm.Redact.
	Redact func(string) string
	// Purpose is recorded with every call (what it asked for).
	Purpose string
	// Calls are the calls recorded, in order.
	Calls []*store.LLMCall
	// Err is the first failure to record.
	Err error
}

// Complete records the call, sends it to Inner, and records the answer.
func (r *Recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	call, err := r.start(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := r.Inner.Complete(ctx, req)
	if ferr := r.finish(ctx, call, resp, err); ferr != nil {
		return nil, ferr
	}
	return resp, err
}

// Replayed records a call whose answer came from a recording, not from a
// client.
func (r *Recorder) Replayed(ctx context.Context, req llm.Request, resp *llm.Response) error {
	call, err := r.start(ctx, req)
	if err != nil {
		return err
	}
	return r.finish(ctx, call, resp, nil)
}

func (r *Recorder) redact(s string) string {
	if r.Redact == nil {
		return llm.Redact(s)
	}
	return r.Redact(s)
}

func (r *Recorder) start(ctx context.Context, req llm.Request) (*store.LLMCall, error) {
	reqJSON, _ := json.Marshal(req)
	call := &store.LLMCall{Purpose: r.Purpose, Model: req.Model, Request: r.redact(string(reqJSON))}
	if err := r.Log.CallStarted(ctx, call); err != nil {
		return nil, r.failed(err)
	}
	r.Calls = append(r.Calls, call)
	return call, nil
}

func (r *Recorder) finish(ctx context.Context, call *store.LLMCall, resp *llm.Response, err error) error {
	if resp != nil {
		u := resp.Usage
		call.Answer = r.redact(resp.Text)
		call.ServerModel, call.Provider, call.FinishReason = resp.Model, resp.Provider, resp.FinishReason
		call.InputTokens, call.OutputTokens, call.ReasoningTokens, call.CachedTokens = u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedTokens
		call.Estimated, call.CostUSD, call.PriceUnknown = u.Estimated, resp.CostUSD, resp.PriceUnknown
		call.LatencyMs, call.Attempts, call.RequestID = float64(resp.Latency)/1e6, resp.Attempts, resp.RequestID
	}
	call.State = store.CallDone
	if err != nil {
		call.State, call.Error = store.CallFailed, r.redact(err.Error())
	}
	if ferr := r.Log.CallFinished(context.WithoutCancel(ctx), call); ferr != nil {
		return r.failed(ferr)
	}
	return nil
}

func (r *Recorder) failed(err error) error {
	if r.Err == nil {
		r.Err = err
	}
	return &StoreError{Err: err}
}

// StoreError is a failure to record a model call: it ends the search.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "record a model call: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// Prompt is the request a search sends for one rendered prompt: the
// system text, one user message, and the run's output limit and
// temperature (nil: the model's own).
func Prompt(model, system, user string, maxOutputTokens int, temperature *float64) llm.Request {
	req := llm.Request{Model: model, System: system, Messages: []llm.Message{{Role: llm.RoleUser, Content: user}},
		MaxOutputTokens: maxOutputTokens}
	if temperature != nil {
		t := *temperature
		req.Temperature = &t
	}
	return req
}
