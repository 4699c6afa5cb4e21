package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
)

func newLLMCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "llm",
		Short: "Check and list the configured language models",
		Long: `Language models are configured under llm: in frontier.yaml (see docs/llm.md).
A model is named by its configured name or by a spec:

  openai/gpt-5                      anthropic/claude-sonnet-4-5
  gemini/gemini-2.5-pro             ollama/qwen2.5-coder:32b
  openrouter/openai/gpt-5           openai-compatible/NAME@http://127.0.0.1:8000/v1

Keys come from environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY,
GEMINI_API_KEY, OPENROUTER_API_KEY) or a key file named in the config.`,
	}
	po := llmPingOptions{lookupEnv: os.LookupEnv}
	ping := &cobra.Command{
		Use:   "ping MODEL",
		Short: "Send a tiny request to a model; print latency, tokens, cost and request id",
		Example: `  frontier llm ping gpt5
  frontier llm ping openai-compatible/qwen2.5-coder@http://127.0.0.1:8000/v1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runLLMPing(cmd.Context(), g.stdout, g.log, cfg.LLM, args[0], po)
		},
	}
	pf := ping.Flags()
	pf.StringVar(&po.prompt, "prompt", "Reply with the single word: pong", "the message to send")
	pf.IntVar(&po.maxTokens, "max-tokens", 1024, "output token limit (reasoning models think within it)")
	pf.DurationVar(&po.timeout, "timeout", 2*time.Minute, "give up after this long (a positive duration, like 30s)")
	pf.IntVar(&po.attempts, "attempts", 1, "attempts, retries included (1 to 100; the config's retry settings apply between them)")
	pf.BoolVar(&po.json, "json", false, "print the response as JSON")
	cmd.AddCommand(ping)

	var asJSON bool
	models := &cobra.Command{
		Use:   "models",
		Short: "List the configured models: provider, endpoint, key variable and whether it is set, prices",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runLLMModels(g.stdout, cfg.LLM, os.LookupEnv, asJSON)
		},
	}
	models.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	cmd.AddCommand(models)
	return cmd
}

type llmPingOptions struct {
	prompt    string
	maxTokens int
	timeout   time.Duration
	attempts  int
	json      bool
	lookupEnv llm.LookupEnv
}

// runLLMPing sends one small request to a model and reports how it went.
func runLLMPing(ctx context.Context, w io.Writer, log *slog.Logger, cfg llm.Config, model string, o llmPingOptions) error {
	// The flags first: a bad one is said before any key is looked for.
	if o.attempts < 1 || o.attempts > 100 {
		return usage(fmt.Errorf("--attempts %d: use 1 to 100 (1: no retries)", o.attempts))
	}
	if o.timeout <= 0 {
		return usage(fmt.Errorf("--timeout %v: use a positive duration, like 30s or 2m", o.timeout))
	}
	if o.maxTokens < 1 {
		return usage(fmt.Errorf("--max-tokens %d: use 1 or more", o.maxTokens))
	}
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	m, err := cfg.Model(model)
	if err != nil {
		return usage(err)
	}
	retry := cfg.Retry
	retry.MaxAttempts = o.attempts
	set, err := provider.New(cfg, provider.Options{Log: log, LookupEnv: o.lookupEnv, Retry: &retry})
	if err != nil {
		return usage(err)
	}
	c, err := set.Client(model)
	if err != nil {
		if errors.Is(err, llm.ErrAuth) {
			return usage(err)
		}
		return err
	}
	req := llm.Request{
		Model:           m.Name,
		System:          "You are a health check. Answer as briefly as you can.",
		Messages:        []llm.Message{{Role: llm.RoleUser, Content: o.prompt}},
		MaxOutputTokens: o.maxTokens,
	}
	if m.Reasoning() && m.Config.ReasoningEffort == "" && m.Spec.Protocol() == llm.ProtocolOpenAI {
		req.ReasoningEffort = "low"
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	resp, err := c.Complete(ctx, req)
	if err != nil {
		return fmt.Errorf("ping %s (%s at %s): %w", m.Name, m.Spec.Provider+"/"+m.Spec.Model, m.Spec.BaseURL, err)
	}
	resp.Text = llm.Redact(resp.Text)
	if o.json {
		return writeJSON(w, struct {
			Name     string `json:"name"`
			Spec     string `json:"spec"`
			Endpoint string `json:"endpoint"`
			*llm.Response
		}{m.Name, m.Config.Spec, m.Spec.BaseURL, resp})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", llmDescribe(m))
	fmt.Fprintf(tw, "endpoint\t%s\n", m.Spec.BaseURL)
	if resp.Model != "" {
		fmt.Fprintf(tw, "server model\t%s\n", resp.Model)
	}
	fmt.Fprintf(tw, "reply\t%q\n", llmShort(resp.Text, 200))
	attempts := "1 attempt"
	if resp.Attempts > 1 {
		attempts = fmt.Sprintf("%d attempts", resp.Attempts)
	}
	fmt.Fprintf(tw, "latency\t%s (%s)\n", resp.Latency.Round(time.Millisecond), attempts)
	u := resp.Usage
	tokens := fmt.Sprintf("in %d, out %d (reasoning %d, cached %d)", u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedTokens)
	if u.Estimated {
		tokens += ", estimated: the server reported no usage"
	}
	fmt.Fprintf(tw, "tokens\t%s\n", tokens)
	if resp.PriceUnknown {
		fmt.Fprintf(tw, "cost\tunknown: no price for %s/%s (add one under llm.prices)\n", m.Spec.Provider, m.Spec.Model)
	} else {
		fmt.Fprintf(tw, "cost\t$%.6f\n", resp.CostUSD)
	}
	fmt.Fprintf(tw, "finish\t%s\n", llmOrDash(resp.FinishReason))
	fmt.Fprintf(tw, "request id\t%s\n", llmOrDash(resp.RequestID))
	return tw.Flush()
}

// llmModelInfo is one row of "frontier llm models".
type llmModelInfo struct {
	Name      string     `json:"name"`
	Default   bool       `json:"default,omitempty"`
	Spec      string     `json:"spec"`
	Provider  string     `json:"provider"`
	Model     string     `json:"model"`
	Endpoint  string     `json:"endpoint"`
	Key       string     `json:"key"`        // where the key comes from, "" when none is needed
	KeyStatus string     `json:"key_status"` // "set", "not set", "not needed", "unreadable"
	Reasoning bool       `json:"reasoning"`
	Weight    float64    `json:"weight"`
	Price     *llm.Price `json:"price,omitempty"` // nil when unknown
}

// runLLMModels lists the configured models.
func runLLMModels(w io.Writer, cfg llm.Config, lookup llm.LookupEnv, asJSON bool) error {
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	models, err := cfg.ModelList()
	if err != nil {
		return usage(err)
	}
	prices, err := llm.NewPriceTable(cfg.Prices)
	if err != nil {
		return err
	}
	var rows []llmModelInfo
	for _, m := range models {
		r := llmModelInfo{
			Name: m.Name, Default: m.Default, Spec: m.Config.Spec, Provider: m.Spec.Provider, Model: m.Spec.Model,
			Endpoint: m.Spec.BaseURL, Key: m.KeySource(), Reasoning: m.Reasoning(), Weight: m.Config.Weight,
		}
		if r.Weight == 0 {
			r.Weight = 1
		}
		r.KeyStatus = llmKeyStatus(m, lookup)
		if r.KeyStatus == "not needed" {
			r.Key = ""
		}
		if p, ok := prices.Lookup(m.Spec.Provider, m.Spec.Model); ok {
			r.Price = &p
		}
		rows = append(rows, r)
	}
	if asJSON {
		if rows == nil {
			rows = []llmModelInfo{}
		}
		return writeJSON(w, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "No models configured. Add them under llm.models in frontier.yaml (see docs/llm.md),")
		fmt.Fprintln(w, "or ping a spec directly: frontier llm ping openai-compatible/NAME@http://127.0.0.1:8000/v1")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROVIDER\tMODEL\tENDPOINT\tKEY\tPRICE (USD per 1M tokens: in / out / cached)")
	for _, r := range rows {
		name := r.Name
		if r.Default {
			name += " *"
		}
		key := "not needed"
		if r.KeyStatus != "not needed" {
			key = fmt.Sprintf("%s (%s)", r.Key, r.KeyStatus)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(name), printable(r.Provider), printable(r.Model), printable(r.Endpoint), printable(key), llmPriceCell(r.Price))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n* default model. Shipped prices as of %s; add or override them under llm.prices.\n", prices.AsOf())
	return nil
}

// llmKeyStatus says whether the model's key can be read, without reading
// more than needed and without showing it.
func llmKeyStatus(m llm.Model, lookup llm.LookupEnv) string {
	key, err := m.APIKey(lookup)
	switch {
	case err != nil && m.Config.APIKeyFile != "":
		return "unreadable"
	case err != nil:
		return "NOT SET"
	case key == "":
		return "not needed"
	}
	return "set"
}

func llmPriceCell(p *llm.Price) string {
	if p == nil {
		return "unknown"
	}
	s := fmt.Sprintf("%s / %s", llmMoney(p.Input), llmMoney(p.Output))
	if p.CachedInput != nil {
		s += " / " + llmMoney(*p.CachedInput)
	}
	if len(p.Tiers) > 0 {
		s += fmt.Sprintf(" (more above %dk input)", p.Tiers[0].AboveInputTokens/1000)
	}
	return s
}

func llmMoney(v float64) string {
	s := strings.TrimRight(fmt.Sprintf("%.4f", v), "0")
	if strings.HasSuffix(s, ".") {
		s += "00"
	} else if i := strings.IndexByte(s, '.'); len(s)-i-1 == 1 {
		s += "0"
	}
	return s
}

func llmDescribe(m llm.Model) string {
	spec := m.Spec.Provider + "/" + m.Spec.Model
	if m.Name == m.Config.Spec || m.Name == spec {
		return spec
	}
	return fmt.Sprintf("%s (%s)", m.Name, spec)
}

func llmShort(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func llmOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
