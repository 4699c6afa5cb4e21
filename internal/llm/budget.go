package llm

import (
	"context"
	"sync"
)

// Spend is what a run has used so far.
type Spend struct {
	USD    float64 `json:"usd"`
	Tokens int64   `json:"tokens"` // input plus output
	Calls  int64   `json:"calls"`
}

// Budget enforces a run's limits on cost, tokens and calls across every
// client that shares it, from any number of goroutines. A call is sent
// only when its worst case fits in what is left: before it goes out, the
// budget holds back what it could cost at most (its prompt and its
// max_output_tokens at the model's price) and the tokens it could use, and
// the call is refused with a *BudgetError when that does not fit beside
// what was spent and what the calls in flight hold. So max_usd and
// max_tokens hold with one call at a time as with many, as far as the
// worst case is known: a model without a price, or a request without a
// limit on its output, is held back by what is known (its prompt). Calls
// are reserved before a request is sent, so MaxCalls is never exceeded.
type Budget struct {
	mu     sync.Mutex
	limits BudgetConfig
	spent  Spend
	// held is the worst case of the calls in flight (Calls unused).
	held Spend
}

// NewBudget returns a budget with the given limits that has already spent
// spent, so that a resumed run continues its totals.
func NewBudget(limits BudgetConfig, spent Spend) *Budget {
	return &Budget{limits: limits, spent: spent}
}

// Limits returns the configured limits.
func (b *Budget) Limits() BudgetConfig { return b.limits }

// Spent returns the totals so far.
func (b *Budget) Spent() Spend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Err returns the *BudgetError of the first exhausted limit, or nil while
// requests may still be sent. A run loop can poll it to stop cleanly.
func (b *Budget) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.exhausted(); e != nil {
		return e
	}
	return nil
}

func (b *Budget) exhausted() *BudgetError {
	l, s := b.limits, b.spent
	switch {
	case l.MaxCalls > 0 && s.Calls >= l.MaxCalls:
		return &BudgetError{Budget: "calls", Limit: float64(l.MaxCalls), Spent: float64(s.Calls)}
	case l.MaxUSD > 0 && s.USD >= l.MaxUSD:
		return &BudgetError{Budget: "usd", Limit: l.MaxUSD, Spent: s.USD}
	case l.MaxTokens > 0 && s.Tokens >= l.MaxTokens:
		return &BudgetError{Budget: "tokens", Limit: float64(l.MaxTokens), Spent: float64(s.Tokens)}
	}
	return nil
}

// Reserve counts one call if no limit is reached, and returns the
// *BudgetError of the limit that is reached otherwise.
func (b *Budget) Reserve() error { return b.reserve(0, 0) }

// reserve counts one call and holds back its worst case (usd, tokens),
// when that fits in what is left.
func (b *Budget) reserve(usd float64, tokens int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.exhausted(); e != nil {
		return e
	}
	l, s, h := b.limits, b.spent, b.held
	if l.MaxUSD > 0 && usd > 0 && s.USD+h.USD+usd > l.MaxUSD {
		return &BudgetError{Budget: "usd", Limit: l.MaxUSD, Spent: s.USD, Held: h.USD, Next: usd}
	}
	if l.MaxTokens > 0 && tokens > 0 && s.Tokens+h.Tokens+tokens > l.MaxTokens {
		return &BudgetError{Budget: "tokens", Limit: float64(l.MaxTokens), Spent: float64(s.Tokens), Held: float64(h.Tokens), Next: float64(tokens)}
	}
	b.spent.Calls++
	b.held.USD += usd
	b.held.Tokens += tokens
	return nil
}

// release gives back what reserve held for a call.
func (b *Budget) release(usd float64, tokens int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held.USD -= usd
	b.held.Tokens -= tokens
}

// Record adds a finished call's cost and tokens.
func (b *Budget) Record(usd float64, tokens int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent.USD += usd
	b.spent.Tokens += tokens
}

// Wrap returns a Client that sends requests through c while the budget
// lasts, holding back nothing but the call itself (see WrapWorst).
func (b *Budget) Wrap(c Client) Client { return b.WrapWorst(c, nil) }

// WrapWorst returns a Client that sends requests through c while the
// budget lasts: a request goes out only when worst(req), what it could
// cost at most and the tokens it could use, fits in what is left (nil
// worst: nothing but the call). A call that fails still counts as a call,
// and its usage (if the error came with a response) is not known, so it
// adds no cost.
func (b *Budget) WrapWorst(c Client, worst func(Request) (usd float64, tokens int64)) Client {
	return ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		var usd float64
		var tokens int64
		if worst != nil && (b.limits.MaxUSD > 0 || b.limits.MaxTokens > 0) {
			usd, tokens = worst(req)
		}
		if err := b.reserve(usd, tokens); err != nil {
			return nil, err
		}
		resp, err := c.Complete(ctx, req)
		if resp != nil {
			b.Record(resp.CostUSD, resp.Usage.Total())
		}
		b.release(usd, tokens)
		return resp, err
	})
}

// WorstCase is the most a request can cost at price p (known: whether the
// model has a price) and the most tokens it can use: its prompt, as
// estimated, and its max_output_tokens. Without a price the cost is
// unknown (0); without an output limit only the prompt is counted.
func WorstCase(p Price, known bool) func(Request) (usd float64, tokens int64) {
	return func(req Request) (float64, int64) {
		u := Usage{InputTokens: EstimateInputTokens(req), OutputTokens: int64(req.MaxOutputTokens)}
		usd := 0.0
		if known {
			usd = p.Cost(u)
		}
		return usd, u.Total()
	}
}
