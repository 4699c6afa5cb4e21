package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind says what went wrong with a call, so callers can act on it with
// errors.Is(err, llm.ErrRateLimited) and so on. A Kind is itself an error.
type Kind string

func (k Kind) Error() string { return "llm: " + string(k) }

// Kinds of failure.
const (
	ErrRateLimited     Kind = "rate limited"            // HTTP 429: wait and try again
	ErrServer          Kind = "server error"            // HTTP 5xx or an overloaded provider
	ErrTimeout         Kind = "timed out"               // no answer within the per-call timeout
	ErrNetwork         Kind = "network error"           // no HTTP response at all (refused, reset, DNS)
	ErrAuth            Kind = "authentication failed"   // no key, or the key was refused (401, 403)
	ErrContextLength   Kind = "context length exceeded" // the prompt does not fit the model
	ErrNotFound        Kind = "not found"               // HTTP 404, usually an unknown model id
	ErrBadRequest      Kind = "bad request"             // another 4xx: the request itself is wrong
	ErrMalformed       Kind = "malformed response"      // the server's answer could not be read
	ErrBudgetExhausted Kind = "budget exhausted"        // a run budget is spent; see BudgetError
	ErrInvalidRequest  Kind = "invalid request"         // refused before sending: see the message
)

// Retryable reports whether a failure of this kind may succeed if the same
// request is sent again.
func (k Kind) Retryable() bool {
	switch k {
	case ErrRateLimited, ErrServer, ErrTimeout, ErrNetwork:
		return true
	}
	return false
}

// Error is a failed call to a provider.
type Error struct {
	Kind     Kind
	Provider string // "openai", "anthropic", ...
	Model    string // the model id or configured name
	// Status is the HTTP status code, 0 when no response arrived.
	Status int
	// RetryAfter is how long the server asked to wait, 0 if it did not say.
	RetryAfter time.Duration
	RequestID  string
	// Message is the server's own explanation, redacted and shortened.
	Message string
	// Hint says what to do about it.
	Hint string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Model != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Model)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	var paren []string
	if e.Status != 0 {
		paren = append(paren, fmt.Sprintf("HTTP %d", e.Status))
	}
	if e.RequestID != "" {
		paren = append(paren, "request "+e.RequestID)
	}
	if len(paren) > 0 {
		b.WriteString(" (" + strings.Join(paren, ", ") + ")")
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + Redact(e.Err.Error()))
	}
	if e.RetryAfter > 0 {
		b.WriteString("; the server asked to retry after " + e.RetryAfter.String())
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, llm.ErrRateLimited) and the like work.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// Retryable reports whether the same request may succeed when sent again.
func (e *Error) Retryable() bool { return e.Kind.Retryable() }

// BudgetError says which run budget is spent. errors.Is(err,
// ErrBudgetExhausted) is true for it.
type BudgetError struct {
	Budget string  // "usd", "tokens" or "calls"
	Limit  float64 // the configured maximum
	Spent  float64 // what the run had spent when the request was refused
	// Next is the worst case of the request refused, when it was refused
	// because that does not fit beside Spent and Held, the worst case of
	// the calls in flight; 0 when the budget was spent.
	Next, Held float64
}

func (e *BudgetError) Error() string {
	money := func(v float64) string { return fmt.Sprintf("$%.4f", v) }
	var key string
	amount := money
	switch e.Budget {
	case "usd":
		key = "max_usd"
	case "tokens":
		key, amount = "max_tokens", func(v float64) string { return fmt.Sprintf("%.0f tokens", v) }
	default:
		key, amount = "max_calls", func(v float64) string { return fmt.Sprintf("%.0f calls", v) }
	}
	limit := fmt.Sprintf("%.0f", e.Limit)
	if e.Budget == "usd" {
		limit = fmt.Sprintf("$%.2f", e.Limit)
	}
	if e.Next > 0 {
		held := ""
		if e.Held > 0 {
			held = fmt.Sprintf(" and the calls in flight may use %s more", amount(e.Held))
		}
		return fmt.Sprintf("llm budget: the next request could use up to %s (its prompt and max_output_tokens), more than is left of llm.budget.%s = %s: the run spent %s%s; no new requests are sent, so that the budget is never exceeded (raise the budget, or lower max_output_tokens)",
			amount(e.Next), key, limit, amount(e.Spent), held)
	}
	return fmt.Sprintf("llm budget exhausted: the run spent %s of llm.budget.%s = %s; no new requests are sent (raise the budget to continue)", amount(e.Spent), key, limit)
}

// Is makes errors.Is(err, ErrBudgetExhausted) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

// KindForStatus maps an HTTP error status and the response body to a Kind.
func KindForStatus(status int, body []byte) Kind {
	msg := strings.ToLower(ErrorMessage(body))
	switch {
	case status == http.StatusTooManyRequests:
		// Some providers answer 429 when the prompt exceeds a per-minute
		// token quota that it alone exceeds; that is still a rate limit.
		return ErrRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case status == http.StatusRequestEntityTooLarge || contextLengthMessage.MatchString(msg):
		return ErrContextLength
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		// OpenAI and Anthropic document 408 and 409 as safe to retry.
		return ErrServer
	case status >= 500:
		return ErrServer
	case status >= 400:
		return ErrBadRequest
	}
	return ErrMalformed
}

// contextLengthMessage matches how OpenAI, Anthropic, Gemini, vLLM,
// llama.cpp and SGLang say a prompt is too long.
var contextLengthMessage = regexp.MustCompile(`context[ _]length|context[ _]window|maximum context|prompt is too long|exceeds? the (available )?context|input token count|too many (input )?tokens|exceed_context_size`)

// ErrorMessage extracts the human-readable message from an error body in
// any of the usual shapes ({"error":{"message":...}}, {"message":...},
// {"error":"..."}, {"detail":...}), redacted and cut to 500 characters.
// A body that is not JSON is returned as text.
func ErrorMessage(body []byte) string {
	body = []byte(strings.TrimSpace(string(body)))
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case len(v.Detail) > 0:
			if json.Unmarshal(v.Detail, &s) == nil {
				msg = s
			} else {
				msg = string(v.Detail)
			}
		}
	}
	if msg == "" {
		msg = string(body)
	}
	return shorten(Redact(msg), 500)
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// ParseRetryAfter reads how long a response asks the client to wait:
// "retry-after-ms" (OpenAI, Anthropic), then "Retry-After" in seconds or as
// an HTTP date. It returns 0 when the response says nothing usable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// RequestIDFrom returns the provider's request id from response headers.
func RequestIDFrom(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "X-Goog-Request-Id", "X-Amzn-Requestid"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}
