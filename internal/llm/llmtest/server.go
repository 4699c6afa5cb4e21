package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
)

// Step is one scripted HTTP answer of a Server.
type Step struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header is added to the response, e.g. {"Retry-After": "2"}.
	Header map[string]string
	// Text is the answer.
	Text string
	// Usage is reported in the provider's format; nil reports none.
	Usage *llm.Usage
	// Cost, for the OpenAI protocol, is reported as usage.cost (USD), as
	// OpenRouter does.
	Cost float64
	// Finish is the provider's own finish word ("length", "max_tokens",
	// "MAX_TOKENS"); empty means a normal stop.
	Finish string
	// Model is the model the server says answered; empty echoes the request.
	Model string
	// ErrorMessage and ErrorType fill the provider's error body when Status
	// is 400 or more.
	ErrorMessage string
	ErrorType    string
	// Body, when set, is sent as is instead of a rendered answer (for
	// malformed JSON).
	Body string
	// Delay holds the whole answer back. ChunkDelay holds back each stream
	// chunk after the first.
	Delay      time.Duration
	ChunkDelay time.Duration
	// StreamError, for a streamed answer, is sent as an in-stream error
	// event after the first chunk (Anthropic's overloaded_error and such).
	StreamError string
}

// Recorded is a request a Server received.
type Recorded struct {
	Method string
	Path   string // with the query
	Header http.Header
	Body   []byte
	// JSON is Body decoded, nil when it is not a JSON object.
	JSON map[string]any
}

// Server is a local HTTP server that speaks one provider's wire format and
// answers from a script. When the script runs out it repeats its last
// step, or asks Respond when set.
type Server struct {
	*httptest.Server
	protocol string

	mu       sync.Mutex
	steps    []Step
	next     int
	requests []Recorded
	// Respond, when set, answers requests the script does not cover.
	Respond func(r Recorded) Step
}

// NewServer starts a Server for protocol (llm.ProtocolOpenAI,
// llm.ProtocolAnthropic or llm.ProtocolGemini) and stops it when the test
// ends.
func NewServer(t testing.TB, protocol string, steps ...Step) *Server {
	t.Helper()
	switch protocol {
	case llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini:
	default:
		t.Fatalf("llmtest.NewServer: unknown protocol %q", protocol)
	}
	s := &Server{protocol: protocol, steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Add appends steps to the script.
func (s *Server) Add(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// BaseURL is what a model's base_url should be: the server's URL, with
// "/v1" for the OpenAI protocol.
func (s *Server) BaseURL() string {
	if s.protocol == llm.ProtocolOpenAI {
		return s.URL + "/v1"
	}
	return s.URL
}

// Spec returns a model spec that sends requests for model to this server:
// "openai-compatible/MODEL@URL/v1" for the OpenAI protocol, and
// "anthropic/MODEL@URL" or "gemini/MODEL@URL" for the others.
func (s *Server) Spec(model string) string {
	p := s.protocol
	if p == llm.ProtocolOpenAI {
		p = "openai-compatible"
	}
	return p + "/" + model + "@" + s.BaseURL()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Recorded{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &rec.JSON)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	n := len(s.requests)
	var st Step
	switch {
	case s.next < len(s.steps):
		st = s.steps[s.next]
		s.next++
	case s.Respond != nil:
		st = s.Respond(rec)
	case len(s.steps) > 0:
		st = s.steps[len(s.steps)-1]
	}
	s.mu.Unlock()

	if !wait(r, st.Delay) {
		return
	}
	model, stream, ok := s.route(r, rec)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"llmtest: no route for %s %s","type":"not_found"}}`, r.Method, r.URL.Path)
		return
	}
	if st.Model != "" {
		model = st.Model
	}
	id := fmt.Sprintf("test-%d", n)
	switch s.protocol {
	case llm.ProtocolOpenAI:
		w.Header().Set("X-Request-Id", "req_"+id)
	case llm.ProtocolAnthropic:
		w.Header().Set("Request-Id", "req_"+id)
	}
	for k, v := range st.Header {
		w.Header().Set(k, v)
	}
	status := st.Status
	if status == 0 {
		status = http.StatusOK
	}
	if st.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, st.Body)
		return
	}
	if status >= 400 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, s.errorBody(status, st))
		return
	}
	a := answer{id: id, model: model, step: st}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b, _ := json.Marshal(s.render(a))
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(status)
	fl, _ := w.(http.Flusher)
	for i, ev := range s.events(a, rec) {
		if i > 0 && !wait(r, st.ChunkDelay) {
			return
		}
		io.WriteString(w, ev)
		if fl != nil {
			fl.Flush()
		}
	}
}

// route checks the request's method and path and returns the model asked
// for and whether the answer is streamed.
func (s *Server) route(r *http.Request, rec Recorded) (model string, stream, ok bool) {
	if r.Method != http.MethodPost {
		return "", false, false
	}
	switch s.protocol {
	case llm.ProtocolOpenAI:
		model, _ = rec.JSON["model"].(string)
		stream, _ = rec.JSON["stream"].(bool)
		return model, stream, r.URL.Path == "/v1/chat/completions"
	case llm.ProtocolAnthropic:
		model, _ = rec.JSON["model"].(string)
		stream, _ = rec.JSON["stream"].(bool)
		return model, stream, r.URL.Path == "/v1/messages"
	default:
		rest, found := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
		if !found {
			return "", false, false
		}
		model, method, _ := strings.Cut(rest, ":")
		switch method {
		case "generateContent":
			return model, false, true
		case "streamGenerateContent":
			return model, true, true
		}
		return "", false, false
	}
}

func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

type answer struct {
	id, model string
	step      Step
}

// pieces splits an answer's text in up to three chunks for streaming.
func pieces(text string) []string {
	if text == "" {
		return []string{""}
	}
	r := []rune(text)
	n := min(3, len(r))
	var out []string
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

func (s *Server) errorBody(status int, st Step) string {
	msg := st.ErrorMessage
	if msg == "" {
		msg = http.StatusText(status)
	}
	typ := st.ErrorType
	var v any
	switch s.protocol {
	case llm.ProtocolOpenAI:
		if typ == "" {
			typ = "api_error"
		}
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}}
	case llm.ProtocolAnthropic:
		if typ == "" {
			typ = "api_error"
		}
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	default:
		if typ == "" {
			typ = "INTERNAL"
		}
		v = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": typ}}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (s *Server) render(a answer) any {
	switch s.protocol {
	case llm.ProtocolOpenAI:
		return openAICompletion(a)
	case llm.ProtocolAnthropic:
		return anthropicMessage(a, true)
	default:
		return geminiResponse(a, a.step.Text, true)
	}
}

func (s *Server) events(a answer, rec Recorded) []string {
	switch s.protocol {
	case llm.ProtocolOpenAI:
		return openAIEvents(a, rec)
	case llm.ProtocolAnthropic:
		return anthropicEvents(a)
	default:
		return geminiEvents(a)
	}
}

func sse(event string, v any) string {
	b, _ := json.Marshal(v)
	if event == "" {
		return "data: " + string(b) + "\n\n"
	}
	return "event: " + event + "\ndata: " + string(b) + "\n\n"
}

// OpenAI chat completions.

func openAIFinish(st Step) string {
	if st.Finish != "" {
		return st.Finish
	}
	return "stop"
}

func openAIUsage(u *llm.Usage, cost float64) map[string]any {
	v := map[string]any{
		"prompt_tokens":             u.InputTokens,
		"completion_tokens":         u.OutputTokens,
		"total_tokens":              u.InputTokens + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens, "cache_write_tokens": u.CacheWriteTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
	if cost > 0 {
		v["cost"] = cost
	}
	return v
}

func openAICompletion(a answer) map[string]any {
	v := map[string]any{
		"id": "chatcmpl-" + a.id, "object": "chat.completion", "created": 1700000000, "model": a.model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": a.step.Text, "refusal": nil},
			"finish_reason": openAIFinish(a.step),
			"logprobs":      nil,
		}},
	}
	if a.step.Usage != nil {
		v["usage"] = openAIUsage(a.step.Usage, a.step.Cost)
	}
	return v
}

func openAIEvents(a answer, rec Recorded) []string {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": 1700000000, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
			"usage":   nil,
		}
	}
	var out []string
	for i, p := range pieces(a.step.Text) {
		d := map[string]any{"content": p}
		if i == 0 {
			d["role"] = "assistant"
		}
		out = append(out, sse("", chunk(d, nil)))
		if i == 0 && a.step.StreamError != "" {
			out = append(out, sse("", map[string]any{"error": map[string]any{"message": a.step.StreamError, "type": "server_error"}}))
			return out
		}
	}
	out = append(out, sse("", chunk(map[string]any{}, openAIFinish(a.step))))
	opts, _ := rec.JSON["stream_options"].(map[string]any)
	if a.step.Usage != nil && opts["include_usage"] == true {
		out = append(out, sse("", map[string]any{
			"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": 1700000000, "model": a.model,
			"choices": []any{}, "usage": openAIUsage(a.step.Usage, a.step.Cost),
		}))
	}
	return append(out, "data: [DONE]\n\n")
}

// Anthropic Messages.

func anthropicFinish(st Step) string {
	if st.Finish != "" {
		return st.Finish
	}
	return "end_turn"
}

// anthropicUsage reports u the way Anthropic does: input_tokens without
// the cached and cache-written tokens.
func anthropicUsage(u *llm.Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens - u.CachedTokens - u.CacheWriteTokens,
		"output_tokens":               u.OutputTokens,
		"cache_read_input_tokens":     u.CachedTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"output_tokens_details":       map[string]any{"thinking_tokens": u.ReasoningTokens},
	}
}

func anthropicMessage(a answer, full bool) map[string]any {
	v := map[string]any{
		"id": "msg_" + a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
	}
	if full {
		v["content"] = []any{map[string]any{"type": "text", "text": a.step.Text}}
		v["stop_reason"] = anthropicFinish(a.step)
	}
	if a.step.Usage != nil {
		u := anthropicUsage(a.step.Usage)
		if !full {
			u["output_tokens"] = 1
		}
		v["usage"] = u
	}
	return v
}

func anthropicEvents(a answer) []string {
	out := []string{
		sse("message_start", map[string]any{"type": "message_start", "message": anthropicMessage(a, false)}),
		sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
	}
	for i, p := range pieces(a.step.Text) {
		out = append(out, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}))
		if i == 0 && a.step.StreamError != "" {
			return append(out, sse("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": a.step.StreamError}}))
		}
	}
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicFinish(a.step), "stop_sequence": nil}}
	if a.step.Usage != nil {
		delta["usage"] = map[string]any{"output_tokens": a.step.Usage.OutputTokens, "output_tokens_details": map[string]any{"thinking_tokens": a.step.Usage.ReasoningTokens}}
	} else {
		delta["usage"] = map[string]any{"output_tokens": 0}
	}
	return append(out,
		sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		sse("message_delta", delta),
		sse("message_stop", map[string]any{"type": "message_stop"}),
	)
}

// Gemini generateContent.

func geminiResponse(a answer, text string, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": text}}, "role": "model"}, "index": 0}
	v := map[string]any{"candidates": []any{cand}, "modelVersion": a.model, "responseId": "resp-" + a.id}
	if !last {
		return v
	}
	fin := a.step.Finish
	if fin == "" {
		fin = "STOP"
	}
	cand["finishReason"] = fin
	if u := a.step.Usage; u != nil {
		v["usageMetadata"] = map[string]any{
			"promptTokenCount":        u.InputTokens,
			"candidatesTokenCount":    u.OutputTokens - u.ReasoningTokens,
			"thoughtsTokenCount":      u.ReasoningTokens,
			"cachedContentTokenCount": u.CachedTokens,
			"totalTokenCount":         u.InputTokens + u.OutputTokens,
		}
	}
	return v
}

func geminiEvents(a answer) []string {
	ps := pieces(a.step.Text)
	var out []string
	for i, p := range ps {
		out = append(out, sse("", geminiResponse(a, p, i == len(ps)-1)))
		if i == 0 && a.step.StreamError != "" {
			return append(out, sse("", map[string]any{"error": map[string]any{"code": 503, "message": a.step.StreamError, "status": "UNAVAILABLE"}}))
		}
	}
	return out
}
