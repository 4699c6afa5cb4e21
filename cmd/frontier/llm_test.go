package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
)

func noEnv(string) (string, bool) { return "", false }

func pingOpts() llmPingOptions {
	return llmPingOptions{prompt: "Reply with the single word: pong", maxTokens: 64, timeout: 10 * time.Second, attempts: 1, lookupEnv: noEnv}
}

func TestLLMPingLocalServer(t *testing.T) {
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Text: "pong", Usage: &llm.Usage{InputTokens: 21, OutputTokens: 1}, Model: "qwen-served"})
	var out bytes.Buffer
	err := runLLMPing(context.Background(), &out, slog.New(slog.DiscardHandler), llm.Config{}, srv.Spec("qwen"), pingOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"model", "openai-compatible/qwen", "endpoint", srv.BaseURL(), "server model  qwen-served",
		`reply         "pong"`, "latency", "(1 attempt)", "tokens        in 21, out 1 (reasoning 0, cached 0)",
		"cost          unknown: no price for openai-compatible/qwen", "finish        stop", "request id    req_test-1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if got := srv.Requests()[0].JSON["max_tokens"]; got != float64(64) {
		t.Errorf("max_tokens %v", got)
	}
}

func TestLLMPingConfiguredModelWithPriceAndJSON(t *testing.T) {
	srv := llmtest.NewServer(t, llm.ProtocolAnthropic, llmtest.Step{Text: "pong", Usage: &llm.Usage{InputTokens: 1000, OutputTokens: 100}})
	cfg := llm.Config{Models: []llm.ModelConfig{{Name: "claude", Spec: "anthropic/claude-sonnet-4-5", BaseURL: srv.BaseURL()}}}
	o := pingOpts()
	o.lookupEnv = func(k string) (string, bool) { return "sk-ant-test-0123456789abcdefgh", k == "ANTHROPIC_API_KEY" }
	o.json = true
	var out bytes.Buffer
	if err := runLLMPing(context.Background(), &out, slog.New(slog.DiscardHandler), cfg, "claude", o); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name    string  `json:"name"`
		Text    string  `json:"text"`
		CostUSD float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	// claude-sonnet-4-5 at $3 in / $15 out per million.
	if got.Name != "claude" || got.Text != "pong" || got.CostUSD < 0.0044999 || got.CostUSD > 0.0045001 {
		t.Errorf("got %+v", got)
	}
}

func TestLLMPingFailures(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	var out bytes.Buffer
	// A missing key is a setup problem: exit code 2 and the variable to set.
	err := runLLMPing(ctx, &out, log, llm.Config{}, "openai/gpt-5", pingOpts())
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	// An unknown name lists the configured ones.
	cfg := llm.Config{Models: []llm.ModelConfig{{Name: "a", Spec: "ollama/llama3"}}}
	if err := runLLMPing(ctx, &out, log, cfg, "b", pingOpts()); err == nil || !strings.Contains(err.Error(), "configured: a") {
		t.Errorf("unknown model: %v", err)
	}
	// A server error says what, where and what to do; the key never shows.
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Status: 401, ErrorMessage: "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx"})
	cfg = llm.Config{Models: []llm.ModelConfig{{Name: "v", Spec: srv.Spec("m"), APIKeyEnv: "VLLM_KEY"}}}
	o := pingOpts()
	o.lookupEnv = func(k string) (string, bool) { return "secret-vllm-key-123456", k == "VLLM_KEY" }
	err = runLLMPing(ctx, &out, log, cfg, "v", o)
	if !errors.Is(err, llm.ErrAuth) || !strings.Contains(err.Error(), "$VLLM_KEY was refused") || strings.Contains(err.Error(), "sk-proj-abc") {
		t.Errorf("refused key: %v", err)
	}
	// A server that is down: a network error naming the URL.
	dead := llmtest.NewServer(t, llm.ProtocolOpenAI)
	spec := dead.Spec("m")
	dead.Close()
	if err := runLLMPing(ctx, &out, log, llm.Config{}, spec, pingOpts()); !errors.Is(err, llm.ErrNetwork) || !strings.Contains(err.Error(), "running and reachable") {
		t.Errorf("dead server: %v", err)
	}
}

func TestLLMModels(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-ant-from-file-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := llm.Config{
		Default: "claude",
		Models: []llm.ModelConfig{
			{Name: "gpt5", Spec: "openai/gpt-5", Weight: 2},
			{Name: "claude", Spec: "anthropic/claude-sonnet-4-5", APIKeyFile: keyFile},
			{Name: "local", Spec: "openai-compatible/qwen@http://127.0.0.1:8000/v1"},
			{Name: "flash", Spec: "gemini/gemini-2.5-pro"},
		},
	}
	env := func(k string) (string, bool) { return "AIza-xyz", k == "GOOGLE_API_KEY" }
	var out bytes.Buffer
	if err := runLLMModels(&out, cfg, env, false); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"NAME", "gpt5", "$OPENAI_API_KEY (NOT SET)", "1.25 / 10.00 / 0.125",
		"claude *", "file " + keyFile + " (set)", "3.00 / 15.00 / 0.30",
		"local", "http://127.0.0.1:8000/v1", "not needed", "unknown",
		"$GEMINI_API_KEY or $GOOGLE_API_KEY (set)", "(more above 200k input)",
		"default model",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "sk-ant-from-file") || strings.Contains(s, "AIza-xyz") {
		t.Errorf("a key was printed:\n%s", s)
	}
	out.Reset()
	if err := runLLMModels(&out, cfg, env, true); err != nil {
		t.Fatal(err)
	}
	var rows []llmModelInfo
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 4 || rows[0].Weight != 2 || !rows[0].Reasoning || rows[2].Price != nil {
		t.Errorf("json %v %+v", err, rows)
	}
	// snake_case keys everywhere, the prices' too.
	if !strings.Contains(out.String(), `"cached_input": 0.125`) || strings.Contains(out.String(), `"CachedInput"`) || strings.Contains(out.String(), `"Input"`) {
		t.Errorf("keys are not snake_case:\n%s", out.String())
	}
	out.Reset()
	if err := runLLMModels(&out, llm.Config{}, env, false); err != nil || !strings.Contains(out.String(), "No models configured") {
		t.Errorf("empty: %v %s", err, out.String())
	}
	bad := llm.Config{Models: []llm.ModelConfig{{Spec: "nope"}}}
	if err := runLLMModels(&out, bad, env, false); exitCode(err) != exitUsage {
		t.Errorf("bad config: %v", err)
	}
}

func TestLLMCommandLine(t *testing.T) {
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI, llmtest.Step{Text: "pong"})
	dir := t.TempDir()
	conf := filepath.Join(dir, "frontier.yaml")
	yaml := "home: " + dir + "\nllm:\n  models:\n    - name: local\n      spec: " + srv.Spec("m") + "\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--config", conf, "llm", "ping", "local"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"pong"`) {
		t.Errorf("stdout %s", stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"--config", conf, "llm", "models"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "local *") {
		t.Errorf("models: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if code := run(context.Background(), []string{"--config", conf, "llm", "ping"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("ping without a model: exit %d", code)
	}
	// Flags that cannot mean anything are refused before any request.
	for _, c := range []struct{ flag, want string }{
		{"--attempts=0", "--attempts 0: use 1 to 100"},
		{"--attempts=-3", "--attempts -3"},
		{"--timeout=0s", "--timeout 0s: use a positive duration"},
		{"--timeout=-1m", "--timeout -1m0s"},
		{"--max-tokens=0", "--max-tokens 0"},
	} {
		stderr.Reset()
		code := run(context.Background(), []string{"--config", conf, "llm", "ping", "local", c.flag}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 and %q", c.flag, code, stderr.String(), c.want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests reached the server, want the first ping's only", n)
	}
}
