// Package llm talks to language models: one small Client interface, one
// adapter per wire protocol (OpenAI-compatible chat completions, Anthropic
// Messages, Google Gemini), and wrappers for retry, rate limits, budgets and
// cost accounting.
package llm

import (
	"context"
	"time"
)

// Client completes one request. Implementations are safe for concurrent use.
type Client interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Role of a message in a conversation.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Request is what the caller asks for. Zero values mean "provider default".
type Request struct {
	Model           string    `json:"model"` // a model spec, e.g. "openai/gpt-5"
	System          string    `json:"system,omitempty"`
	Messages        []Message `json:"messages"`
	Temperature     *float64  `json:"temperature,omitempty"`
	MaxOutputTokens int       `json:"max_output_tokens,omitempty"`
	ReasoningEffort string    `json:"reasoning_effort,omitempty"` // "low", "medium", "high"
	Stop            []string  `json:"stop,omitempty"`
}

// Usage counts tokens of one call. Estimated is true when the server sent no
// usage and the figures come from a local tokenizer.
//
// The adapters normalize what each provider reports, so that the same field
// means the same thing everywhere: InputTokens counts every prompt token,
// including those read from or written to a prompt cache (CachedTokens and
// CacheWriteTokens are parts of it); OutputTokens counts every generated
// token, including hidden reasoning (ReasoningTokens is a part of it).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	Estimated        bool  `json:"estimated,omitempty"`
}

// Total is input plus output tokens, the figure token budgets count.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Response is the model's answer and what it cost.
type Response struct {
	Text         string        `json:"text"`
	Usage        Usage         `json:"usage"`
	CostUSD      float64       `json:"cost_usd"`
	Latency      time.Duration `json:"latency_ns"`
	Model        string        `json:"model"`    // as reported by the server
	Provider     string        `json:"provider"` // "openai", "anthropic", "gemini", ...
	RequestID    string        `json:"request_id,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"` // FinishStop, FinishLength, FinishContentFilter or the provider's own word
	// PriceUnknown is true when no price is known for the model, so CostUSD
	// is 0 for lack of data rather than because the call was free.
	PriceUnknown bool `json:"price_unknown,omitempty"`
	// Attempts is how many HTTP requests the call took (1 without retries).
	Attempts int `json:"attempts,omitempty"`
}

// Finish reasons, normalized across providers. Other values are passed
// through in lower case.
const (
	FinishStop          = "stop"           // the model ended its answer or hit a stop sequence
	FinishLength        = "length"         // the answer was cut at the output token limit
	FinishContentFilter = "content_filter" // the provider withheld or cut the answer
)

// ClientFunc adapts a function to the Client interface.
type ClientFunc func(ctx context.Context, req Request) (*Response, error)

// Complete calls f.
func (f ClientFunc) Complete(ctx context.Context, req Request) (*Response, error) { return f(ctx, req) }
