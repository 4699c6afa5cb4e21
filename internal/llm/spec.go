package llm

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Wire protocols. Every provider speaks one of them.
const (
	ProtocolOpenAI    = "openai"    // OpenAI chat completions
	ProtocolAnthropic = "anthropic" // Anthropic Messages
	ProtocolGemini    = "gemini"    // Google Gemini generateContent
)

// Provider describes one provider name that may start a model spec.
type Provider struct {
	Name     string // as written in a spec: "openai", "ollama", ...
	Protocol string // ProtocolOpenAI, ProtocolAnthropic or ProtocolGemini
	// BaseURL is the default endpoint; empty means the spec or the config
	// must give one.
	BaseURL string
	// KeyEnvs are the environment variables read for the API key, in order,
	// when the model's config names none.
	KeyEnvs []string
	// KeyRequired is false for local servers that take requests without a key.
	KeyRequired bool
}

// Providers lists the provider names a model spec may start with.
func Providers() []Provider {
	return []Provider{
		{Name: "openai", Protocol: ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", KeyEnvs: []string{"OPENAI_API_KEY"}, KeyRequired: true},
		{Name: "anthropic", Protocol: ProtocolAnthropic, BaseURL: "https://api.anthropic.com", KeyEnvs: []string{"ANTHROPIC_API_KEY"}, KeyRequired: true},
		{Name: "gemini", Protocol: ProtocolGemini, BaseURL: "https://generativelanguage.googleapis.com", KeyEnvs: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, KeyRequired: true},
		{Name: "openrouter", Protocol: ProtocolOpenAI, BaseURL: "https://openrouter.ai/api/v1", KeyEnvs: []string{"OPENROUTER_API_KEY"}, KeyRequired: true},
		{Name: "ollama", Protocol: ProtocolOpenAI, BaseURL: "http://localhost:11434/v1"},
		{Name: "openai-compatible", Protocol: ProtocolOpenAI},
	}
}

// LookupProvider returns the provider called name.
func LookupProvider(name string) (Provider, bool) {
	for _, p := range Providers() {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

func providerNames() string {
	var names []string
	for _, p := range Providers() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// Spec names a model: "PROVIDER/MODEL", optionally followed by
// "@BASE_URL" to send the requests to a server of one's own, as in
// "openai-compatible/qwen2.5-coder@http://127.0.0.1:8000/v1".
type Spec struct {
	Provider string // a name from Providers
	Model    string // the model id the server knows, e.g. "gpt-5" or "qwen2.5-coder:32b"
	BaseURL  string // from "@BASE_URL"; empty when the spec has none
}

// ParseSpec parses a model spec.
func ParseSpec(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("empty model spec: write PROVIDER/MODEL, like openai/gpt-5 (providers: %s)", providerNames())
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return Spec{}, fmt.Errorf("model spec %q contains white space", s)
	}
	var sp Spec
	rest := s
	// The base URL starts at the last "@http://" or "@https://", so a model
	// id may itself contain "@" (Vertex-style "model@version").
	if i := max(strings.LastIndex(rest, "@http://"), strings.LastIndex(rest, "@https://")); i >= 0 {
		sp.BaseURL = rest[i+1:]
		rest = rest[:i]
		if err := checkBaseURL(sp.BaseURL); err != nil {
			// The error shows the URL, redacted; the spec is not repeated
			// whole since it may hold a password.
			return Spec{}, fmt.Errorf("model spec %q: %w", rest+"@…", err)
		}
	}
	prov, model, ok := strings.Cut(rest, "/")
	if !ok || prov == "" || model == "" {
		return Spec{}, fmt.Errorf("model spec %q: write PROVIDER/MODEL, like openai/gpt-5 or openai-compatible/NAME@http://host:8000/v1 (providers: %s)", s, providerNames())
	}
	if _, ok := LookupProvider(prov); !ok {
		return Spec{}, fmt.Errorf("model spec %q: unknown provider %q (providers: %s)", s, prov, providerNames())
	}
	sp.Provider, sp.Model = prov, model
	return sp, nil
}

// String writes the spec back in the form ParseSpec reads.
func (s Spec) String() string {
	out := s.Provider + "/" + s.Model
	if s.BaseURL != "" {
		out += "@" + s.BaseURL
	}
	return out
}

// Protocol is the wire protocol of the spec's provider.
func (s Spec) Protocol() string {
	p, _ := LookupProvider(s.Provider)
	return p.Protocol
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("base URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("base URL %q: use an http:// or https:// URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("base URL %q has no host", raw)
	}
	if u.User != nil {
		return fmt.Errorf("base URL %q holds credentials: put the key in an environment variable and name it in api_key_env", u.Redacted())
	}
	return nil
}

// openAIReasoning matches OpenAI's reasoning families: o1, o3, o4-mini, ...
// and gpt-5 onwards. Their chat variants (gpt-5-chat-latest) are not
// reasoning models.
var openAIReasoning = regexp.MustCompile(`^(o[1-9][0-9]*|gpt-([5-9]|[1-9][0-9]+))([.-]|$)`)

// IsReasoningModel reports whether a model is a reasoning model by its
// provider and id, the rule that decides which sampling parameters are sent:
//
//   - OpenAI protocol (openai, openrouter, ollama, openai-compatible): ids of
//     the o-series (o1, o3, o4-mini, ...) and of gpt-5 and later (gpt-5,
//     gpt-5.1-codex, gpt-6-sol, ...), except chat variants whose id contains
//     "-chat". An organization prefix ("openai/gpt-5" on OpenRouter) is
//     ignored. They get max_completion_tokens and reasoning_effort, and never
//     temperature or stop (stop sequences are applied to the text instead).
//   - Anthropic: every model. API version 2026-10-21 rejects temperature,
//     top_p and top_k for all of them; effort goes in output_config.
//   - Gemini: gemini-3 and later, which think by default and for which Google
//     advises against changing the temperature.
//
// A model's config may override the rule with "reasoning: true|false".
func IsReasoningModel(provider, model string) bool {
	p, ok := LookupProvider(provider)
	if !ok {
		return false
	}
	id := strings.ToLower(model)
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	switch p.Protocol {
	case ProtocolAnthropic:
		return true
	case ProtocolGemini:
		return geminiGeneration(id) >= 3
	default:
		return openAIReasoning.MatchString(id) && !strings.Contains(id, "-chat")
	}
}

var geminiVersion = regexp.MustCompile(`^gemini-([0-9]+)`)

// geminiGeneration returns the major version in a Gemini model id
// ("gemini-2.5-pro" is 2), or 0 when the id has none.
func geminiGeneration(id string) int {
	m := geminiVersion.FindStringSubmatch(id)
	if m == nil {
		return 0
	}
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

// GeminiGeneration returns the major version in a Gemini model id, 0 when
// the id does not start with "gemini-N".
func GeminiGeneration(model string) int { return geminiGeneration(strings.ToLower(model)) }
