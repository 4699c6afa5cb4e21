// Package anthropic is the llm adapter for Anthropic's Messages API, built
// on the official anthropic-sdk-go (v2, API version 2026-10-21).
//
// The SDK's retries are off and it reads nothing from the environment.
// That API version refuses temperature, top_p and top_k for every model,
// so a request's temperature is not sent; a reasoning effort goes in
// output_config.effort.
package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/internal/wire"
)

// DefaultMaxTokens is sent when a request sets no output limit; the API
// requires one.
const DefaultMaxTokens = 16384

// Config configures a Client.
type Config struct {
	Model     string // model id, e.g. "claude-sonnet-4-5"
	Name      string // configured name, for errors; defaults to Model
	BaseURL   string // endpoint root, e.g. "https://api.anthropic.com"
	APIKey    string
	KeySource string // where the key came from, for error hints
	// Stream receives the answer as server-sent events. Long answers need
	// it: the SDK refuses non-streamed requests that may take over ten
	// minutes.
	Stream     bool
	HTTPClient *http.Client // base client; nil means a default one
}

// Client sends requests to one model. It is safe for concurrent use.
type Client struct {
	cfg  Config
	call wire.Call
	api  sdk.Client
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" || cfg.BaseURL == "" {
		return nil, errors.New("anthropic adapter: model and base URL are required")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Model
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(wire.HTTPClient(cfg.HTTPClient)),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Client{
		cfg:  cfg,
		call: wire.Call{Provider: "anthropic", Model: cfg.Name, ID: cfg.Model, BaseURL: cfg.BaseURL, KeySource: cfg.KeySource},
		api:  sdk.NewClient(opts...),
	}, nil
}

// Params builds the request body for req.
func (c *Client) Params(req llm.Request) sdk.MessageNewParams {
	max := int64(req.MaxOutputTokens)
	if max <= 0 {
		max = DefaultMaxTokens
	}
	p := sdk.MessageNewParams{Model: sdk.Model(c.cfg.Model), MaxTokens: max}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(sdk.NewTextBlock(m.Content)))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(m.Content)))
		}
	}
	if len(req.Stop) > 0 {
		p.StopSequences = req.Stop
	}
	if e := effort(req.ReasoningEffort); e != "" {
		p.OutputConfig = sdk.OutputConfigParam{Effort: e}
	}
	return p
}

// effort maps the llm efforts onto Anthropic's (low, medium, high, xhigh,
// max). "none" sends nothing; "minimal" is Anthropic's "low".
func effort(e string) sdk.OutputConfigEffort {
	switch e {
	case "", "none":
		return ""
	case "minimal":
		return sdk.OutputConfigEffortLow
	}
	return sdk.OutputConfigEffort(e)
}

// Complete sends one request.
func (c *Client) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params := c.Params(req)
	ctx, ex := wire.Track(ctx)
	start := time.Now()
	var (
		msg *sdk.Message
		err error
	)
	if c.cfg.Stream {
		msg, err = c.stream(ctx, params)
	} else {
		// The SDK derives a request timeout from max_tokens and refuses long
		// ones; the caller's context bounds the call instead.
		msg, err = c.api.Messages.New(ctx, params, option.WithRequestTimeout(24*time.Hour))
	}
	if err != nil {
		return nil, wire.Classify(ctx, c.call, ex, err)
	}
	if msg == nil || msg.Type != "message" && len(msg.Content) == 0 && msg.StopReason == "" {
		return nil, wire.Malformed(c.call, ex, "the answer is not a message")
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	u := msg.Usage
	resp := &llm.Response{
		Text:         text.String(),
		Model:        string(msg.Model),
		Provider:     "anthropic",
		RequestID:    msg.ID,
		FinishReason: wire.FinishReason(string(msg.StopReason)),
		Latency:      time.Since(start),
		Usage: llm.Usage{
			// Anthropic counts cache reads and writes apart from input_tokens.
			InputTokens:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			OutputTokens:     u.OutputTokens,
			ReasoningTokens:  u.OutputTokensDetails.ThinkingTokens,
			CachedTokens:     u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		},
	}
	if id := llm.RequestIDFrom(ex.Header()); id != "" {
		resp.RequestID = id
	}
	return resp, nil
}

func (c *Client) stream(ctx context.Context, params sdk.MessageNewParams) (*sdk.Message, error) {
	st := c.api.Messages.NewStreaming(ctx, params)
	defer st.Close()
	msg := &sdk.Message{}
	events := 0
	for st.Next() {
		events++
		if err := msg.Accumulate(st.Current()); err != nil {
			return nil, err
		}
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	if events == 0 {
		return nil, errors.New("the stream ended without a single event")
	}
	return msg, nil
}
