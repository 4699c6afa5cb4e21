package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
)

func TestTransportRecordsAndKeepsTheBody(t *testing.T) {
	body := `{"error":{"message":"` + strings.Repeat("x", 100<<10) + `"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("X-Request-Id", "req_9")
		w.WriteHeader(429)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	ctx, ex := Track(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, nil)
	resp, err := HTTPClient(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body {
		t.Errorf("the SDK would get %d bytes of a %d-byte body", len(got), len(body))
	}
	if ex.Status() != 429 || ex.Header().Get("X-Request-Id") != "req_9" || len(ex.Body()) != maxErrorBody {
		t.Errorf("recorded %d %v %d bytes", ex.Status(), ex.Header(), len(ex.Body()))
	}
	err = Classify(ctx, Call{Provider: "openai", Model: "m", BaseURL: srv.URL}, ex, errors.New("sdk error"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.ErrRateLimited || e.RetryAfter.Seconds() != 3 || e.RequestID != "req_9" || len(e.Message) > 510 {
		t.Errorf("classified %+v", e)
	}
	// Without Track nothing is recorded and nothing breaks.
	req, _ = http.NewRequest("GET", srv.URL, nil)
	if resp, err := HTTPClient(&http.Client{}).Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
}

func TestClassify(t *testing.T) {
	call := Call{Provider: "ollama", Model: "local", ID: "llama3", BaseURL: "http://127.0.0.1:11434/v1"}
	// No response at all: a network error that names the server.
	err := Classify(context.Background(), call, &Exchange{}, errors.New("dial tcp: connection refused"))
	if !errors.Is(err, llm.ErrNetwork) || !strings.Contains(err.Error(), "http://127.0.0.1:11434/v1 running") {
		t.Errorf("network: %v", err)
	}
	// HTTP 200 with a body that does not parse.
	err = Classify(context.Background(), call, &Exchange{status: 200}, errors.New("unexpected end of JSON input"))
	if !errors.Is(err, llm.ErrMalformed) {
		t.Errorf("malformed: %v", err)
	}
	// An error event inside a 200 stream is classified by its type.
	err = Classify(context.Background(), call, &Exchange{status: 200}, errors.New(`received error while streaming: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if !errors.Is(err, llm.ErrServer) || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("stream error: %v", err)
	}
	// 404 from Ollama suggests pulling the model by its id.
	err = Classify(context.Background(), call, &Exchange{status: 404, body: []byte(`{"error":"model \"llama3\" not found"}`)}, errors.New("x"))
	if !errors.Is(err, llm.ErrNotFound) || !strings.Contains(err.Error(), "ollama pull llama3") {
		t.Errorf("not found: %v", err)
	}
	// The caller's cancellation passes through untouched.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Classify(ctx, call, &Exchange{}, errors.New("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}

func TestFinishReason(t *testing.T) {
	for raw, want := range map[string]string{
		"stop": llm.FinishStop, "end_turn": llm.FinishStop, "STOP": llm.FinishStop, "stop_sequence": llm.FinishStop,
		"length": llm.FinishLength, "max_tokens": llm.FinishLength, "MAX_TOKENS": llm.FinishLength,
		"content_filter": llm.FinishContentFilter, "SAFETY": llm.FinishContentFilter, "refusal": llm.FinishContentFilter,
		"tool_calls": "tool_calls", "": "",
	} {
		if got := FinishReason(raw); got != want {
			t.Errorf("FinishReason(%q) = %q, want %q", raw, got, want)
		}
	}
}
