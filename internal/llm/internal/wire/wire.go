// Package wire holds what the provider adapters share below the SDKs: an
// HTTP transport that records each response's status, headers and error
// body, and the mapping from what an SDK returned to the llm package's
// typed errors. Reading the HTTP exchange directly makes error handling the
// same for every SDK, whatever shape its own error type has.
package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
)

// maxErrorBody is how much of an error response is kept for its message.
const maxErrorBody = 64 << 10

// Exchange records the last HTTP response of one call.
type Exchange struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   []byte
}

// Status is the HTTP status, 0 when no response arrived.
func (e *Exchange) Status() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Header returns the response headers (nil when no response arrived).
func (e *Exchange) Header() http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.header
}

// Body returns the start of an error response's body.
func (e *Exchange) Body() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.body
}

type exchangeKey struct{}

// Track returns a context under which Transport records the HTTP exchange
// in the returned Exchange.
func Track(ctx context.Context) (context.Context, *Exchange) {
	ex := &Exchange{}
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

// Transport records exchanges made under a context from Track.
type Transport struct {
	Base http.RoundTripper
}

// RoundTrip sends the request through Base and records the response.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if ex == nil || err != nil {
		return resp, err
	}
	var body []byte
	if resp.StatusCode >= 400 && resp.Body != nil {
		// Keep the start of the body for the error message and hand the SDK
		// the same bytes followed by the rest.
		body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	}
	ex.mu.Lock()
	ex.status, ex.header, ex.body = resp.StatusCode, resp.Header.Clone(), body
	ex.mu.Unlock()
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// HTTPClient returns a client that sends through base's transport (the
// default transport when base is nil) and records exchanges. It sets no
// client timeout: calls are bounded by their contexts.
func HTTPClient(base *http.Client) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	c.Transport = &Transport{Base: c.Transport}
	return c
}

// Call describes the call an error belongs to, for messages and hints.
type Call struct {
	Provider  string // spec provider: openai, ollama, ...
	Model     string // configured name, for messages
	ID        string // model id sent to the server, for hints
	BaseURL   string
	KeySource string // "$OPENAI_API_KEY", "file ...", or "" when no key is sent
}

// Classify turns the error an SDK returned into an *llm.Error that says
// what happened and what to do, using what the transport recorded. A
// context error is returned as is (wrapped), so callers see their own
// cancellation and the timeout wrapper sees its deadline.
func Classify(ctx context.Context, call Call, ex *Exchange, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", call.Provider, call.Model, context.Cause(ctx))
	}
	e := &llm.Error{Provider: call.Provider, Model: call.Model, Err: err}
	status := 0
	if ex != nil {
		status = ex.Status()
		e.RequestID = llm.RequestIDFrom(ex.Header())
	}
	e.Status = status
	switch {
	case status >= 400:
		body := ex.Body()
		e.Kind = llm.KindForStatus(status, body)
		e.Message = llm.ErrorMessage(body)
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		e.RetryAfter = llm.ParseRetryAfter(ex.Header(), time.Now())
	case status == 0 || isNetwork(err):
		e.Kind = llm.ErrNetwork
		e.Message = llm.Redact(err.Error())
	default:
		e.Kind = llm.ErrMalformed
		e.Message = llm.Redact(err.Error())
		if k, msg, ok := inStreamError(err); ok {
			e.Kind, e.Message = k, msg
		}
	}
	e.Hint = Hint(call, e.Kind, status)
	return e
}

// inStreamError recognizes an error event inside a stream that began with
// HTTP 200, such as Anthropic's overloaded_error or OpenAI's server_error:
// the status says nothing, so the kind comes from the event's type.
func inStreamError(err error) (llm.Kind, string, bool) {
	text := err.Error()
	var raw interface{ RawJSON() string }
	if errors.As(err, &raw) && raw.RawJSON() != "" {
		text = raw.RawJSON()
	}
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return "", "", false
	}
	body := text[i:]
	low := strings.ToLower(body)
	var kind llm.Kind
	switch {
	case strings.Contains(low, "rate_limit") || strings.Contains(low, "resource_exhausted") || strings.Contains(low, `"code":429`):
		kind = llm.ErrRateLimited
	case strings.Contains(low, "overloaded") || strings.Contains(low, "server_error") || strings.Contains(low, `"api_error"`) ||
		strings.Contains(low, "internal") || strings.Contains(low, "unavailable") || strings.Contains(low, `"code":5`):
		kind = llm.ErrServer
	default:
		return "", "", false
	}
	return kind, llm.ErrorMessage([]byte(body)), true
}

// InStream classifies an error event that arrived inside a stream which
// began with HTTP 200, when the SDK reports the event's own status (Gemini
// does): the event's status decides the kind, as the HTTP status would.
func InStream(ctx context.Context, call Call, ex *Exchange, err error, status int, message string) error {
	if ctx.Err() != nil || status < 400 || (ex != nil && ex.Status() >= 400) {
		return Classify(ctx, call, ex, err)
	}
	e := &llm.Error{Provider: call.Provider, Model: call.Model, Status: status, Err: err,
		Kind: llm.KindForStatus(status, []byte(message)), Message: llm.ErrorMessage([]byte(message))}
	if ex != nil {
		e.RequestID = llm.RequestIDFrom(ex.Header())
	}
	e.Hint = Hint(call, e.Kind, status)
	return e
}

// Malformed returns an *llm.Error of kind ErrMalformed for a response that
// parsed but makes no sense (no choices, no candidates).
func Malformed(call Call, ex *Exchange, format string, args ...any) error {
	e := &llm.Error{Kind: llm.ErrMalformed, Provider: call.Provider, Model: call.Model, Message: fmt.Sprintf(format, args...)}
	if ex != nil {
		e.Status = ex.Status()
		e.RequestID = llm.RequestIDFrom(ex.Header())
	}
	e.Hint = Hint(call, e.Kind, e.Status)
	return e
}

// isNetwork tells a broken connection from a body that arrived but does
// not parse. A truncated JSON body reads as io.ErrUnexpectedEOF to most
// decoders, the same as a connection closed early; it counts as malformed.
func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// Hint says what to do about a failure of the given kind.
func Hint(call Call, kind llm.Kind, status int) string {
	switch kind {
	case llm.ErrAuth:
		if call.KeySource == "" {
			return "the server wants an API key: set api_key_env (or api_key_file) for this model in frontier.yaml"
		}
		return fmt.Sprintf("the key from %s was refused: check that it is valid and allowed to use this model", call.KeySource)
	case llm.ErrRateLimited:
		return "lower requests_per_minute or max_concurrency for this model or provider (llm.providers), or raise your quota"
	case llm.ErrContextLength:
		return "the prompt is too long for this model: shorten it or use a model with a longer context"
	case llm.ErrNotFound:
		id := call.ID
		if id == "" {
			id = call.Model
		}
		hint := fmt.Sprintf("check the model id %q and the base URL %s", id, call.BaseURL)
		if call.Provider == "ollama" {
			hint += fmt.Sprintf("; run `ollama pull %s` if the model is not installed", id)
		}
		if call.Provider == "openai-compatible" && !strings.HasSuffix(strings.TrimRight(call.BaseURL, "/"), "/v1") {
			hint += " (OpenAI-compatible servers usually serve under /v1)"
		}
		return hint
	case llm.ErrNetwork:
		return fmt.Sprintf("is the server at %s running and reachable from here?", call.BaseURL)
	case llm.ErrMalformed:
		return fmt.Sprintf("the server at %s did not answer in the expected format: check that base_url points at the right kind of endpoint", call.BaseURL)
	case llm.ErrServer:
		return "the provider had a problem; the call is retried"
	case llm.ErrBadRequest:
		return "the server refused the request's parameters: see its message"
	}
	return ""
}

// FinishReason maps a provider's finish or stop reason to llm's words.
func FinishReason(raw string) string {
	switch strings.ToLower(raw) {
	case "stop", "end_turn", "stop_sequence", "eos", "finish_reason_stop":
		return llm.FinishStop
	case "length", "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "content_filter", "refusal", "safety", "recitation", "blocklist", "prohibited_content", "spii", "image_safety":
		return llm.FinishContentFilter
	}
	return strings.ToLower(raw)
}
