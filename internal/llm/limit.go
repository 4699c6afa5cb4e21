package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// Limiter caps the requests in flight and the request rate of the clients
// it wraps, which share it. A nil *Limiter limits nothing.
type Limiter struct {
	sem  chan struct{}
	rate *rate.Limiter
}

// NewLimiter returns a Limiter for l, or nil when l sets no limit.
// Requests under a rate limit are spaced evenly (a burst of one).
func NewLimiter(l Limits) *Limiter {
	if l.IsZero() {
		return nil
	}
	lim := &Limiter{}
	if l.MaxConcurrency > 0 {
		lim.sem = make(chan struct{}, l.MaxConcurrency)
	}
	if l.RequestsPerMinute > 0 {
		lim.rate = rate.NewLimiter(rate.Limit(l.RequestsPerMinute/60), 1)
	}
	return lim
}

// Wrap returns a Client that waits for a slot and a rate token before each
// request to c.
func (l *Limiter) Wrap(c Client) Client {
	if l == nil {
		return c
	}
	return ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		release, err := l.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		return c.Complete(ctx, req)
	})
}

func (l *Limiter) acquire(ctx context.Context) (release func(), err error) {
	release = func() {}
	if l.sem != nil {
		select {
		case l.sem <- struct{}{}:
			release = func() { <-l.sem }
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a free request slot: %w", ctx.Err())
		}
	}
	if l.rate != nil {
		if err := l.rate.Wait(ctx); err != nil {
			release()
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("waiting for the rate limit (requests_per_minute): %w", err)
		}
	}
	return release, nil
}

// errCallTimeout is the cause a call's context carries when its own
// timeout, not the caller, ended it.
var errCallTimeout = errors.New("per-call timeout")

// WithTimeout bounds each request to c by d. A request that runs out of
// time fails with an *Error of kind ErrTimeout, which the Retrier retries;
// one whose caller gave up fails with the caller's context error.
func WithTimeout(c Client, d time.Duration, provider, model string) Client {
	if d <= 0 {
		return c
	}
	return ClientFunc(func(ctx context.Context, req Request) (*Response, error) {
		cctx, cancel := context.WithTimeoutCause(ctx, d, errCallTimeout)
		defer cancel()
		resp, err := c.Complete(cctx, req)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errCallTimeout) {
			return nil, &Error{Kind: ErrTimeout, Provider: provider, Model: model,
				Message: fmt.Sprintf("no complete answer within %s", d),
				Hint:    "raise this model's timeout (llm.models[].timeout) if answers are long",
				Err:     err}
		}
		return resp, err
	})
}
