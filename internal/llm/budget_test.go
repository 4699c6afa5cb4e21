package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestBudgetResumesAndEnds(t *testing.T) {
	b := NewBudget(BudgetConfig{MaxUSD: 1, MaxTokens: 1000}, Spend{USD: 0.9, Tokens: 100, Calls: 7})
	if err := b.Reserve(); err != nil {
		t.Fatal(err)
	}
	b.Record(0.2, 50)
	if s := b.Spent(); s.Calls != 8 || !near(s.USD, 1.1) || s.Tokens != 150 {
		t.Errorf("spent %+v", s)
	}
	err := b.Reserve()
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != "usd" || !near(be.Spent, 1.1) || be.Limit != 1 {
		t.Fatalf("err %v", err)
	}
	if b.Err() == nil || b.Spent().Calls != 8 {
		t.Error("a refused request was counted or Err is nil")
	}
	tok := NewBudget(BudgetConfig{MaxTokens: 100}, Spend{Tokens: 100})
	if err := tok.Err(); !errors.As(err, &be) || be.Budget != "tokens" {
		t.Errorf("tokens: %v", err)
	}
	if err := NewBudget(BudgetConfig{}, Spend{USD: 1e9, Calls: 1e9}).Reserve(); err != nil {
		t.Errorf("no limits: %v", err)
	}
}

func TestBudgetWrapCountsConcurrentCalls(t *testing.T) {
	b := NewBudget(BudgetConfig{MaxCalls: 10, MaxUSD: 100}, Spend{})
	var mu sync.Mutex
	served := 0
	c := b.Wrap(ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		mu.Lock()
		served++
		mu.Unlock()
		return &Response{CostUSD: 0.5, Usage: Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}))
	var wg sync.WaitGroup
	refused := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Complete(context.Background(), Request{}); err != nil {
				refused <- err
			}
		}()
	}
	wg.Wait()
	close(refused)
	n := 0
	for err := range refused {
		n++
		var be *BudgetError
		if !errors.As(err, &be) || be.Budget != "calls" {
			t.Errorf("refusal %v", err)
		}
	}
	if served != 10 || n != 40 {
		t.Errorf("served %d, refused %d; want 10 and 40", served, n)
	}
	if s := b.Spent(); s.Calls != 10 || !near(s.USD, 5) || s.Tokens != 50 {
		t.Errorf("spent %+v", s)
	}
}

// The issue: --max-usd 1.5 spent $2.00 with one call at a time, because a
// call went out whenever the spending was under the limit. A call now goes
// out only when its worst case fits in what is left.
func TestBudgetNeverExceedsItsLimit(t *testing.T) {
	for _, concurrent := range []int{1, 8} {
		b := NewBudget(BudgetConfig{MaxUSD: 1.5}, Spend{})
		c := b.WrapWorst(ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
			return &Response{CostUSD: 0.5, Usage: Usage{InputTokens: 100, OutputTokens: 400}}, nil
		}), func(Request) (float64, int64) { return 0.5, 500 })
		var wg sync.WaitGroup
		var mu sync.Mutex
		var refusals []error
		for range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					if _, err := c.Complete(context.Background(), Request{}); err != nil {
						mu.Lock()
						refusals = append(refusals, err)
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if s := b.Spent(); s.USD > 1.5+1e-9 || !near(s.USD, 1.5) || s.Calls != 3 {
			t.Errorf("%d at a time: spent %+v, want $1.50 in 3 calls", concurrent, s)
		}
		var be *BudgetError
		if len(refusals) == 0 || !errors.As(refusals[0], &be) || be.Budget != "usd" {
			t.Fatalf("%d at a time: refusals %v", concurrent, refusals)
		}
	}
	// The message says why a call was refused while money is left.
	b := NewBudget(BudgetConfig{MaxUSD: 1.5}, Spend{USD: 1.2})
	_, err := b.WrapWorst(ClientFunc(func(context.Context, Request) (*Response, error) { return &Response{}, nil }),
		func(Request) (float64, int64) { return 0.5, 0 }).Complete(context.Background(), Request{})
	if err == nil || !strings.Contains(err.Error(), "could use up to $0.5000") || !strings.Contains(err.Error(), "max_usd = $1.50") {
		t.Errorf("refusal: %v", err)
	}
	// Token budgets hold the same way.
	tb := NewBudget(BudgetConfig{MaxTokens: 1000}, Spend{Tokens: 600})
	var be *BudgetError
	if err := tb.reserve(0, 500); !errors.As(err, &be) || be.Budget != "tokens" {
		t.Errorf("tokens: %v", err)
	}
}

func TestWorstCase(t *testing.T) {
	p := Price{Input: 1, Output: 10} // per million tokens
	req := Request{Messages: []Message{{Role: RoleUser, Content: "hello"}}, MaxOutputTokens: 1000}
	usd, tokens := WorstCase(p, true)(req)
	in := EstimateInputTokens(req)
	if tokens != in+1000 || !near(usd, float64(in)*1e-6+1000*10e-6) {
		t.Errorf("WorstCase = $%g, %d tokens; prompt %d", usd, tokens, in)
	}
	if usd, _ := WorstCase(p, false)(req); usd != 0 {
		t.Errorf("without a price: $%g", usd)
	}
}
