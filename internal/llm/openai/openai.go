// Package openai is the llm adapter for the OpenAI chat completions
// protocol, built on the official openai-go SDK. It serves OpenAI itself
// and every server that copies the protocol: OpenRouter, Ollama, vLLM,
// llama.cpp's server, SGLang.
//
// The SDK's retries are off and it reads nothing from the environment:
// retries, timeouts and keys are the llm package's business.
package openai

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/internal/wire"
)

// Config configures a Client.
type Config struct {
	Provider string // the spec's provider (openai, openrouter, ollama, openai-compatible)
	Model    string // model id sent to the server
	Name     string // configured name, for errors; defaults to Model
	BaseURL  string // endpoint, usually ending in /v1
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local servers).
	APIKey    string
	KeySource string // where the key came from, for error hints ("$OPENAI_API_KEY")
	// Reasoning selects the parameters of reasoning models (see
	// llm.IsReasoningModel): max_completion_tokens and reasoning_effort,
	// no temperature or stop.
	Reasoning bool
	// Stream receives the answer as server-sent events, with usage in the
	// last chunk.
	Stream bool
	// HTTPClient is the base client; nil means a default one.
	HTTPClient *http.Client
}

// Client sends requests to one model. It is safe for concurrent use.
type Client struct {
	cfg  Config
	call wire.Call
	svc  oai.ChatCompletionService
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" || cfg.BaseURL == "" {
		return nil, errors.New("openai adapter: model and base URL are required")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Model
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(wire.HTTPClient(cfg.HTTPClient)),
		option.WithMaxRetries(0),
		// Set even when empty: an empty key sends no Authorization header.
		option.WithAPIKey(cfg.APIKey),
	}
	if cfg.Provider == "openrouter" {
		opts = append(opts, option.WithHeader("X-Title", "frontier"))
	}
	// The service is built without oai.NewClient, which would read
	// OPENAI_API_KEY, OPENAI_BASE_URL and other variables and could send an
	// OpenAI key to a local server.
	return &Client{
		cfg:  cfg,
		call: wire.Call{Provider: cfg.Provider, Model: cfg.Name, ID: cfg.Model, BaseURL: cfg.BaseURL, KeySource: cfg.KeySource},
		svc:  oai.NewChatCompletionService(opts...),
	}, nil
}

// Params builds the request body for req, following the reasoning-model
// rule described on Config.Reasoning.
func (c *Client) Params(req llm.Request) oai.ChatCompletionNewParams {
	p := oai.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			p.Messages = append(p.Messages, oai.AssistantMessage(m.Content))
		} else {
			p.Messages = append(p.Messages, oai.UserMessage(m.Content))
		}
	}
	if c.cfg.Reasoning {
		if req.MaxOutputTokens > 0 {
			if c.cfg.Provider == "openrouter" {
				// OpenRouter takes max_tokens for every model and translates.
				p.MaxTokens = oai.Int(int64(req.MaxOutputTokens))
			} else {
				p.MaxCompletionTokens = oai.Int(int64(req.MaxOutputTokens))
			}
		}
		if req.ReasoningEffort != "" {
			p.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
		}
		// No temperature and no stop: reasoning models refuse them. Stop
		// sequences are applied to the text by llm.Meter.
		return p
	}
	if req.MaxOutputTokens > 0 {
		p.MaxTokens = oai.Int(int64(req.MaxOutputTokens))
	}
	if req.Temperature != nil {
		p.Temperature = oai.Float(*req.Temperature)
	}
	if len(req.Stop) > 0 {
		// OpenAI takes at most four; the rest are applied to the text.
		p.Stop = oai.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop[:min(len(req.Stop), 4)]}
	}
	return p
}

// Complete sends one request.
func (c *Client) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params := c.Params(req)
	ctx, ex := wire.Track(ctx)
	start := time.Now()
	var resp *llm.Response
	var err error
	if c.cfg.Stream {
		resp, err = c.stream(ctx, ex, params)
	} else {
		resp, err = c.once(ctx, ex, params)
	}
	if err != nil {
		return nil, err
	}
	resp.Latency = time.Since(start)
	resp.Provider = c.cfg.Provider
	if id := llm.RequestIDFrom(ex.Header()); id != "" {
		resp.RequestID = id
	}
	return resp, nil
}

func (c *Client) once(ctx context.Context, ex *wire.Exchange, params oai.ChatCompletionNewParams) (*llm.Response, error) {
	cc, err := c.svc.New(ctx, params)
	if err != nil {
		return nil, wire.Classify(ctx, c.call, ex, err)
	}
	if cc == nil || len(cc.Choices) == 0 {
		return nil, wire.Malformed(c.call, ex, "the answer has no choices")
	}
	ch := cc.Choices[0]
	resp := &llm.Response{
		Text:         ch.Message.Content,
		Model:        cc.Model,
		RequestID:    cc.ID,
		FinishReason: wire.FinishReason(ch.FinishReason),
		Usage:        usage(cc.Usage),
		CostUSD:      reportedCost(cc.Usage),
	}
	if ch.Message.Content == "" && ch.Message.Refusal != "" {
		resp.FinishReason = llm.FinishContentFilter
	}
	return resp, nil
}

func (c *Client) stream(ctx context.Context, ex *wire.Exchange, params oai.ChatCompletionNewParams) (*llm.Response, error) {
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	st := c.svc.NewStreaming(ctx, params)
	defer st.Close()
	var (
		text    strings.Builder
		resp    = &llm.Response{}
		refusal bool
		chunks  int
	)
	for st.Next() {
		chunk := st.Current()
		chunks++
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if chunk.ID != "" {
			resp.RequestID = chunk.ID
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			text.WriteString(ch.Delta.Content)
			if ch.Delta.Refusal != "" {
				refusal = true
			}
			if ch.FinishReason != "" {
				resp.FinishReason = wire.FinishReason(ch.FinishReason)
			}
		}
		if chunk.JSON.Usage.Valid() {
			resp.Usage = usage(chunk.Usage)
			resp.CostUSD = reportedCost(chunk.Usage)
		}
	}
	if err := st.Err(); err != nil {
		return nil, wire.Classify(ctx, c.call, ex, err)
	}
	if chunks == 0 {
		return nil, wire.Malformed(c.call, ex, "the stream ended without a single chunk")
	}
	resp.Text = text.String()
	if resp.Text == "" && refusal {
		resp.FinishReason = llm.FinishContentFilter
	}
	return resp, nil
}

// reportedCost is the cost in USD that some servers (OpenRouter) add to
// the usage, 0 when there is none.
func reportedCost(u oai.CompletionUsage) float64 {
	f, ok := u.JSON.ExtraFields["cost"]
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(f.Raw(), 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func usage(u oai.CompletionUsage) llm.Usage {
	return llm.Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
		CachedTokens:     u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
	}
}
