package llm

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	good := []struct {
		in   string
		want Spec
	}{
		{"openai/gpt-5", Spec{Provider: "openai", Model: "gpt-5"}},
		{"anthropic/claude-sonnet-4-5", Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{"gemini/gemini-2.5-pro", Spec{Provider: "gemini", Model: "gemini-2.5-pro"}},
		{"ollama/qwen2.5-coder:32b", Spec{Provider: "ollama", Model: "qwen2.5-coder:32b"}},
		{"openai-compatible/NAME@http://host:8000/v1", Spec{Provider: "openai-compatible", Model: "NAME", BaseURL: "http://host:8000/v1"}},
		{"openrouter/openai/gpt-5", Spec{Provider: "openrouter", Model: "openai/gpt-5"}},
		{"openai-compatible/claude@2024@https://proxy.example/v1", Spec{Provider: "openai-compatible", Model: "claude@2024", BaseURL: "https://proxy.example/v1"}},
		{"ollama/llama3@http://gpu-box:11434/v1", Spec{Provider: "ollama", Model: "llama3", BaseURL: "http://gpu-box:11434/v1"}},
	}
	for _, c := range good {
		got, err := ParseSpec(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.in {
			t.Errorf("%q round-trips to %q", c.in, got.String())
		}
	}
	bad := []struct{ in, want string }{
		{"", "empty model spec"},
		{"gpt-5", "write PROVIDER/MODEL"},
		{"foo/bar", `unknown provider "foo"`},
		{"openai/", "write PROVIDER/MODEL"},
		{"/gpt-5", "write PROVIDER/MODEL"},
		{"openai/gpt 5", "white space"},
		{"openai-compatible/m@http://", "has no host"},
		{"openai-compatible/m@http://bob:hunter2@host/v1", "holds credentials"},
	}
	for _, c := range bad {
		_, err := ParseSpec(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) error %v, want it to say %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error repeats a password: %v", err)
		}
	}
}

func TestIsReasoningModel(t *testing.T) {
	cases := []struct {
		provider, model string
		want            bool
	}{
		{"openai", "gpt-5", true},
		{"openai", "gpt-5-mini", true},
		{"openai", "gpt-5.1-codex", true},
		{"openai", "gpt-6-sol", true},
		{"openai", "gpt-10", true},
		{"openai", "o1", true},
		{"openai", "o3-mini", true},
		{"openai", "o4-mini-2025-04-16", true},
		{"openai", "gpt-5-chat-latest", false},
		{"openai", "gpt-4.1", false},
		{"openai", "gpt-4o", false},
		{"openai", "omni-moderation", false},
		{"openrouter", "openai/gpt-5", true},
		{"openrouter", "meta-llama/llama-3.3-70b", false},
		{"ollama", "qwen2.5-coder:32b", false},
		{"openai-compatible", "Qwen/Qwen3-Coder-30B", false},
		{"anthropic", "claude-sonnet-4-5", true},
		{"gemini", "gemini-2.5-pro", false},
		{"gemini", "gemini-3-pro-preview", true},
		{"gemini", "gemini-3.5-flash", true},
		{"nope", "gpt-5", false},
	}
	for _, c := range cases {
		if got := IsReasoningModel(c.provider, c.model); got != c.want {
			t.Errorf("IsReasoningModel(%q, %q) = %v", c.provider, c.model, got)
		}
	}
}
