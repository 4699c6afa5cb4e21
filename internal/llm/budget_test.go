package llm

import (
	"context"
	"errors"
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
