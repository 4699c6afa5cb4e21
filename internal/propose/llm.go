package propose

import (
	"context"
	"errors"

	"github.com/frontier-bench/frontier/internal/llm"
)

// LLM proposes by asking a language model. It sends Request.Prompt as it
// is, then parses and applies the answer to the parent.
type LLM struct {
	client llm.Client
}

// NewLLM returns a proposer that asks client.
func NewLLM(client llm.Client) *LLM { return &LLM{client: client} }

// Propose implements Proposer.
func (p *LLM) Propose(ctx context.Context, req Request) (*Proposal, error) {
	if p.client == nil {
		return nil, &Error{Kind: FailCall, Proposer: KindLLM, Model: req.Prompt.Model, Err: errors.New("no model client configured")}
	}
	resp, err := p.client.Complete(ctx, req.Prompt)
	if err != nil {
		return nil, &Error{Kind: FailCall, Proposer: KindLLM, Model: req.Prompt.Model, Response: resp, Err: err}
	}
	if resp == nil {
		return nil, &Error{Kind: FailNoAnswer, Proposer: KindLLM, Model: req.Prompt.Model}
	}
	return finish(KindLLM, req, resp)
}
