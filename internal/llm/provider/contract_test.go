package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/llm/provider"
)

// The contract every provider adapter must meet, run against a local
// server that speaks each wire format, streamed and not.

const testKey = "sk-test-0123456789abcdefghijklmnop"

type harness struct {
	srv    *llmtest.Server
	set    *provider.Set
	client llm.Client
	mu     sync.Mutex
	sleeps []time.Duration
}

func (h *harness) waits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

type setup struct {
	timeout  time.Duration
	attempts int
	budget   llm.BudgetConfig
}

func newHarness(t *testing.T, protocol string, stream bool, s setup, steps ...llmtest.Step) *harness {
	t.Helper()
	h := &harness{srv: llmtest.NewServer(t, protocol, steps...)}
	spec := h.srv.Spec("test-model")
	sp, err := llm.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	mc := llm.ModelConfig{Name: "m", Spec: spec, Stream: &stream, Timeout: llm.Duration(s.timeout), APIKeyEnv: "TEST_LLM_KEY"}
	cfg := llm.Config{
		Models: []llm.ModelConfig{mc},
		Prices: map[string]llm.Price{sp.Provider + "/test-model": {Input: 1, Output: 2, CachedInput: ptr(0.5)}},
		Retry:  llm.RetryConfig{MaxAttempts: max(s.attempts, 1), InitialBackoff: llm.Duration(time.Second)},
		Budget: s.budget,
	}
	set, err := provider.New(cfg, provider.Options{
		LookupEnv: func(k string) (string, bool) {
			if k == "TEST_LLM_KEY" {
				return testKey, true
			}
			return "", false
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.set = set
	h.client, err = set.Client("m")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func ptr[T any](v T) *T { return &v }

func ask(text string) llm.Request {
	return llm.Request{System: "You are terse.", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}, MaxOutputTokens: 100}
}

func forEachProvider(t *testing.T, f func(t *testing.T, protocol string, stream bool)) {
	for _, p := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini} {
		for _, stream := range []bool{false, true} {
			name := p
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f(t, p, stream)
			})
		}
	}
}

func TestContractSuccessAndUsage(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		u := &llm.Usage{InputTokens: 1000, OutputTokens: 300, ReasoningTokens: 100, CachedTokens: 400}
		h := newHarness(t, protocol, stream, setup{}, llmtest.Step{Text: "Hello, wörld! ✓", Usage: u, Model: "test-model-2026-01-01"})
		resp, err := h.client.Complete(context.Background(), ask("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "Hello, wörld! ✓" {
			t.Errorf("text %q", resp.Text)
		}
		if resp.Usage.InputTokens != 1000 || resp.Usage.OutputTokens != 300 || resp.Usage.ReasoningTokens != 100 || resp.Usage.CachedTokens != 400 || resp.Usage.Estimated {
			t.Errorf("usage %+v, want input 1000 (400 cached), output 300 (100 reasoning), not estimated", resp.Usage)
		}
		// 600 plain input at $1/M + 400 cached at $0.5/M + 300 output at $2/M.
		want := (600*1 + 400*0.5 + 300*2) / 1e6
		if diff := resp.CostUSD - want; diff > 1e-12 || diff < -1e-12 || resp.PriceUnknown {
			t.Errorf("cost %g (unknown %v), want %g", resp.CostUSD, resp.PriceUnknown, want)
		}
		if resp.FinishReason != llm.FinishStop {
			t.Errorf("finish %q", resp.FinishReason)
		}
		if resp.Model != "test-model-2026-01-01" {
			t.Errorf("model %q", resp.Model)
		}
		if resp.RequestID == "" || resp.Attempts != 1 || resp.Latency <= 0 {
			t.Errorf("request id %q, attempts %d, latency %s", resp.RequestID, resp.Attempts, resp.Latency)
		}
		if len(h.srv.Requests()) != 1 {
			t.Errorf("%d requests, want 1", len(h.srv.Requests()))
		}
		if got := h.set.Budget().Spent(); got.Calls != 1 || got.Tokens != 1300 {
			t.Errorf("budget spent %+v", got)
		}
		// The key travels in the provider's header and nowhere else.
		req := h.srv.Requests()[0]
		if !headerHas(req.Header, testKey) || strings.Contains(string(req.Body), testKey) {
			t.Errorf("key not sent in a header, or sent in the body: %v", req.Header)
		}
	})
}

func headerHas(h map[string][]string, v string) bool {
	for _, vals := range h {
		for _, x := range vals {
			if strings.Contains(x, v) {
				return true
			}
		}
	}
	return false
}

func TestContractNoUsageIsEstimated(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{}, llmtest.Step{Text: "The quick brown fox jumps over the lazy dog."})
		resp, err := h.client.Complete(context.Background(), ask("Write a pangram."))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Usage.Estimated || resp.Usage.OutputTokens != 10 || resp.Usage.InputTokens < 10 {
			t.Errorf("usage %+v, want an estimate with 10 output tokens", resp.Usage)
		}
		if resp.CostUSD <= 0 {
			t.Errorf("cost %g from estimated usage", resp.CostUSD)
		}
	})
}

func TestContractRateLimitHonoursRetryAfter(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{attempts: 3},
			llmtest.Step{Status: 429, Header: map[string]string{"Retry-After": "7"}, ErrorMessage: "slow down", ErrorType: "rate_limit_error"},
			llmtest.Step{Text: "ok"})
		resp, err := h.client.Complete(context.Background(), ask("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "ok" || resp.Attempts != 2 {
			t.Errorf("text %q attempts %d", resp.Text, resp.Attempts)
		}
		w := h.waits()
		if len(w) != 1 || w[0] < 7*time.Second || w[0] > 7700*time.Millisecond {
			t.Errorf("waits %v, want one of 7s plus at most 10%% jitter", w)
		}
	})
}

func TestContractRateLimitExhausted(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{attempts: 2},
			llmtest.Step{Status: 429, Header: map[string]string{"Retry-After-Ms": "1500"}, ErrorMessage: "quota for sk-live-abcdefghijklmnopqrstuvwx exceeded"})
		_, err := h.client.Complete(context.Background(), ask("hi"))
		var e *llm.Error
		if !errors.Is(err, llm.ErrRateLimited) || !errors.As(err, &e) {
			t.Fatalf("err %v, want a rate limit error", err)
		}
		if e.Status != 429 || e.RetryAfter != 1500*time.Millisecond || e.Provider == "" || e.Model != "m" {
			t.Errorf("error fields %+v", e)
		}
		if strings.Contains(err.Error(), "sk-live") || !strings.Contains(err.Error(), "2 attempts") {
			t.Errorf("message %q: want the attempt count and no key", err)
		}
		if n := len(h.srv.Requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

func TestContractServerErrorThenSuccess(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{attempts: 3},
			llmtest.Step{Status: 500, ErrorMessage: "boom"},
			llmtest.Step{Status: 503, ErrorMessage: "overloaded"},
			llmtest.Step{Text: "recovered", Usage: &llm.Usage{InputTokens: 5, OutputTokens: 1}})
		resp, err := h.client.Complete(context.Background(), ask("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "recovered" || resp.Attempts != 3 {
			t.Errorf("text %q attempts %d", resp.Text, resp.Attempts)
		}
		w := h.waits()
		// Equal jitter: the first wait is 0.5-1s, the second 1-2s.
		if len(w) != 2 || w[0] < 500*time.Millisecond || w[0] > time.Second || w[1] < time.Second || w[1] > 2*time.Second {
			t.Errorf("waits %v", w)
		}
		if got := h.set.Budget().Spent().Calls; got != 1 {
			t.Errorf("a retried call counted %d times", got)
		}
	})
}

func TestContractMalformedResponse(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		body := `{"choices": [ {"message": `
		if stream {
			body = "data: {not json\n\n"
		}
		h := newHarness(t, protocol, stream, setup{attempts: 3}, llmtest.Step{Body: body})
		_, err := h.client.Complete(context.Background(), ask("hi"))
		if !errors.Is(err, llm.ErrMalformed) {
			t.Fatalf("err %v, want malformed", err)
		}
		if n := len(h.srv.Requests()); n != 1 {
			t.Errorf("%d requests: a malformed answer must not be retried", n)
		}
	})
}

func TestContractEmptyJSONIsMalformed(t *testing.T) {
	for _, p := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini} {
		h := newHarness(t, p, false, setup{}, llmtest.Step{Body: `{}`})
		if _, err := h.client.Complete(context.Background(), ask("hi")); !errors.Is(err, llm.ErrMalformed) {
			t.Errorf("%s: err %v, want malformed", p, err)
		}
	}
}

func TestContractPerCallTimeout(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{timeout: 150 * time.Millisecond, attempts: 2},
			llmtest.Step{Text: "late", Delay: 5 * time.Second})
		start := time.Now()
		_, err := h.client.Complete(context.Background(), ask("hi"))
		if !errors.Is(err, llm.ErrTimeout) {
			t.Fatalf("err %v, want a timeout", err)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("took %s", el)
		}
		// Count the retries rather than the requests the server saw: on a
		// loaded machine a request can time out before it arrives.
		if w := h.waits(); len(w) != 1 {
			t.Errorf("waits %v, want one retry (a timeout is retried)", w)
		}
	})
}

func TestContractTimeoutMidStream(t *testing.T) {
	for _, p := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, p, true, setup{timeout: 200 * time.Millisecond},
				llmtest.Step{Text: "a long answer that trickles", ChunkDelay: 5 * time.Second})
			if _, err := h.client.Complete(context.Background(), ask("hi")); !errors.Is(err, llm.ErrTimeout) {
				t.Fatalf("err %v, want a timeout", err)
			}
		})
	}
}

func TestContractCancel(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{attempts: 5}, llmtest.Step{Text: "late", Delay: 5 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := h.client.Complete(ctx, ask("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("took %s", el)
		}
		if n := len(h.srv.Requests()); n > 1 || len(h.waits()) != 0 {
			t.Errorf("%d requests, waits %v: a canceled call must not be retried", n, h.waits())
		}
	})
}

func TestContractErrorKinds(t *testing.T) {
	cases := []struct {
		step llmtest.Step
		kind llm.Kind
		hint string
	}{
		{llmtest.Step{Status: 401, ErrorMessage: "invalid x-api-key"}, llm.ErrAuth, "$TEST_LLM_KEY"},
		{llmtest.Step{Status: 403, ErrorMessage: "forbidden"}, llm.ErrAuth, "refused"},
		{llmtest.Step{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."}, llm.ErrContextLength, "too long"},
		{llmtest.Step{Status: 400, ErrorMessage: "prompt is too long: 250000 tokens > 200000 maximum"}, llm.ErrContextLength, "too long"},
		{llmtest.Step{Status: 404, ErrorMessage: "model not found"}, llm.ErrNotFound, "test-model"},
		{llmtest.Step{Status: 400, ErrorMessage: "temperature: Extra inputs are not permitted"}, llm.ErrBadRequest, "parameters"},
	}
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		for _, c := range cases {
			h := newHarness(t, protocol, stream, setup{attempts: 3}, c.step)
			_, err := h.client.Complete(context.Background(), ask("hi"))
			if !errors.Is(err, c.kind) {
				t.Errorf("HTTP %d: err %v, want %s", c.step.Status, err, c.kind)
				continue
			}
			if !strings.Contains(err.Error(), c.step.ErrorMessage) || !strings.Contains(err.Error(), c.hint) {
				t.Errorf("HTTP %d: message %q lacks the server's message or the hint %q", c.step.Status, err, c.hint)
			}
			if n := len(h.srv.Requests()); n != 1 {
				t.Errorf("HTTP %d retried: %d requests", c.step.Status, n)
			}
		}
	})
}

func TestContractFinishLength(t *testing.T) {
	finish := map[string]string{llm.ProtocolOpenAI: "length", llm.ProtocolAnthropic: "max_tokens", llm.ProtocolGemini: "MAX_TOKENS"}
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{}, llmtest.Step{Text: "cut off mid", Finish: finish[protocol]})
		resp, err := h.client.Complete(context.Background(), ask("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != llm.FinishLength {
			t.Errorf("finish %q, want %q", resp.FinishReason, llm.FinishLength)
		}
	})
}

func TestContractStreamErrorEventIsRetried(t *testing.T) {
	for _, p := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini} {
		h := newHarness(t, p, true, setup{attempts: 2},
			llmtest.Step{Text: "partial answer", StreamError: "Overloaded"},
			llmtest.Step{Text: "whole answer"})
		resp, err := h.client.Complete(context.Background(), ask("hi"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if resp.Text != "whole answer" || resp.Attempts != 2 {
			t.Errorf("%s: text %q attempts %d", p, resp.Text, resp.Attempts)
		}
	}
}

func TestContractStopSequences(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		// Servers that ignore stop (reasoning models) still get the text cut.
		h := newHarness(t, protocol, stream, setup{}, llmtest.Step{Text: "first part\n>>>>>>> REPLACE\nrest"})
		req := ask("hi")
		req.Stop = []string{">>>>>>> REPLACE"}
		resp, err := h.client.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "first part\n" || resp.FinishReason != llm.FinishStop {
			t.Errorf("text %q finish %q", resp.Text, resp.FinishReason)
		}
	})
}

func TestContractBudgetWithConcurrentCallers(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{budget: llm.BudgetConfig{MaxCalls: 5}},
			llmtest.Step{Text: "ok", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 2}, Delay: 20 * time.Millisecond})
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.client.Complete(context.Background(), ask("hi"))
				mu.Lock()
				defer mu.Unlock()
				var be *llm.BudgetError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &be) && be.Budget == "calls" && errors.Is(err, llm.ErrBudgetExhausted):
					refused++
				default:
					t.Errorf("unexpected error %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 5 || refused != 15 || len(h.srv.Requests()) != 5 {
			t.Errorf("%d succeeded, %d refused, %d requests reached the server; want 5, 15, 5", ok, refused, len(h.srv.Requests()))
		}
		if err := h.set.Budget().Err(); !errors.Is(err, llm.ErrBudgetExhausted) {
			t.Errorf("budget Err() = %v", err)
		}
	})
}

func TestContractInvalidRequestIsNotSent(t *testing.T) {
	forEachProvider(t, func(t *testing.T, protocol string, stream bool) {
		h := newHarness(t, protocol, stream, setup{}, llmtest.Step{Text: "never"})
		_, err := h.client.Complete(context.Background(), llm.Request{})
		if !errors.Is(err, llm.ErrInvalidRequest) {
			t.Errorf("err %v", err)
		}
		if len(h.srv.Requests()) != 0 || h.set.Budget().Spent().Calls != 0 {
			t.Error("an invalid request reached the server or the budget")
		}
	})
}

func TestContractConcurrencyLimit(t *testing.T) {
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI)
	var mu sync.Mutex
	inFlight, peak := 0, 0
	srv.Respond = func(llmtest.Recorded) llmtest.Step { return llmtest.Step{Text: "ok"} }
	srv.Config.Handler = wrapCount(srv.Config.Handler, &mu, &inFlight, &peak)
	cfg := llm.Config{
		Models:    []llm.ModelConfig{{Name: "a", Spec: srv.Spec("a")}, {Name: "b", Spec: srv.Spec("b")}},
		Providers: map[string]llm.Limits{"openai-compatible": {MaxConcurrency: 2}},
	}
	set, err := provider.New(cfg, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := ask("hi")
			req.Model = []string{"a", "b"}[i%2]
			if _, err := set.Complete(context.Background(), req); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if peak > 2 || peak == 0 {
		t.Errorf("peak %d requests in flight across two models of one provider, want at most 2", peak)
	}
}

func TestOpenAICompatibleNeedsNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak-0123456789abcdef")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Text: "pong"})
	c, err := provider.Open(llm.Config{}, srv.Spec("local-model"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), ask("ping"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "pong" || resp.Provider != "openai-compatible" {
		t.Errorf("resp %+v", resp)
	}
	if !resp.PriceUnknown || resp.CostUSD != 0 {
		t.Errorf("price of an unconfigured server: unknown=%v cost=%g", resp.PriceUnknown, resp.CostUSD)
	}
	if a := srv.Requests()[0].Header.Get("Authorization"); a != "" {
		t.Errorf("sent Authorization %q to a local server", a)
	}
}

func TestMissingKeyFailsEarlyWithHint(t *testing.T) {
	for _, spec := range []string{"openai/gpt-5", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-pro", "openrouter/openai/gpt-5"} {
		set, err := provider.New(llm.Config{}, provider.Options{LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = set.Client(spec)
		if !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "export ") {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

func ExampleSet() {
	// A search opens every configured model once and shares the budget.
	cfg := llm.Config{
		Models: []llm.ModelConfig{{Name: "local", Spec: "ollama/qwen2.5-coder:32b"}},
		Budget: llm.BudgetConfig{MaxCalls: 100},
	}
	set, err := provider.New(cfg, provider.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = set.Client("local")
	fmt.Println(err, set.Budget().Limits().MaxCalls)
	// Output: <nil> 100
}
