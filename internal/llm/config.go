package llm

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bounded"
	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// Config is the llm section of frontier.yaml:
//
//	llm:
//	  models:
//	    - name: gpt5
//	      spec: openai/gpt-5
//	      reasoning_effort: medium
//	    - name: local
//	      spec: openai-compatible/qwen2.5-coder@http://127.0.0.1:8000/v1
//	  budget:
//	    max_usd: 20
//
// The zero value is valid: no models, default retries, no budget.
type Config struct {
	// Models are the models commands and the search may use, by name.
	Models []ModelConfig `yaml:"models"`
	// Default is the name of the model used when none is named; empty means
	// the first of Models.
	Default string `yaml:"default"`
	// Providers holds limits shared by all models of one provider, keyed by
	// provider name (openai, anthropic, gemini, openrouter, ollama,
	// openai-compatible).
	Providers map[string]Limits `yaml:"providers"`
	// Prices add to or override the shipped price table. Keys are
	// "provider/model" (e.g. "openai/gpt-5") or "provider/*" for every model
	// of a provider.
	Prices map[string]Price `yaml:"prices"`
	// Retry controls how failed calls are retried.
	Retry RetryConfig `yaml:"retry"`
	// Budget caps what one run may spend.
	Budget BudgetConfig `yaml:"budget"`
}

// ModelConfig is one configured model.
type ModelConfig struct {
	// Name is how commands and the search refer to the model; it defaults
	// to the spec.
	Name string `yaml:"name"`
	// Spec says which provider and model: "openai/gpt-5",
	// "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-pro",
	// "ollama/qwen2.5-coder:32b", "openai-compatible/NAME@http://host:8000/v1".
	Spec string `yaml:"spec"`
	// BaseURL overrides the provider's endpoint (and any "@URL" in Spec).
	// For OpenAI-compatible servers it ends in "/v1".
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable that holds the API key. It
	// defaults to the provider's usual one (OPENAI_API_KEY, ...).
	APIKeyEnv string `yaml:"api_key_env"`
	// APIKeyFile is a file whose content is the API key, as an alternative
	// to APIKeyEnv. Keys never appear in the config itself.
	APIKeyFile string `yaml:"api_key_file"`
	// Weight is the model's share of requests when the search samples from
	// several models; 0 means 1.
	Weight float64 `yaml:"weight"`
	// MaxConcurrency caps this model's requests in flight; 0 means no cap.
	MaxConcurrency int `yaml:"max_concurrency"`
	// RequestsPerMinute caps this model's request rate; 0 means no cap.
	RequestsPerMinute float64 `yaml:"requests_per_minute"`
	// Timeout bounds each HTTP request to the model; 0 means 10 minutes.
	Timeout Duration `yaml:"timeout"`
	// Temperature is used when a request sets none. It is not sent to
	// reasoning models (see IsReasoningModel).
	Temperature *float64 `yaml:"temperature"`
	// MaxOutputTokens is used when a request sets none; 0 means the
	// provider's default (Anthropic, which requires one: 16384).
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// ReasoningEffort is used when a request sets none: none, minimal, low,
	// medium, high, xhigh or max (what a model accepts varies).
	ReasoningEffort string `yaml:"reasoning_effort"`
	// Reasoning overrides the rule that decides whether the model is a
	// reasoning model (no temperature, max_completion_tokens, effort).
	Reasoning *bool `yaml:"reasoning"`
	// Stream receives the answer as a stream of events. It defaults to
	// true for Anthropic (long answers need it) and false elsewhere.
	Stream *bool `yaml:"stream"`
}

// Limits caps the load sent to a model or provider.
type Limits struct {
	// MaxConcurrency caps requests in flight; 0 means no cap.
	MaxConcurrency int `yaml:"max_concurrency"`
	// RequestsPerMinute caps the request rate; 0 means no cap.
	RequestsPerMinute float64 `yaml:"requests_per_minute"`
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l.MaxConcurrency == 0 && l.RequestsPerMinute == 0 }

// Price is what a model costs, in USD per million tokens.
type Price struct {
	// Input is the price of prompt tokens.
	Input float64 `yaml:"input" json:"input"`
	// Output is the price of generated tokens, reasoning included.
	Output float64 `yaml:"output" json:"output"`
	// CachedInput is the price of prompt tokens read from a cache; unset
	// means the input price.
	CachedInput *float64 `yaml:"cached_input" json:"cached_input,omitempty"`
	// CacheWrite is the price of prompt tokens written to a cache; unset
	// means the input price.
	CacheWrite *float64 `yaml:"cache_write" json:"cache_write,omitempty"`
	// Tiers are dearer prices for long prompts.
	Tiers []PriceTier `yaml:"tiers" json:"tiers,omitempty"`
}

// PriceTier replaces a Price's figures for prompts longer than
// AboveInputTokens.
type PriceTier struct {
	// AboveInputTokens is the prompt length above which the tier applies.
	AboveInputTokens int64 `yaml:"above_input_tokens" json:"above_input_tokens"`
	// Input, Output, CachedInput and CacheWrite are as in Price.
	Input       float64  `yaml:"input" json:"input"`
	Output      float64  `yaml:"output" json:"output"`
	CachedInput *float64 `yaml:"cached_input" json:"cached_input,omitempty"`
	CacheWrite  *float64 `yaml:"cache_write" json:"cache_write,omitempty"`
}

// RetryConfig controls retries of failed calls. Rate limits (429), server
// errors (5xx), timeouts and network errors are retried with exponential
// backoff and jitter; a Retry-After from the server is honoured.
type RetryConfig struct {
	// MaxAttempts counts every request of a call, the first included;
	// 0 means 5, and 1 turns retries off.
	MaxAttempts int `yaml:"max_attempts"`
	// InitialBackoff is the wait before the first retry; 0 means 1s.
	InitialBackoff Duration `yaml:"initial_backoff"`
	// MaxBackoff caps the wait between attempts; 0 means 60s.
	MaxBackoff Duration `yaml:"max_backoff"`
	// MaxRetryAfter is the longest Retry-After that is waited out; a server
	// that asks for longer fails the call at once. 0 means 5m.
	MaxRetryAfter Duration `yaml:"max_retry_after"`
}

// Retry defaults.
const (
	DefaultMaxAttempts    = 5
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 60 * time.Second
	DefaultMaxRetryAfter  = 5 * time.Minute
	DefaultTimeout        = 10 * time.Minute
)

// WithDefaults fills unset fields with the defaults.
func (r RetryConfig) WithDefaults() RetryConfig {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = Duration(DefaultInitialBackoff)
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = Duration(DefaultMaxBackoff)
	}
	if r.MaxRetryAfter == 0 {
		r.MaxRetryAfter = Duration(DefaultMaxRetryAfter)
	}
	return r
}

// BudgetConfig caps what one run spends on models. Zero means no cap.
type BudgetConfig struct {
	// MaxUSD caps the cost in US dollars, computed from the price table.
	MaxUSD float64 `yaml:"max_usd"`
	// MaxTokens caps input plus output tokens over all calls.
	MaxTokens int64 `yaml:"max_tokens"`
	// MaxCalls caps the number of calls (a retried call counts once).
	MaxCalls int64 `yaml:"max_calls"`
}

// IsZero reports whether no budget is set.
func (b BudgetConfig) IsZero() bool { return b.MaxUSD == 0 && b.MaxTokens == 0 && b.MaxCalls == 0 }

// Limited returns b with a search's own dollar and token limits in place
// of its own where they are set (positive): a run's budget takes
// precedence over llm.budget.
func (b BudgetConfig) Limited(maxUSD float64, maxTokens int64) BudgetConfig {
	if maxUSD > 0 {
		b.MaxUSD = maxUSD
	}
	if maxTokens > 0 {
		b.MaxTokens = maxTokens
	}
	return b
}

// Duration is a time.Duration written in YAML as "90s" or "5m".
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := yamlfile.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Reasoning efforts a config may name. Which of them a model accepts varies
// by provider and model; the value is passed on as written (see the
// adapters for the mapping to Anthropic and Gemini).
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the section and returns every problem found, each naming
// the key it is about.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := map[string]int{}
	for i, m := range c.Models {
		where := fmt.Sprintf("llm.models[%d]", i)
		if m.Name != "" {
			where += fmt.Sprintf(" (%s)", m.Name)
		}
		if m.Spec == "" {
			bad("%s: spec is missing: write the provider and model, like spec: openai/gpt-5", where)
			continue
		}
		sp, err := ParseSpec(m.Spec)
		if err != nil {
			bad("%s: %v", where, err)
			continue
		}
		name := m.displayName()
		if strings.ContainsAny(name, " \t\r\n") {
			bad("%s: name %q contains white space", where, name)
		}
		if j, dup := names[name]; dup {
			bad("%s: name %q is also used by llm.models[%d]; give each model its own name", where, name, j)
		}
		names[name] = i
		if m.BaseURL != "" {
			if err := checkBaseURL(m.BaseURL); err != nil {
				bad("%s: base_url: %v", where, err)
			}
		}
		if sp.Provider == "openai-compatible" && m.BaseURL == "" && sp.BaseURL == "" {
			bad("%s: an openai-compatible model needs the server's URL: write spec: openai-compatible/%s@http://HOST:PORT/v1 or set base_url", where, sp.Model)
		}
		if m.APIKeyEnv != "" && m.APIKeyFile != "" {
			bad("%s: set api_key_env or api_key_file, not both", where)
		}
		if m.APIKeyEnv != "" && !envVarName.MatchString(m.APIKeyEnv) {
			if Redact(m.APIKeyEnv) != m.APIKeyEnv || len(m.APIKeyEnv) >= 32 {
				// Do not echo it: it is probably the key itself.
				bad("%s: api_key_env must name an environment variable (like OPENAI_API_KEY), not hold the key; put the key in the environment and remove it from the file", where)
			} else {
				bad("%s: api_key_env %q is not an environment variable name (letters, digits and _)", where, m.APIKeyEnv)
			}
		}
		if m.Weight < 0 {
			bad("%s: weight %g is negative", where, m.Weight)
		}
		if m.MaxConcurrency < 0 {
			bad("%s: max_concurrency %d is negative; use 0 for no cap", where, m.MaxConcurrency)
		}
		if m.RequestsPerMinute < 0 {
			bad("%s: requests_per_minute %g is negative; use 0 for no cap", where, m.RequestsPerMinute)
		}
		if m.Timeout < 0 {
			bad("%s: timeout %s is negative", where, m.Timeout.D())
		}
		if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
			bad("%s: temperature %g is outside 0..2", where, *m.Temperature)
		}
		if m.MaxOutputTokens < 0 {
			bad("%s: max_output_tokens %d is negative", where, m.MaxOutputTokens)
		}
		if m.ReasoningEffort != "" && !slices.Contains(reasoningEfforts, m.ReasoningEffort) {
			bad("%s: reasoning_effort %q: use one of %s", where, m.ReasoningEffort, strings.Join(reasoningEfforts, ", "))
		}
	}
	if c.Default != "" {
		if _, ok := names[c.Default]; !ok {
			bad("llm.default: no model is named %q (names: %s)", c.Default, strings.Join(c.ModelNames(), ", "))
		}
	}
	for _, name := range sortedKeys(c.Providers) {
		l := c.Providers[name]
		if _, ok := LookupProvider(name); !ok {
			bad("llm.providers.%s: unknown provider (providers: %s)", name, providerNames())
		}
		if l.MaxConcurrency < 0 || l.RequestsPerMinute < 0 {
			bad("llm.providers.%s: limits must not be negative; use 0 for no cap", name)
		}
	}
	for _, key := range sortedKeys(c.Prices) {
		if err := checkPriceKey(key); err != nil {
			bad("llm.prices[%q]: %v", key, err)
		}
		if err := c.Prices[key].check(); err != nil {
			bad("llm.prices[%q]: %v", key, err)
		}
	}
	r := c.Retry
	if r.MaxAttempts < 0 || r.MaxAttempts > 100 {
		bad("llm.retry.max_attempts %d: use 1 (no retries) to 100, or 0 for the default %d", r.MaxAttempts, DefaultMaxAttempts)
	}
	if r.InitialBackoff < 0 || r.MaxBackoff < 0 || r.MaxRetryAfter < 0 {
		bad("llm.retry: durations must not be negative")
	}
	if r.InitialBackoff > 0 && r.MaxBackoff > 0 && r.InitialBackoff > r.MaxBackoff {
		bad("llm.retry: initial_backoff %s is longer than max_backoff %s", r.InitialBackoff.D(), r.MaxBackoff.D())
	}
	b := c.Budget
	if b.MaxUSD < 0 || b.MaxTokens < 0 || b.MaxCalls < 0 {
		bad("llm.budget: limits must not be negative; use 0 for no cap")
	}
	return errors.Join(errs...)
}

func (p Price) check() error {
	if p.Input < 0 || p.Output < 0 || neg(p.CachedInput) || neg(p.CacheWrite) {
		return errors.New("prices must not be negative")
	}
	last := int64(0)
	for i, t := range p.Tiers {
		if t.AboveInputTokens <= last {
			return fmt.Errorf("tiers[%d]: above_input_tokens must be positive and increase from tier to tier", i)
		}
		last = t.AboveInputTokens
		if t.Input < 0 || t.Output < 0 || neg(t.CachedInput) || neg(t.CacheWrite) {
			return fmt.Errorf("tiers[%d]: prices must not be negative", i)
		}
	}
	return nil
}

func neg(p *float64) bool { return p != nil && *p < 0 }

func checkPriceKey(key string) error {
	prov, model, ok := strings.Cut(key, "/")
	if !ok || model == "" {
		return errors.New(`write the key as "provider/model" or "provider/*"`)
	}
	if _, ok := LookupProvider(prov); !ok {
		return fmt.Errorf("unknown provider %q (providers: %s)", prov, providerNames())
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (m ModelConfig) displayName() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Spec
}

// ModelNames lists the configured models' names in config order.
func (c Config) ModelNames() []string {
	var out []string
	for _, m := range c.Models {
		out = append(out, m.displayName())
	}
	return out
}

// Model is a configured model with its spec resolved: the provider, the
// model id and the endpoint that requests go to.
type Model struct {
	Name    string      // the configured name, or the spec
	Spec    Spec        // parsed; Spec.BaseURL is the effective endpoint
	Config  ModelConfig // as configured (zero but for Spec when not configured)
	Default bool        // the config's default model
}

// Model finds a model by its configured name or spec. A spec that is not
// configured is accepted too and gets default settings, so that
// "frontier llm ping openai-compatible/m@http://127.0.0.1:8000/v1" works
// without a config file. An empty name means the default model.
func (c Config) Model(nameOrSpec string) (Model, error) {
	if nameOrSpec == "" {
		nameOrSpec = c.Default
		if nameOrSpec == "" {
			if len(c.Models) == 0 {
				return Model{}, errors.New("no model configured: add one under llm.models in frontier.yaml, or name a spec like openai/gpt-5")
			}
			nameOrSpec = c.Models[0].displayName()
		}
	}
	idx := slices.IndexFunc(c.Models, func(m ModelConfig) bool { return m.displayName() == nameOrSpec })
	if idx < 0 {
		idx = slices.IndexFunc(c.Models, func(m ModelConfig) bool { return m.Spec == nameOrSpec })
	}
	var mc ModelConfig
	if idx >= 0 {
		mc = c.Models[idx]
	} else {
		if !strings.Contains(nameOrSpec, "/") {
			names := c.ModelNames()
			if len(names) == 0 {
				return Model{}, fmt.Errorf("no model is named %q and none is configured: name a spec like openai/gpt-5, or add the model under llm.models in frontier.yaml", nameOrSpec)
			}
			return Model{}, fmt.Errorf("no model is named %q (configured: %s); or name a spec like openai/gpt-5", nameOrSpec, strings.Join(names, ", "))
		}
		mc = ModelConfig{Spec: nameOrSpec}
	}
	sp, err := ParseSpec(mc.Spec)
	if err != nil {
		return Model{}, err
	}
	if mc.BaseURL != "" {
		if err := checkBaseURL(mc.BaseURL); err != nil {
			return Model{}, fmt.Errorf("model %s: base_url: %w", mc.displayName(), err)
		}
		sp.BaseURL = mc.BaseURL
	}
	if sp.BaseURL == "" {
		p, _ := LookupProvider(sp.Provider)
		sp.BaseURL = p.BaseURL
	}
	if sp.BaseURL == "" {
		return Model{}, fmt.Errorf("model %s: the %s provider has no default URL: write %s/%s@http://HOST:PORT/v1 or set base_url", mc.displayName(), sp.Provider, sp.Provider, sp.Model)
	}
	m := Model{Config: mc, Spec: sp, Name: mc.displayName()}
	def := c.Default
	if def == "" && len(c.Models) > 0 {
		def = c.Models[0].displayName()
	}
	m.Default = idx >= 0 && m.Name == def
	return m, nil
}

// ModelList resolves every configured model.
func (c Config) ModelList() ([]Model, error) {
	var out []Model
	for _, mc := range c.Models {
		m, err := c.Model(mc.displayName())
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Reasoning reports whether the model is treated as a reasoning model: the
// config's "reasoning" if set, else IsReasoningModel.
func (m Model) Reasoning() bool {
	if m.Config.Reasoning != nil {
		return *m.Config.Reasoning
	}
	return IsReasoningModel(m.Spec.Provider, m.Spec.Model)
}

// Streaming reports whether answers are received as a stream.
func (m Model) Streaming() bool {
	if m.Config.Stream != nil {
		return *m.Config.Stream
	}
	return m.Spec.Protocol() == ProtocolAnthropic
}

// CallTimeout is the per-request timeout.
func (m Model) CallTimeout() time.Duration {
	if m.Config.Timeout > 0 {
		return m.Config.Timeout.D()
	}
	return DefaultTimeout
}

// KeyEnvs lists the environment variables the key is read from, in order.
func (m Model) KeyEnvs() []string {
	if m.Config.APIKeyEnv != "" {
		return []string{m.Config.APIKeyEnv}
	}
	if m.Config.APIKeyFile != "" {
		return nil
	}
	p, _ := LookupProvider(m.Spec.Provider)
	return p.KeyEnvs
}

// KeySource says where the key comes from, for display: "$OPENAI_API_KEY",
// "file /path", or "" when the model needs none.
func (m Model) KeySource() string {
	if m.Config.APIKeyFile != "" {
		return "file " + m.Config.APIKeyFile
	}
	var out []string
	for _, e := range m.KeyEnvs() {
		out = append(out, "$"+e)
	}
	return strings.Join(out, " or ")
}

// LookupEnv reads an environment variable; os.LookupEnv is one.
type LookupEnv func(string) (string, bool)

// maxKeyFile bounds an api_key_file: a key is a line, and a named pipe or
// a device named by mistake must not be waited on or read without end.
const maxKeyFile = 64 << 10

// APIKey reads the model's API key from the environment or the key file.
// It returns "" without error for local servers that need no key. A
// missing required key is an *Error of kind ErrAuth that says what to set.
// The key is never logged or stored.
func (m Model) APIKey(lookup LookupEnv) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	p, _ := LookupProvider(m.Spec.Provider)
	if file := m.Config.APIKeyFile; file != "" {
		b, err := bounded.ReadFile(file, maxKeyFile)
		if err != nil {
			return "", &Error{Kind: ErrAuth, Provider: m.Spec.Provider, Model: m.Name,
				Message: fmt.Sprintf("read api_key_file: %v", err),
				Hint:    "check the path in llm.models[].api_key_file"}
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", &Error{Kind: ErrAuth, Provider: m.Spec.Provider, Model: m.Name,
				Message: fmt.Sprintf("api_key_file %s is empty", file),
				Hint:    "write the key into that file"}
		}
		return key, nil
	}
	for _, env := range m.KeyEnvs() {
		if v, ok := lookup(env); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	// A local server needs no key unless the config asks for one.
	if !p.KeyRequired && m.Config.APIKeyEnv == "" {
		return "", nil
	}
	envs := m.KeyEnvs()
	return "", &Error{Kind: ErrAuth, Provider: m.Spec.Provider, Model: m.Name,
		Message: fmt.Sprintf("no API key: $%s is not set", strings.Join(envs, " and $")),
		Hint:    fmt.Sprintf("export %s=... in the shell that runs frontier, or set api_key_file for this model", envs[0])}
}

// Redactor returns a Redactor that also removes the values of every key
// the config can read (the models' key variables and files, and the usual
// provider variables), so they never reach stored text.
func (c Config) Redactor(lookup LookupEnv) *Redactor {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var secrets []string
	envs := map[string]bool{"HF_TOKEN": true, "HUGGING_FACE_HUB_TOKEN": true}
	for _, p := range Providers() {
		for _, e := range p.KeyEnvs {
			envs[e] = true
		}
	}
	for _, mc := range c.Models {
		if mc.APIKeyEnv != "" {
			envs[mc.APIKeyEnv] = true
		}
		if mc.APIKeyFile != "" {
			if b, err := bounded.ReadFile(mc.APIKeyFile, maxKeyFile); err == nil {
				secrets = append(secrets, strings.TrimSpace(string(b)))
			}
		}
	}
	for _, e := range sortedKeys(envs) {
		if v, ok := lookup(e); ok {
			secrets = append(secrets, v)
		}
	}
	return NewRedactor(secrets...)
}

// Choose picks a configured model's name in proportion to the models'
// weights (a weight of 0 counts as 1), given u in [0, 1), such as
// rand.Float64(). It returns "" when no model is configured.
func (c Config) Choose(u float64) string {
	total := 0.0
	for _, m := range c.Models {
		total += weight(m)
	}
	if total == 0 {
		return ""
	}
	x := min(max(u, 0), 1) * total
	for _, m := range c.Models {
		if x < weight(m) {
			return m.displayName()
		}
		x -= weight(m)
	}
	return c.Models[len(c.Models)-1].displayName()
}

func weight(m ModelConfig) float64 {
	if m.Weight > 0 {
		return m.Weight
	}
	return 1
}
