package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// script returns a client that fails with errs in order, then succeeds.
func script(errs ...error) (Client, *int) {
	n := 0
	return ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		n++
		if n <= len(errs) {
			return nil, errs[n-1]
		}
		return &Response{Text: "ok"}, nil
	}), &n
}

func recorder(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
}

func TestRetrierBackoffDoublesAndCaps(t *testing.T) {
	srv := &Error{Kind: ErrServer}
	c, n := script(srv, srv, srv, srv)
	var waits []time.Duration
	r := &Retrier{Next: c, Sleep: recorder(&waits), Rand: func() float64 { return 0.999999 },
		Policy: RetryConfig{MaxAttempts: 5, InitialBackoff: Duration(time.Second), MaxBackoff: Duration(4 * time.Second)}}
	resp, err := r.Complete(context.Background(), Request{})
	if err != nil || resp.Attempts != 5 || *n != 5 {
		t.Fatalf("resp %+v err %v calls %d", resp, err, *n)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if waits[i] < want[i]-time.Millisecond || waits[i] > want[i] {
			t.Errorf("waits %v, want about %v", waits, want)
			break
		}
	}
	// The low end of the jitter is half the backoff.
	waits = nil
	c, _ = script(srv)
	r = &Retrier{Next: c, Sleep: recorder(&waits), Rand: func() float64 { return 0 }, Policy: RetryConfig{InitialBackoff: Duration(time.Second)}}
	if _, err := r.Complete(context.Background(), Request{}); err != nil || waits[0] != 500*time.Millisecond {
		t.Errorf("waits %v err %v", waits, err)
	}
}

func TestRetrierStopsWhenItShould(t *testing.T) {
	var waits []time.Duration
	// Not retryable: returned at once.
	c, n := script(&Error{Kind: ErrAuth})
	r := &Retrier{Next: c, Sleep: recorder(&waits)}
	if _, err := r.Complete(context.Background(), Request{}); !errors.Is(err, ErrAuth) || *n != 1 {
		t.Errorf("auth error: %v after %d calls", err, *n)
	}
	// Plain errors (not *Error) are not retried either.
	c, n = script(errors.New("boom"))
	r = &Retrier{Next: c, Sleep: recorder(&waits)}
	if _, err := r.Complete(context.Background(), Request{}); err == nil || *n != 1 {
		t.Errorf("plain error retried: %d calls", *n)
	}
	// A Retry-After longer than allowed ends the call.
	c, n = script(&Error{Kind: ErrRateLimited, RetryAfter: time.Hour})
	r = &Retrier{Next: c, Sleep: recorder(&waits)}
	if _, err := r.Complete(context.Background(), Request{}); !errors.Is(err, ErrRateLimited) || *n != 1 || !strings.Contains(err.Error(), "max_retry_after") {
		t.Errorf("long Retry-After: %v after %d calls", err, *n)
	}
	// The caller's deadline comes before the next attempt.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, n = script(&Error{Kind: ErrRateLimited, RetryAfter: 30 * time.Second})
	r = &Retrier{Next: c, Sleep: recorder(&waits)}
	if _, err := r.Complete(ctx, Request{}); !errors.Is(err, ErrRateLimited) || *n != 1 || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("deadline: %v after %d calls", err, *n)
	}
	// One attempt means no retries.
	c, n = script(&Error{Kind: ErrServer})
	r = &Retrier{Next: c, Sleep: recorder(&waits), Policy: RetryConfig{MaxAttempts: 1}}
	if _, err := r.Complete(context.Background(), Request{}); err == nil || *n != 1 || strings.Contains(err.Error(), "attempts") {
		t.Errorf("max_attempts 1: %v after %d calls", err, *n)
	}
	if len(waits) != 0 {
		t.Errorf("waited %v", waits)
	}
}

func TestRetrierCancelWhileWaiting(t *testing.T) {
	c, n := script(&Error{Kind: ErrServer}, &Error{Kind: ErrServer})
	r := &Retrier{Next: c, Policy: RetryConfig{InitialBackoff: Duration(time.Hour), MaxBackoff: Duration(time.Hour)}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := r.Complete(ctx, Request{})
	if !errors.Is(err, context.Canceled) || *n != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %d calls and %s", err, *n, time.Since(start))
	}
}
