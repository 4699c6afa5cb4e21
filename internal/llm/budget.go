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
// client that shares it, from any number of goroutines. Once a limit is
// reached every new request fails at once with a *BudgetError that names
// it; requests already in flight finish and are counted, so cost and tokens
// may end above their limits by what those requests used. Calls are
// reserved before a request is sent, so MaxCalls is never exceeded.
type Budget struct {
	mu     sync.Mutex
	limits BudgetConfig
	spent  Spend
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
func (b *Budget) Reserve() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.exhausted(); e != nil {
		return e
	}
	b.spent.Calls++
	return nil
}

// Record adds a finished call's cost and tokens.
func (b *Budget) Record(usd float64, tokens int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent.USD += usd
	b.spent.Tokens += tokens
}

// Wrap returns a Client that sends requests through c while the budget
// lasts. A call that fails still counts as a call, and its usage (if the
// error came with a response) is not known, so it adds no cost.
func (b *Budget) Wrap(c Client) Client {
	return ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		if err := b.Reserve(); err != nil {
			return nil, err
		}
		resp, err := c.Complete(ctx, req)
		if resp != nil {
			b.Record(resp.CostUSD, resp.Usage.Total())
		}
		return resp, err
	})
}
