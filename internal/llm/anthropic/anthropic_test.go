package anthropic_test

import (
	"context"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/anthropic"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
)

func send(t *testing.T, cfg anthropic.Config, req llm.Request) llmtest.Recorded {
	t.Helper()
	srv := llmtest.NewServer(t, llm.ProtocolAnthropic, llmtest.Step{Text: "ok"})
	cfg.BaseURL = srv.BaseURL()
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

func TestParameters(t *testing.T) {
	temp := 0.2
	req := llm.Request{System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}},
		Temperature: &temp, ReasoningEffort: "minimal", Stop: []string{"END"}}
	got := send(t, anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test-0123456789abcdef"}, req)
	j := got.JSON
	if _, ok := j["temperature"]; ok {
		t.Errorf("temperature sent; API version 2026-10-21 refuses it: %s", got.Body)
	}
	if j["max_tokens"] != float64(anthropic.DefaultMaxTokens) {
		t.Errorf("max_tokens %v", j["max_tokens"])
	}
	if oc, _ := j["output_config"].(map[string]any); oc["effort"] != "low" {
		t.Errorf("effort: %s", got.Body)
	}
	if sys := j["system"].([]any); sys[0].(map[string]any)["text"] != "be brief" {
		t.Errorf("system %v", sys)
	}
	if stop := j["stop_sequences"].([]any); stop[0] != "END" {
		t.Errorf("stop %v", stop)
	}
	if got.Header.Get("Anthropic-Version") == "" || got.Header.Get("Authorization") != "Bearer sk-ant-test-0123456789abcdef" {
		t.Errorf("headers %v", got.Header)
	}
}

func TestNoEffortNoOutputConfig(t *testing.T) {
	got := send(t, anthropic.Config{Model: "m", Stream: true}, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}, MaxOutputTokens: 50, ReasoningEffort: "none"})
	if _, ok := got.JSON["output_config"]; ok || got.JSON["max_tokens"] != float64(50) || got.JSON["stream"] != true {
		t.Errorf("body %s", got.Body)
	}
}
