package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{}, 0},
		{nil, 0},
	}
	for _, c := range cases {
		if got := ParseRetryAfter(c.h, now); got != c.want {
			t.Errorf("ParseRetryAfter(%v) = %s, want %s", c.h, got, c.want)
		}
	}
}

func TestKindForStatus(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   Kind
	}{
		{429, `{"error":{"message":"Rate limit reached"}}`, ErrRateLimited},
		{401, ``, ErrAuth},
		{403, ``, ErrAuth},
		{404, `{"error":{"message":"The model 'x' does not exist"}}`, ErrNotFound},
		{400, `{"error":{"message":"This model's maximum context length is 128000 tokens","code":"context_length_exceeded"}}`, ErrContextLength},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, ErrContextLength},
		{400, `{"error":{"code":400,"message":"The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, ErrContextLength},
		{400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, ErrContextLength},
		{413, ``, ErrContextLength},
		{400, `{"error":{"message":"Unsupported parameter: 'temperature'"}}`, ErrBadRequest},
		{422, `{"detail":"bad"}`, ErrBadRequest},
		{408, ``, ErrServer},
		{500, ``, ErrServer},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, ErrServer},
	}
	for _, c := range cases {
		if got := KindForStatus(c.status, []byte(c.body)); got != c.want {
			t.Errorf("KindForStatus(%d, %s) = %s, want %s", c.status, c.body, got, c.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"error":{"message":"Invalid API key: sk-proj-abcdefghijklmnopqrstuvwxyz123","type":"invalid_request_error"}}`, "Invalid API key: [REDACTED]"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Overloaded"},
		{`{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`, "Resource exhausted"},
		{`{"object":"error","message":"vLLM says no","type":"BadRequestError","code":400}`, "vLLM says no"},
		{`{"error":"model 'x' not found, try pulling it first"}`, "model 'x' not found, try pulling it first"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{`<html><body>502 Bad Gateway</body></html>`, "<html><body>502 Bad Gateway</body></html>"},
		{"", ""},
	}
	for _, c := range cases {
		if got := ErrorMessage([]byte(c.body)); got != c.want {
			t.Errorf("ErrorMessage(%s) = %q, want %q", c.body, got, c.want)
		}
	}
	long := ErrorMessage([]byte(strings.Repeat("é", 600)))
	if len(long) > 505 || !strings.HasSuffix(long, "…") {
		t.Errorf("long message not cut: %d bytes", len(long))
	}
}

func TestErrorFormattingAndIs(t *testing.T) {
	e := &Error{Kind: ErrRateLimited, Provider: "openai", Model: "gpt5", Status: 429, RequestID: "req_1",
		Message: "slow down", RetryAfter: 3 * time.Second, Hint: "lower requests_per_minute"}
	want := "openai gpt5: rate limited (HTTP 429, request req_1): slow down; the server asked to retry after 3s; lower requests_per_minute"
	if e.Error() != want {
		t.Errorf("got  %q\nwant %q", e.Error(), want)
	}
	wrapped := fmt.Errorf("propose: %w", e)
	if !errors.Is(wrapped, ErrRateLimited) || errors.Is(wrapped, ErrAuth) || !e.Retryable() {
		t.Error("errors.Is by kind does not work")
	}
	be := &BudgetError{Budget: "usd", Limit: 5, Spent: 5.0123}
	if !errors.Is(fmt.Errorf("x: %w", be), ErrBudgetExhausted) || !strings.Contains(be.Error(), "$5.0123 of llm.budget.max_usd = $5.00") {
		t.Errorf("budget error %q", be)
	}
	for _, k := range []Kind{ErrAuth, ErrContextLength, ErrBadRequest, ErrMalformed, ErrNotFound, ErrBudgetExhausted, ErrInvalidRequest} {
		if k.Retryable() {
			t.Errorf("%s is retryable", k)
		}
	}
}
