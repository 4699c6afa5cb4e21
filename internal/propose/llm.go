package propose

import (
	"context"
	"errors"
	"strings"

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

// Idea asks the model for an idea in free text: the first stage of
// meta-prompting, whose answer the implementation prompt then carries. It
// fails with an *Error of kind FailCall (the call failed) or FailNoAnswer
// (no answer, or an empty one).
func (p *LLM) Idea(ctx context.Context, prompt llm.Request) (string, error) {
	if p.client == nil {
		return "", &Error{Kind: FailCall, Proposer: KindLLM, Model: prompt.Model, Err: errors.New("no model client configured")}
	}
	resp, err := p.client.Complete(ctx, prompt)
	if err != nil {
		return "", &Error{Kind: FailCall, Proposer: KindLLM, Model: prompt.Model, Err: err}
	}
	idea := ""
	if resp != nil {
		idea = strings.TrimSpace(resp.Text)
	}
	if idea == "" {
		return "", &Error{Kind: FailNoAnswer, Proposer: KindLLM, Model: prompt.Model}
	}
	return idea, nil
}
