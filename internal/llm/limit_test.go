package llm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestLimiterConcurrency(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	c := NewLimiter(Limits{MaxConcurrency: 3}).Wrap(ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return &Response{}, nil
	}))
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Complete(context.Background(), Request{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if peak > 3 || peak == 0 {
		t.Errorf("peak %d in flight, want at most 3", peak)
	}
}

func TestLimiterRateAndCancel(t *testing.T) {
	ok := ClientFunc(func(ctx context.Context, req Request) (*Response, error) { return &Response{}, nil })
	c := NewLimiter(Limits{RequestsPerMinute: 1200}).Wrap(ok) // one per 50 ms
	start := time.Now()
	for range 4 {
		if _, err := c.Complete(context.Background(), Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 140*time.Millisecond {
		t.Errorf("4 requests at 20/s took %s, want at least 150ms", el)
	}
	// Waiting for a slot ends with the caller's context.
	block := make(chan struct{})
	defer close(block)
	one := NewLimiter(Limits{MaxConcurrency: 1}).Wrap(ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		select {
		case <-block:
			return &Response{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	go one.Complete(context.Background(), Request{})
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := one.Complete(ctx, Request{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v", err)
	}
	if NewLimiter(Limits{}) != nil {
		t.Error("no limits should mean no limiter")
	}
	var nilL *Limiter
	if nilL.Wrap(ok) == nil {
		t.Error("nil limiter must pass requests through")
	}
}

func TestWithTimeout(t *testing.T) {
	slow := ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c := WithTimeout(slow, 30*time.Millisecond, "openai", "m")
	_, err := c.Complete(context.Background(), Request{})
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrTimeout || !e.Retryable() || e.Model != "m" {
		t.Errorf("err %v", err)
	}
	// The caller's own cancellation is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := WithTimeout(slow, time.Hour, "openai", "m").Complete(ctx, Request{}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("caller cancel: %v", err)
	}
}
