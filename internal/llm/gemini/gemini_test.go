package gemini_test

import (
	"context"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/gemini"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
)

func send(t *testing.T, cfg gemini.Config, req llm.Request) llmtest.Recorded {
	t.Helper()
	srv := llmtest.NewServer(t, llm.ProtocolGemini, llmtest.Step{Text: "ok"})
	cfg.BaseURL = srv.BaseURL()
	cfg.APIKey = "AIza-test-key"
	c, err := gemini.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

func request(effort string) llm.Request {
	temp := 0.5
	return llm.Request{System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}, {Role: llm.RoleAssistant, Content: "a"}, {Role: llm.RoleUser, Content: "q2"}},
		Temperature: &temp, MaxOutputTokens: 321, ReasoningEffort: effort, Stop: []string{"END"}}
}

func TestGemini25Parameters(t *testing.T) {
	got := send(t, gemini.Config{Model: "gemini-2.5-flash"}, request("low"))
	if got.Header.Get("X-Goog-Api-Key") != "AIza-test-key" || !strings.HasSuffix(got.Path, "/models/gemini-2.5-flash:generateContent") {
		t.Errorf("%s %v", got.Path, got.Header)
	}
	gc, _ := got.JSON["generationConfig"].(map[string]any)
	if gc["temperature"] != 0.5 || gc["maxOutputTokens"] != float64(321) || gc["stopSequences"].([]any)[0] != "END" {
		t.Errorf("generationConfig %v", gc)
	}
	if tc, _ := gc["thinkingConfig"].(map[string]any); tc["thinkingBudget"] != float64(1024) {
		t.Errorf("thinking %v", gc["thinkingConfig"])
	}
	contents := got.JSON["contents"].([]any)
	if len(contents) != 3 || contents[1].(map[string]any)["role"] != "model" {
		t.Errorf("contents %v", contents)
	}
	if _, ok := got.JSON["systemInstruction"]; !ok {
		t.Errorf("no system instruction: %s", got.Body)
	}
}

func TestGemini3Parameters(t *testing.T) {
	got := send(t, gemini.Config{Model: "gemini-3-pro-preview", Reasoning: true, Stream: true}, request("xhigh"))
	if !strings.Contains(got.Path, ":streamGenerateContent") {
		t.Errorf("path %s", got.Path)
	}
	gc, _ := got.JSON["generationConfig"].(map[string]any)
	if _, ok := gc["temperature"]; ok {
		t.Errorf("temperature sent to a Gemini 3 model: %v", gc)
	}
	if tc, _ := gc["thinkingConfig"].(map[string]any); tc["thinkingLevel"] != "HIGH" {
		t.Errorf("thinking %v", gc["thinkingConfig"])
	}
}

func TestNewRequiresKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "must-not-be-used")
	if _, err := gemini.New(context.Background(), gemini.Config{Model: "m", BaseURL: "http://127.0.0.1:1"}); err == nil {
		t.Error("a client without a key was built (the SDK would read the environment)")
	}
}
