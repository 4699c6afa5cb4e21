package llm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const exampleYAML = `
llm:
  default: gpt5
  models:
    - name: gpt5
      spec: openai/gpt-5
      reasoning_effort: medium
      max_output_tokens: 32000
      weight: 2
      timeout: 15m
    - name: claude
      spec: anthropic/claude-sonnet-4-5
      max_concurrency: 4
      requests_per_minute: 50
    - name: local
      spec: openai-compatible/qwen2.5-coder@http://127.0.0.1:8000/v1
      temperature: 0.7
      stream: true
  providers:
    openai:
      max_concurrency: 8
  prices:
    openai-compatible/qwen2.5-coder: {input: 0, output: 0}
    openai/gpt-5: {input: 1.25, output: 10, cached_input: 0.125}
  retry:
    max_attempts: 6
    initial_backoff: 2s
    max_backoff: 1m
  budget:
    max_usd: 25
    max_calls: 1000
`

// decode reads YAML the way internal/config does: strict, unknown keys
// are errors.
func decode(t *testing.T, src string) (Config, error) {
	t.Helper()
	var doc struct {
		LLM Config `yaml:"llm"`
	}
	err := yaml.NewDecoder(bytes.NewReader([]byte(src)), yaml.Strict(), yaml.DisallowUnknownField()).Decode(&doc)
	return doc.LLM, err
}

func TestConfigDecodeExample(t *testing.T) {
	c, err := decode(t, exampleYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 3 || c.Models[0].Timeout.D() != 15*time.Minute || *c.Models[2].Temperature != 0.7 || !*c.Models[2].Stream {
		t.Errorf("models %+v", c.Models)
	}
	if c.Retry.InitialBackoff.D() != 2*time.Second || c.Budget.MaxUSD != 25 || c.Providers["openai"].MaxConcurrency != 8 {
		t.Errorf("config %+v", c)
	}
	if p := c.Prices["openai/gpt-5"]; p.CachedInput == nil || *p.CachedInput != 0.125 {
		t.Errorf("price %+v", p)
	}
	m, err := c.Model("")
	if err != nil || m.Name != "gpt5" || !m.Default || !m.Reasoning() || m.CallTimeout() != 15*time.Minute {
		t.Errorf("default model %+v, %v", m, err)
	}
	// Every documented field has a yaml tag: unknown keys fail.
	if _, err := decode(t, "llm:\n  models:\n    - name: x\n      spec: openai/gpt-5\n      temprature: 1\n"); err == nil {
		t.Error("a misspelled key was accepted")
	}
	if _, err := decode(t, "llm:\n  models:\n    - spec: openai/gpt-5\n      timeout: soon\n"); err == nil || !strings.Contains(err.Error(), "like 90s") {
		t.Errorf("bad duration: %v", err)
	}
}

func TestConfigValidateErrors(t *testing.T) {
	temp := 3.0
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no spec", Config{Models: []ModelConfig{{Name: "a"}}}, "llm.models[0] (a): spec is missing"},
		{"bad spec", Config{Models: []ModelConfig{{Spec: "gpt-5"}}}, "write PROVIDER/MODEL"},
		{"duplicate", Config{Models: []ModelConfig{{Name: "a", Spec: "openai/gpt-5"}, {Name: "a", Spec: "openai/o3"}}}, `name "a" is also used by llm.models[0]`},
		{"duplicate spec as name", Config{Models: []ModelConfig{{Spec: "openai/gpt-5"}, {Spec: "openai/gpt-5"}}}, "also used"},
		{"compatible without URL", Config{Models: []ModelConfig{{Spec: "openai-compatible/qwen"}}}, "needs the server's URL"},
		{"bad base url", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", BaseURL: "localhost:8000"}}}, "base_url"},
		{"key env and file", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", APIKeyEnv: "K", APIKeyFile: "/k"}}}, "not both"},
		{"key env name", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", APIKeyEnv: "MY-KEY"}}}, "not an environment variable name"},
		{"temperature", Config{Models: []ModelConfig{{Spec: "openai/gpt-4o", Temperature: &temp}}}, "outside 0..2"},
		{"effort", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", ReasoningEffort: "extreme"}}}, `reasoning_effort "extreme"`},
		{"negative limits", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", MaxConcurrency: -1}}}, "max_concurrency -1"},
		{"negative weight", Config{Models: []ModelConfig{{Spec: "openai/gpt-5", Weight: -1}}}, "weight"},
		{"default", Config{Default: "b", Models: []ModelConfig{{Name: "a", Spec: "openai/gpt-5"}}}, `no model is named "b" (names: a)`},
		{"provider", Config{Providers: map[string]Limits{"opnai": {}}}, "llm.providers.opnai: unknown provider"},
		{"price key", Config{Prices: map[string]Price{"gpt-5": {}}}, `llm.prices["gpt-5"]`},
		{"price value", Config{Prices: map[string]Price{"openai/x": {Input: -1}}}, "must not be negative"},
		{"tiers", Config{Prices: map[string]Price{"openai/x": {Tiers: []PriceTier{{AboveInputTokens: 10}, {AboveInputTokens: 5}}}}}, "increase"},
		{"retry", Config{Retry: RetryConfig{MaxAttempts: -1}}, "max_attempts"},
		{"backoff order", Config{Retry: RetryConfig{InitialBackoff: Duration(time.Minute), MaxBackoff: Duration(time.Second)}}, "longer than max_backoff"},
		{"budget", Config{Budget: BudgetConfig{MaxUSD: -5}}, "llm.budget"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	// Several problems are all reported.
	err := Config{Models: []ModelConfig{{Name: "a"}, {Spec: "x"}}, Budget: BudgetConfig{MaxCalls: -1}}.Validate()
	if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
		t.Errorf("got %d problems, want 3:\n%v", n, err)
	}
}

func TestConfigKeyInKeyEnvIsNotEchoed(t *testing.T) {
	key := "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	err := Config{Models: []ModelConfig{{Spec: "openai/gpt-5", APIKeyEnv: key}}}.Validate()
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "not hold the key") {
		t.Errorf("error %v", err)
	}
}

func TestConfigModelLookup(t *testing.T) {
	c := Config{Models: []ModelConfig{
		{Name: "a", Spec: "openai/gpt-5"},
		{Spec: "ollama/llama3", BaseURL: "http://gpu:11434/v1"},
	}}
	if m, err := c.Model("a"); err != nil || m.Spec.BaseURL != "https://api.openai.com/v1" || !m.Default {
		t.Errorf("by name: %+v %v", m, err)
	}
	if m, err := c.Model("ollama/llama3"); err != nil || m.Spec.BaseURL != "http://gpu:11434/v1" || m.Default {
		t.Errorf("by spec, base_url override: %+v %v", m, err)
	}
	if m, err := c.Model("gemini/gemini-2.5-pro"); err != nil || m.Name != "gemini/gemini-2.5-pro" || m.Spec.BaseURL == "" {
		t.Errorf("unconfigured spec: %+v %v", m, err)
	}
	if _, err := c.Model("b"); err == nil || !strings.Contains(err.Error(), "configured: a, ollama/llama3") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := (Config{}).Model(""); err == nil || !strings.Contains(err.Error(), "no model configured") {
		t.Errorf("no models: %v", err)
	}
	if _, err := (Config{}).Model("openai-compatible/x"); err == nil || !strings.Contains(err.Error(), "no default URL") {
		t.Errorf("compatible without url: %v", err)
	}
	list, err := c.ModelList()
	if err != nil || len(list) != 2 {
		t.Errorf("list %v %v", list, err)
	}
}

func TestAPIKey(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": " sk-from-env-1234567890 ", "GOOGLE_API_KEY": "AIza-google"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	model := func(mc ModelConfig) Model {
		m, err := Config{Models: []ModelConfig{mc}}.Model(mc.Spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if k, err := model(ModelConfig{Spec: "openai/gpt-5"}).APIKey(lookup); k != "sk-from-env-1234567890" || err != nil {
		t.Errorf("env key %q %v", k, err)
	}
	if k, err := model(ModelConfig{Spec: "gemini/gemini-2.5-pro"}).APIKey(lookup); k != "AIza-google" || err != nil {
		t.Errorf("gemini falls back to GOOGLE_API_KEY: %q %v", k, err)
	}
	_, err := model(ModelConfig{Spec: "anthropic/claude-sonnet-4-5"}).APIKey(lookup)
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrAuth || !strings.Contains(err.Error(), "export ANTHROPIC_API_KEY=") {
		t.Errorf("missing key: %v", err)
	}
	if k, err := model(ModelConfig{Spec: "ollama/llama3"}).APIKey(lookup); k != "" || err != nil {
		t.Errorf("ollama needs no key: %q %v", k, err)
	}
	if _, err := model(ModelConfig{Spec: "ollama/llama3", APIKeyEnv: "OLLAMA_KEY"}).APIKey(lookup); !errors.Is(err, ErrAuth) {
		t.Errorf("a named variable that is unset must fail: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("sk-ant-file-key-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := model(ModelConfig{Spec: "anthropic/claude-sonnet-4-5", APIKeyFile: file})
	if k, err := m.APIKey(lookup); k != "sk-ant-file-key-0123456789" || err != nil {
		t.Errorf("file key %q %v", k, err)
	}
	if m.KeySource() != "file "+file {
		t.Errorf("key source %q", m.KeySource())
	}
	if _, err := model(ModelConfig{Spec: "anthropic/x", APIKeyFile: file + ".missing"}).APIKey(lookup); !errors.Is(err, ErrAuth) {
		t.Errorf("missing file: %v", err)
	}
	// A device named by mistake is refused, not read without end.
	if _, err := model(ModelConfig{Spec: "anthropic/x", APIKeyFile: "/dev/zero"}).APIKey(lookup); !errors.Is(err, ErrAuth) ||
		!strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
}

func TestConfigRedactorKnowsKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("plainpassword99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "not-shaped-like-a-key", "MY_VLLM_KEY": "vllm-shared-secret"}
	c := Config{Models: []ModelConfig{
		{Spec: "openai-compatible/x@http://h/v1", APIKeyEnv: "MY_VLLM_KEY"},
		{Spec: "anthropic/y", APIKeyFile: file},
	}}
	r := c.Redactor(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	got := r.Redact("a not-shaped-like-a-key b vllm-shared-secret c plainpassword99 d")
	if want := "a [REDACTED] b [REDACTED] c [REDACTED] d"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestModelApplyDefaults(t *testing.T) {
	temp := 0.3
	m := Model{Config: ModelConfig{Temperature: &temp, MaxOutputTokens: 500, ReasoningEffort: "high"}}
	req := m.Apply(Request{})
	if *req.Temperature != 0.3 || req.MaxOutputTokens != 500 || req.ReasoningEffort != "high" {
		t.Errorf("defaults not applied: %+v", req)
	}
	own := 1.0
	req = m.Apply(Request{Temperature: &own, MaxOutputTokens: 7, ReasoningEffort: "low"})
	if *req.Temperature != 1 || req.MaxOutputTokens != 7 || req.ReasoningEffort != "low" {
		t.Errorf("request values overridden: %+v", req)
	}
}

func TestChoose(t *testing.T) {
	c := Config{Models: []ModelConfig{{Name: "a", Weight: 3}, {Name: "b"}, {Name: "c", Weight: 0.5}, {Name: "d", Weight: 0.5}}}
	// Weights 3, 1, 0.5, 0.5 over a total of 5.
	cases := map[float64]string{0: "a", 0.59: "a", 0.6: "b", 0.79: "b", 0.8: "c", 0.89: "c", 0.9: "d", 0.999: "d", 1: "d", -1: "a"}
	for u, want := range cases {
		if got := c.Choose(u); got != want {
			t.Errorf("Choose(%g) = %q, want %q", u, got, want)
		}
	}
	if (Config{}).Choose(0.5) != "" {
		t.Error("no models")
	}
}
