package llm

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestShippedPrices(t *testing.T) {
	tab, err := ShippedPrices()
	if err != nil {
		t.Fatal(err)
	}
	if tab.AsOf() == "" {
		t.Error("the shipped table has no as_of date")
	}
	for _, key := range [][2]string{
		{"openai", "gpt-5"}, {"openai", "gpt-5-mini"}, {"openai", "o3"},
		{"anthropic", "claude-sonnet-4-5"}, {"anthropic", "claude-opus-4-5"},
		{"gemini", "gemini-2.5-pro"}, {"gemini", "gemini-2.5-flash"},
		{"ollama", "qwen2.5-coder:32b"},
	} {
		if _, ok := tab.Lookup(key[0], key[1]); !ok {
			t.Errorf("no price for %s/%s", key[0], key[1])
		}
	}
}

func TestPriceLookup(t *testing.T) {
	tab, err := ShippedPrices()
	if err != nil {
		t.Fatal(err)
	}
	gpt5, _ := tab.Lookup("openai", "gpt-5")
	for _, id := range []string{"gpt-5-2025-08-07", "GPT-5", "gpt-5@20250807"} {
		if p, ok := tab.Lookup("openai", id); !ok || p.Input != gpt5.Input {
			t.Errorf("snapshot %q not priced like gpt-5", id)
		}
	}
	if _, ok := tab.Lookup("anthropic", "claude-sonnet-4-5-20250929"); !ok {
		t.Error("dated Claude id not priced")
	}
	// A different model that merely starts like a known one is unknown.
	for _, id := range []string{"gpt-5-pro", "gpt-5-turbo-max"} {
		if _, ok := tab.Lookup("openai", id); ok {
			t.Errorf("%q priced by prefix", id)
		}
	}
	if _, ok := tab.Lookup("openai-compatible", "qwen"); ok {
		t.Error("an unconfigured local model has a price")
	}
	over := tab.With(map[string]Price{"openai-compatible/*": {}, "openai/gpt-5": {Input: 9, Output: 9}})
	if p, ok := over.Lookup("openai-compatible", "anything"); !ok || p.Input != 0 {
		t.Error("wildcard override not used")
	}
	if p, _ := over.Lookup("openai", "gpt-5"); p.Input != 9 {
		t.Error("override not used")
	}
	if p, _ := tab.Lookup("openai", "gpt-5"); p.Input == 9 {
		t.Error("With changed the original table")
	}
	var nilTab *PriceTable
	if _, ok := nilTab.Lookup("openai", "gpt-5"); ok {
		t.Error("nil table knows a price")
	}
}

func TestPriceCost(t *testing.T) {
	cached, write := 0.125, 3.75
	p := Price{Input: 1.25, Output: 10, CachedInput: &cached}
	u := Usage{InputTokens: 1_000_000, CachedTokens: 200_000, OutputTokens: 50_000, ReasoningTokens: 20_000}
	if got, want := p.Cost(u), 0.8*1.25+0.2*0.125+0.05*10; !near(got, want) {
		t.Errorf("cost %g, want %g", got, want)
	}
	a := Price{Input: 3, Output: 15, CachedInput: &[]float64{0.3}[0], CacheWrite: &write}
	u = Usage{InputTokens: 10_000, CachedTokens: 6_000, CacheWriteTokens: 3_000, OutputTokens: 1_000}
	if got, want := a.Cost(u), (1000*3+6000*0.3+3000*3.75+1000*15)/1e6; !near(got, want) {
		t.Errorf("cache write cost %g, want %g", got, want)
	}
	// Unset cache prices bill at the input price.
	plain := Price{Input: 2, Output: 4}
	if got := plain.Cost(Usage{InputTokens: 100, CachedTokens: 50, OutputTokens: 10}); !near(got, (100*2+10*4)/1e6) {
		t.Errorf("plain cost %g", got)
	}
	// Long prompts take the tier's price.
	long := 0.25
	g := Price{Input: 1.25, Output: 10, Tiers: []PriceTier{{AboveInputTokens: 200_000, Input: 2.5, Output: 15, CachedInput: &long}}}
	if got := g.Cost(Usage{InputTokens: 200_000, OutputTokens: 1000}); !near(got, (200_000*1.25+1000*10)/1e6) {
		t.Errorf("at the threshold %g", got)
	}
	if got := g.Cost(Usage{InputTokens: 250_000, CachedTokens: 50_000, OutputTokens: 1000}); !near(got, (200_000*2.5+50_000*0.25+1000*15)/1e6) {
		t.Errorf("above the threshold %g", got)
	}
	// Inconsistent usage never yields a negative cost.
	if got := plain.Cost(Usage{InputTokens: 10, CachedTokens: 50, CacheWriteTokens: 50}); got < 0 {
		t.Errorf("negative cost %g", got)
	}
	if s := p.String(); s != "in $1.25 / out $10.00 / cached $0.125 per 1M tokens" {
		t.Errorf("String() = %q", s)
	}
}
