// Package llmtest helps test code that uses language models, without a
// network: Fake is a scripted llm.Client, and Server is a local HTTP
// server that speaks the OpenAI, Anthropic or Gemini wire format with
// scripted answers, for tests that go through the real adapters.
package llmtest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
)

// Reply is one scripted answer of a Fake.
type Reply struct {
	Text         string
	Usage        llm.Usage
	CostUSD      float64
	FinishReason string // defaults to llm.FinishStop
	Model        string // defaults to the request's model
	Err          error  // returned instead of a response when set
	// Delay holds the answer back; the call fails with the context's error
	// if it ends first.
	Delay time.Duration
}

// ErrScriptExhausted is returned by a Fake that has no reply left.
var ErrScriptExhausted = errors.New("llmtest: no scripted reply left")

// Fake is an llm.Client that answers from a script, in order, and records
// the requests it got. It is safe for concurrent use.
type Fake struct {
	mu       sync.Mutex
	replies  []Reply
	next     int
	repeat   bool
	requests []llm.Request
	// Respond, when set, answers every request the script does not.
	Respond func(req llm.Request) Reply
}

// New returns a Fake that gives the replies in order, then fails with
// ErrScriptExhausted.
func New(replies ...Reply) *Fake { return &Fake{replies: replies} }

// Texts returns a Fake that answers with the texts in order.
func Texts(texts ...string) *Fake {
	f := &Fake{}
	for _, t := range texts {
		f.replies = append(f.replies, Reply{Text: t})
	}
	return f
}

// Always returns a Fake that gives r to every request.
func Always(r Reply) *Fake { return &Fake{replies: []Reply{r}, repeat: true} }

// Complete answers with the next scripted reply.
func (f *Fake) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	var r Reply
	switch {
	case f.next < len(f.replies):
		r = f.replies[f.next]
		if !f.repeat {
			f.next++
		}
	case f.Respond != nil:
		r = f.Respond(req)
	default:
		f.mu.Unlock()
		return nil, ErrScriptExhausted
	}
	f.mu.Unlock()
	if r.Delay > 0 {
		if err := llm.SleepContext(ctx, r.Delay); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.Err != nil {
		return nil, r.Err
	}
	resp := &llm.Response{
		Text: r.Text, Usage: r.Usage, CostUSD: r.CostUSD, FinishReason: r.FinishReason,
		Model: r.Model, Provider: "fake", Attempts: 1, Latency: r.Delay,
	}
	if resp.FinishReason == "" {
		resp.FinishReason = llm.FinishStop
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	return resp, nil
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.requests...)
}

// Calls returns how many requests were received.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
