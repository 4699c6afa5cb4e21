package openai_test

import (
	"context"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/llm/openai"
)

func send(t *testing.T, cfg openai.Config, req llm.Request) llmtest.Recorded {
	t.Helper()
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Text: "ok"})
	cfg.BaseURL = srv.BaseURL()
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

func request() llm.Request {
	temp := 0.4
	return llm.Request{
		System:          "be brief",
		Messages:        []llm.Message{{Role: llm.RoleUser, Content: "q1"}, {Role: llm.RoleAssistant, Content: "a1"}, {Role: llm.RoleUser, Content: "q2"}},
		Temperature:     &temp,
		MaxOutputTokens: 1234,
		ReasoningEffort: "high",
		Stop:            []string{"a", "b", "c", "d", "e"},
	}
}

func TestReasoningModelParameters(t *testing.T) {
	got := send(t, openai.Config{Provider: "openai", Model: "gpt-5", APIKey: "sk-test-abcdefghijklmnop0123", Reasoning: true}, request())
	j := got.JSON
	if j["max_completion_tokens"] != float64(1234) || j["reasoning_effort"] != "high" {
		t.Errorf("body %s", got.Body)
	}
	for _, k := range []string{"temperature", "max_tokens", "stop"} {
		if _, ok := j[k]; ok {
			t.Errorf("reasoning request sends %s: %s", k, got.Body)
		}
	}
	if got.Header.Get("Authorization") != "Bearer sk-test-abcdefghijklmnop0123" {
		t.Errorf("auth header %q", got.Header.Get("Authorization"))
	}
	msgs := j["messages"].([]any)
	if len(msgs) != 4 || msgs[0].(map[string]any)["role"] != "system" || msgs[2].(map[string]any)["role"] != "assistant" {
		t.Errorf("messages %v", msgs)
	}
}

func TestClassicModelParameters(t *testing.T) {
	got := send(t, openai.Config{Provider: "openai-compatible", Model: "qwen"}, request())
	j := got.JSON
	if j["max_tokens"] != float64(1234) || j["temperature"] != 0.4 || len(j["stop"].([]any)) != 4 {
		t.Errorf("body %s", got.Body)
	}
	for _, k := range []string{"reasoning_effort", "max_completion_tokens", "stream"} {
		if _, ok := j[k]; ok {
			t.Errorf("classic request sends %s: %s", k, got.Body)
		}
	}
	if got.Header.Get("Authorization") != "" {
		t.Errorf("a request without a key sent %q", got.Header.Get("Authorization"))
	}
}

func TestStreamAsksForUsage(t *testing.T) {
	got := send(t, openai.Config{Model: "gpt-4.1", Stream: true}, request())
	opts, _ := got.JSON["stream_options"].(map[string]any)
	if got.JSON["stream"] != true || opts["include_usage"] != true {
		t.Errorf("body %s", got.Body)
	}
}

func TestNewRequiresModelAndURL(t *testing.T) {
	if _, err := openai.New(openai.Config{Model: "x"}); err == nil {
		t.Error("no base URL accepted")
	}
}

func TestOpenRouterParametersAndReportedCost(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Text: "ok", Usage: &llm.Usage{InputTokens: 8, OutputTokens: 11}, Cost: 0.00078})
		c, err := openai.New(openai.Config{Provider: "openrouter", Model: "openai/o1", BaseURL: srv.BaseURL(), APIKey: "sk-or-v1-test", Reasoning: true, Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if resp.CostUSD != 0.00078 {
			t.Errorf("stream %v: cost %g, want the server's 0.00078", stream, resp.CostUSD)
		}
		j := srv.Requests()[0].JSON
		if j["max_tokens"] != float64(1234) || j["reasoning_effort"] != "high" || j["max_completion_tokens"] != nil || srv.Requests()[0].Header.Get("X-Title") != "frontier" {
			t.Errorf("body %s", srv.Requests()[0].Body)
		}
	}
}
