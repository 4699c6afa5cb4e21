// Package gemini is the llm adapter for Google's Gemini API
// (generateContent), built on the official google.golang.org/genai SDK.
//
// The SDK does not retry unless told to, and the key is always passed
// explicitly, so it reads no key from the environment.
package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/internal/wire"
)

// Config configures a Client.
type Config struct {
	Model     string // model id, e.g. "gemini-2.5-pro"
	Name      string // configured name, for errors; defaults to Model
	BaseURL   string // endpoint root, e.g. "https://generativelanguage.googleapis.com"
	APIKey    string // required
	KeySource string // where the key came from, for error hints
	// Reasoning leaves the temperature out (Gemini 3 and later; see
	// llm.IsReasoningModel).
	Reasoning  bool
	Stream     bool         // receive the answer as server-sent events
	HTTPClient *http.Client // base client; nil means a default one
}

// Client sends requests to one model. It is safe for concurrent use.
type Client struct {
	cfg  Config
	call wire.Call
	api  *genai.Client
}

// New returns a Client for cfg.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Model == "" || cfg.BaseURL == "" {
		return nil, errors.New("gemini adapter: model and base URL are required")
	}
	if cfg.APIKey == "" {
		// Without a key the SDK would read GOOGLE_API_KEY and GEMINI_API_KEY
		// itself; keys are chosen by the config, so refuse instead.
		return nil, errors.New("gemini adapter: an API key is required")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Model
	}
	base := cfg.BaseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	api, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: wire.HTTPClient(cfg.HTTPClient),
		// RetryOptions stays nil: the SDK then makes one attempt.
		HTTPOptions: genai.HTTPOptions{BaseURL: base},
	})
	if err != nil {
		return nil, err
	}
	return &Client{
		cfg:  cfg,
		call: wire.Call{Provider: "gemini", Model: cfg.Name, ID: cfg.Model, BaseURL: cfg.BaseURL, KeySource: cfg.KeySource},
		api:  api,
	}, nil
}

// Params builds the contents and generation config for req.
func (c *Client) Params(req llm.Request) ([]*genai.Content, *genai.GenerateContentConfig) {
	var contents []*genai.Content
	for _, m := range req.Messages {
		role := genai.RoleUser
		if m.Role == llm.RoleAssistant {
			role = genai.RoleModel
		}
		contents = append(contents, genai.NewContentFromText(m.Content, genai.Role(role)))
	}
	gc := &genai.GenerateContentConfig{}
	if req.System != "" {
		gc.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if req.Temperature != nil && !c.cfg.Reasoning {
		t := float32(*req.Temperature)
		gc.Temperature = &t
	}
	if req.MaxOutputTokens > 0 {
		gc.MaxOutputTokens = int32(min(req.MaxOutputTokens, 1<<30))
	}
	if len(req.Stop) > 0 {
		// Gemini takes at most five; the rest are applied to the text.
		gc.StopSequences = req.Stop[:min(len(req.Stop), 5)]
	}
	gc.ThinkingConfig = thinking(c.cfg.Model, req.ReasoningEffort)
	return contents, gc
}

// thinking maps a reasoning effort onto Gemini's thinking settings: a
// thinking level for Gemini 3 and later, a token budget for Gemini 2.x.
func thinking(model, effort string) *genai.ThinkingConfig {
	if effort == "" {
		return nil
	}
	gen := llm.GeminiGeneration(model)
	switch {
	case gen >= 3:
		level := map[string]genai.ThinkingLevel{
			"none": genai.ThinkingLevelMinimal, "minimal": genai.ThinkingLevelMinimal,
			"low": genai.ThinkingLevelLow, "medium": genai.ThinkingLevelMedium,
			"high": genai.ThinkingLevelHigh, "xhigh": genai.ThinkingLevelHigh, "max": genai.ThinkingLevelHigh,
		}[effort]
		if level == "" {
			return nil
		}
		return &genai.ThinkingConfig{ThinkingLevel: level}
	case gen == 2:
		budget, ok := map[string]int32{"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}[effort]
		if !ok {
			return nil
		}
		return &genai.ThinkingConfig{ThinkingBudget: &budget}
	}
	return nil
}

// Complete sends one request.
func (c *Client) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	contents, gc := c.Params(req)
	ctx, ex := wire.Track(ctx)
	start := time.Now()
	resp := &llm.Response{Provider: "gemini"}
	var text strings.Builder
	n := 0
	add := func(r *genai.GenerateContentResponse) {
		n++
		if r.ModelVersion != "" {
			resp.Model = r.ModelVersion
		}
		if r.ResponseID != "" {
			resp.RequestID = r.ResponseID
		}
		if u := r.UsageMetadata; u != nil {
			resp.Usage = llm.Usage{
				InputTokens: int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
				// Gemini counts thoughts apart from candidates; both are billed
				// as output.
				OutputTokens:    int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
				ReasoningTokens: int64(u.ThoughtsTokenCount),
				CachedTokens:    int64(u.CachedContentTokenCount),
			}
		}
		if f := r.PromptFeedback; f != nil && f.BlockReason != "" {
			resp.FinishReason = llm.FinishContentFilter
		}
		if len(r.Candidates) == 0 || r.Candidates[0] == nil {
			return
		}
		cand := r.Candidates[0]
		if cand.FinishReason != "" {
			resp.FinishReason = wire.FinishReason(string(cand.FinishReason))
		}
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				if p != nil && !p.Thought {
					text.WriteString(p.Text)
				}
			}
		}
	}
	if c.cfg.Stream {
		for r, err := range c.api.Models.GenerateContentStream(ctx, c.cfg.Model, contents, gc) {
			if err != nil {
				var apiErr genai.APIError
				if errors.As(err, &apiErr) {
					return nil, wire.InStream(ctx, c.call, ex, err, apiErr.Code, apiErr.Message)
				}
				return nil, wire.Classify(ctx, c.call, ex, err)
			}
			if r != nil {
				add(r)
			}
		}
		if n == 0 {
			return nil, wire.Malformed(c.call, ex, "the stream ended without a single chunk")
		}
	} else {
		r, err := c.api.Models.GenerateContent(ctx, c.cfg.Model, contents, gc)
		if err != nil {
			return nil, wire.Classify(ctx, c.call, ex, err)
		}
		if r == nil {
			return nil, wire.Malformed(c.call, ex, "empty answer")
		}
		add(r)
		if len(r.Candidates) == 0 && resp.FinishReason == "" {
			return nil, wire.Malformed(c.call, ex, "the answer has no candidates")
		}
	}
	resp.Text = text.String()
	resp.Latency = time.Since(start)
	if id := llm.RequestIDFrom(ex.Header()); id != "" && resp.RequestID == "" {
		resp.RequestID = id
	}
	return resp, nil
}
