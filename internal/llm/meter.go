package llm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Meter is a Client that finishes every response the same way, whatever
// the provider: it cuts the text at the first stop sequence, estimates
// token counts the server did not report (marking Usage.Estimated), prices
// the call from the table (marking PriceUnknown when the model has no
// price) unless the server reported the cost itself (OpenRouter does), and
// logs the call at debug level.
type Meter struct {
	Next     Client
	Prices   *PriceTable
	Provider string // the spec's provider, for pricing
	Model    string // the spec's model id, for pricing
	Name     string // the configured name, for logs
	Log      *slog.Logger
}

// Complete sends req through Next and completes the response.
func (m *Meter) Complete(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	resp, err := m.Next.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Latency == 0 {
		resp.Latency = time.Since(start)
	}
	if resp.Provider == "" {
		resp.Provider = m.Provider
	}
	if resp.Model == "" {
		resp.Model = m.Model
	}
	ApplyStop(resp, req.Stop)
	u := &resp.Usage
	if u.InputTokens == 0 {
		u.InputTokens = EstimateInputTokens(req)
		u.Estimated = true
	}
	if u.OutputTokens == 0 && resp.Text != "" {
		u.OutputTokens = EstimateTokens(resp.Text)
		u.Estimated = true
	}
	if resp.CostUSD > 0 {
		resp.PriceUnknown = false // the server said what it charged
	} else {
		price, ok := m.Prices.Lookup(m.Provider, m.Model)
		if !ok && resp.Model != m.Model {
			price, ok = m.Prices.Lookup(m.Provider, resp.Model)
		}
		resp.PriceUnknown = !ok
		if ok {
			resp.CostUSD = price.Cost(*u)
		}
	}
	if m.Log != nil && m.Log.Enabled(ctx, slog.LevelDebug) {
		m.Log.Debug("llm call", "model", m.Name, "server_model", resp.Model, "latency", resp.Latency.Round(time.Millisecond),
			"input_tokens", u.InputTokens, "output_tokens", u.OutputTokens, "reasoning_tokens", u.ReasoningTokens,
			"cached_tokens", u.CachedTokens, "estimated", u.Estimated, "cost_usd", resp.CostUSD,
			"price_unknown", resp.PriceUnknown, "finish", resp.FinishReason, "attempts", resp.Attempts, "request_id", resp.RequestID)
	}
	return resp, nil
}

// ApplyStop cuts resp.Text before the earliest stop sequence it contains,
// as servers do, and sets the finish reason to FinishStop. It makes stop
// sequences work for models that do not accept them (reasoning models).
func ApplyStop(resp *Response, stop []string) {
	cut := -1
	for _, s := range stop {
		if s == "" {
			continue
		}
		if i := strings.Index(resp.Text, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		resp.Text = resp.Text[:cut]
		resp.FinishReason = FinishStop
	}
}

// Validate checks that a request can be sent: at least one message, known
// roles, no empty content, sane numbers.
func (r Request) Validate() error {
	bad := func(format string, args ...any) error {
		return &Error{Kind: ErrInvalidRequest, Model: r.Model, Message: fmt.Sprintf(format, args...)}
	}
	if len(r.Messages) == 0 {
		return bad("the request has no messages")
	}
	for i, m := range r.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return bad("messages[%d]: role %q: use %q or %q (the system prompt goes in Request.System)", i, m.Role, RoleUser, RoleAssistant)
		}
		if strings.TrimSpace(m.Content) == "" {
			return bad("messages[%d] (%s) is empty", i, m.Role)
		}
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return bad("temperature %g is outside 0..2", *r.Temperature)
	}
	if r.MaxOutputTokens < 0 {
		return bad("max output tokens %d is negative", r.MaxOutputTokens)
	}
	return nil
}

// Apply fills what req leaves unset from the model's config: temperature,
// max output tokens and reasoning effort.
func (m Model) Apply(req Request) Request {
	if req.Temperature == nil && m.Config.Temperature != nil {
		t := *m.Config.Temperature
		req.Temperature = &t
	}
	if req.MaxOutputTokens == 0 {
		req.MaxOutputTokens = m.Config.MaxOutputTokens
	}
	if req.ReasoningEffort == "" {
		req.ReasoningEffort = m.Config.ReasoningEffort
	}
	return req
}
