// Package provider opens configured models. For each it builds the adapter
// of the model's wire protocol (openai, anthropic, gemini) and wraps it in
// the llm package's cross-cutting behaviour, so that callers get one
// llm.Client per model with retries, a per-call timeout, concurrency and
// rate limits, cost accounting and the run's budget.
package provider

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/anthropic"
	"github.com/frontier-bench/frontier/internal/llm/gemini"
	"github.com/frontier-bench/frontier/internal/llm/openai"
)

// Options tune a Set. The zero value is ready to use.
type Options struct {
	Log *slog.Logger
	// Budget is shared by every client of the Set. Nil means a new budget
	// with the config's limits and nothing spent; pass one made with
	// llm.NewBudget to continue a resumed run's totals.
	Budget *llm.Budget
	// LookupEnv reads API keys; nil means os.LookupEnv.
	LookupEnv llm.LookupEnv
	// HTTPClient is the base of every adapter's client; nil means a default
	// client. Requests are bounded by contexts, not by its Timeout.
	HTTPClient *http.Client
	// Retry replaces the config's retry settings when set (a health check
	// wants one attempt).
	Retry *llm.RetryConfig
	// Sleep replaces the timer between retries (tests record the waits).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Set opens the models of one config and keeps one client per model, so
// that every caller of a model shares its limits. It is safe for
// concurrent use, and is itself an llm.Client that sends each request to
// the model named in Request.Model (the default model when empty).
type Set struct {
	cfg    llm.Config
	opts   Options
	log    *slog.Logger
	prices *llm.PriceTable
	budget *llm.Budget

	mu       sync.Mutex
	clients  map[string]llm.Client
	limiters map[string]*llm.Limiter // per provider
}

// New validates cfg and returns a Set for it. Clients are built on first
// use, so models whose keys are missing fail only when used.
func New(cfg llm.Config, opts Options) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	prices, err := llm.NewPriceTable(cfg.Prices)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	budget := opts.Budget
	if budget == nil {
		budget = llm.NewBudget(cfg.Budget, llm.Spend{})
	}
	return &Set{
		cfg: cfg, opts: opts, log: log, prices: prices, budget: budget,
		clients:  map[string]llm.Client{},
		limiters: map[string]*llm.Limiter{},
	}, nil
}

// Open returns a client for one model, by configured name or by spec: a
// Set of its own, with the config's budget starting from zero.
func Open(cfg llm.Config, nameOrSpec string, log *slog.Logger) (llm.Client, error) {
	s, err := New(cfg, Options{Log: log})
	if err != nil {
		return nil, err
	}
	return s.Client(nameOrSpec)
}

// Budget returns the budget every client of the Set draws from.
func (s *Set) Budget() *llm.Budget { return s.budget }

// Prices returns the price table in use (shipped prices plus the config's).
func (s *Set) Prices() *llm.PriceTable { return s.prices }

// Complete sends req to the model named in req.Model.
func (s *Set) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	c, err := s.Client(req.Model)
	if err != nil {
		return nil, err
	}
	return c.Complete(ctx, req)
}

// Client returns the client of a model, by configured name or spec (the
// default model when empty), building it on first use.
func (s *Set) Client(nameOrSpec string) (llm.Client, error) {
	m, err := s.cfg.Model(nameOrSpec)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[m.Name]; ok {
		return c, nil
	}
	c, err := s.build(m)
	if err != nil {
		return nil, err
	}
	s.clients[m.Name] = c
	return c, nil
}

// build assembles, from the inside out: adapter, per-call timeout, the
// model's limits, the provider's shared limits, retries, metering, then
// request defaults, validation and the budget.
func (s *Set) build(m llm.Model) (llm.Client, error) {
	key, err := m.APIKey(s.opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	keySource := ""
	if key != "" {
		keySource = m.KeySource()
	}
	var c llm.Client
	switch m.Spec.Protocol() {
	case llm.ProtocolAnthropic:
		c, err = anthropic.New(anthropic.Config{
			Model: m.Spec.Model, Name: m.Name, BaseURL: m.Spec.BaseURL, APIKey: key, KeySource: keySource,
			Stream: m.Streaming(), HTTPClient: s.opts.HTTPClient,
		})
	case llm.ProtocolGemini:
		c, err = gemini.New(context.Background(), gemini.Config{
			Model: m.Spec.Model, Name: m.Name, BaseURL: m.Spec.BaseURL, APIKey: key, KeySource: keySource,
			Reasoning: m.Reasoning(), Stream: m.Streaming(), HTTPClient: s.opts.HTTPClient,
		})
	default:
		c, err = openai.New(openai.Config{
			Provider: m.Spec.Provider, Model: m.Spec.Model, Name: m.Name, BaseURL: m.Spec.BaseURL,
			APIKey: key, KeySource: keySource, Reasoning: m.Reasoning(), Stream: m.Streaming(),
			HTTPClient: s.opts.HTTPClient,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	c = llm.WithTimeout(c, m.CallTimeout(), m.Spec.Provider, m.Name)
	c = llm.NewLimiter(llm.Limits{MaxConcurrency: m.Config.MaxConcurrency, RequestsPerMinute: m.Config.RequestsPerMinute}).Wrap(c)
	c = s.providerLimiter(m.Spec.Provider).Wrap(c)
	retry := s.cfg.Retry
	if s.opts.Retry != nil {
		retry = *s.opts.Retry
	}
	c = &llm.Retrier{Next: c, Policy: retry, Log: s.log, Sleep: s.opts.Sleep}
	c = &llm.Meter{Next: c, Prices: s.prices, Provider: m.Spec.Provider, Model: m.Spec.Model, Name: m.Name, Log: s.log}
	price, known := s.prices.Lookup(m.Spec.Provider, m.Spec.Model)
	c = s.budget.WrapWorst(c, llm.WorstCase(price, known))
	if !known && s.cfg.Budget.MaxUSD > 0 {
		s.log.Warn("no price is known for this model, so llm.budget.max_usd does not see what it costs; add it under llm.prices",
			"model", m.Name, "key", m.Spec.Provider+"/"+m.Spec.Model)
	}
	inner := c
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		req = m.Apply(req)
		if req.Model == "" {
			req.Model = m.Name
		}
		if err := req.Validate(); err != nil {
			return nil, err
		}
		return inner.Complete(ctx, req)
	}), nil
}

func (s *Set) providerLimiter(provider string) *llm.Limiter {
	if l, ok := s.limiters[provider]; ok {
		return l
	}
	l := llm.NewLimiter(s.cfg.Providers[provider])
	s.limiters[provider] = l
	return l
}
