package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Retrier is a Client that sends a request again when it fails in a way
// that may pass: rate limits, server errors, timeouts and network errors
// (see Kind.Retryable). It waits between attempts with exponential backoff
// and jitter, or as long as the server's Retry-After asks. It is the only
// place that retries: the SDKs' own retries are turned off, so that attempt
// counts and waits are known and tested.
type Retrier struct {
	Next   Client
	Policy RetryConfig // zero fields take the defaults
	Log    *slog.Logger
	// Sleep waits for d or until ctx ends; nil means a timer. Tests
	// replace it to record the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter; nil means math/rand/v2.
	Rand func() float64
}

// Complete sends req through Next, retrying as the policy allows.
func (r *Retrier) Complete(ctx context.Context, req Request) (*Response, error) {
	p := r.Policy.WithDefaults()
	for attempt := 1; ; attempt++ {
		resp, err := r.Next.Complete(ctx, req)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		var e *Error
		if !errors.As(err, &e) || !e.Retryable() {
			return nil, err
		}
		if attempt >= p.MaxAttempts {
			if attempt == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		wait := r.backoff(attempt, p)
		if e.RetryAfter > 0 {
			if e.RetryAfter > p.MaxRetryAfter.D() {
				return nil, fmt.Errorf("not retried: the server asked to wait %s, longer than llm.retry.max_retry_after (%s): %w", e.RetryAfter, p.MaxRetryAfter.D(), err)
			}
			// Honour the server's wait, plus up to 10% so that callers told
			// the same wait do not all come back at once.
			wait = e.RetryAfter + time.Duration(r.rand()*0.1*float64(e.RetryAfter))
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, fmt.Errorf("not retried: the caller's deadline comes before the next attempt (in %s): %w", wait.Round(time.Millisecond), err)
		}
		r.log().Warn("llm call failed; retrying", "provider", e.Provider, "model", e.Model,
			"attempt", attempt, "max_attempts", p.MaxAttempts, "wait", wait.Round(time.Millisecond), "error", err.Error())
		if serr := r.sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w (while waiting to retry after: %v)", serr, err)
		}
	}
}

// backoff is the wait after the given failed attempt: InitialBackoff
// doubled per attempt, capped at MaxBackoff, with "equal jitter" (between
// half and all of it), so concurrent callers spread out.
func (r *Retrier) backoff(attempt int, p RetryConfig) time.Duration {
	d := p.InitialBackoff.D()
	for i := 1; i < attempt && d < p.MaxBackoff.D(); i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff.D())
	return d/2 + time.Duration(r.rand()*float64(d/2))
}

func (r *Retrier) rand() float64 {
	if r.Rand != nil {
		return r.Rand()
	}
	return rand.Float64()
}

func (r *Retrier) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return SleepContext(ctx, d)
}

func (r *Retrier) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// SleepContext waits for d or until ctx ends, and returns ctx's error in
// the latter case.
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
