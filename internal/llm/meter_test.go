package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMeter(t *testing.T) {
	prices := (&PriceTable{}).With(map[string]Price{"openai/m": {Input: 1, Output: 2}})
	reply := func(r *Response) Client {
		return ClientFunc(func(ctx context.Context, req Request) (*Response, error) { c := *r; return &c, nil })
	}
	req := Request{Messages: []Message{{Role: RoleUser, Content: "hello world"}}, Stop: []string{"STOP", "END"}}

	m := &Meter{Next: reply(&Response{Text: "one two END three STOP"}), Prices: prices, Provider: "openai", Model: "m"}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "one two " || resp.FinishReason != FinishStop {
		t.Errorf("stop not applied: %q %q", resp.Text, resp.FinishReason)
	}
	// "hello world" is 2 tokens, plus 3 for the message and 3 for priming;
	// "one two " is 3.
	if !resp.Usage.Estimated || resp.Usage.InputTokens != 8 || resp.Usage.OutputTokens != 3 {
		t.Errorf("estimate %+v", resp.Usage)
	}
	if !near(resp.CostUSD, (8*1+3*2)/1e6) || resp.PriceUnknown || resp.Provider != "openai" || resp.Model != "m" {
		t.Errorf("resp %+v", resp)
	}

	m = &Meter{Next: reply(&Response{Text: "x", Usage: Usage{InputTokens: 10, OutputTokens: 5}, Model: "m-2026-01-01"}), Prices: prices, Provider: "openai", Model: "other"}
	resp, _ = m.Complete(context.Background(), req)
	if resp.Usage.Estimated || resp.PriceUnknown || !near(resp.CostUSD, 20/1e6) {
		t.Errorf("server usage, price found by the server's model id: %+v", resp)
	}
	m = &Meter{Next: reply(&Response{Text: "x", Usage: Usage{InputTokens: 10, OutputTokens: 5}}), Prices: prices, Provider: "openai-compatible", Model: "q"}
	resp, _ = m.Complete(context.Background(), req)
	if !resp.PriceUnknown || resp.CostUSD != 0 {
		t.Errorf("unknown price: %+v", resp)
	}
	m = &Meter{Next: reply(&Response{Text: "x", CostUSD: 0.25, Usage: Usage{InputTokens: 10, OutputTokens: 5}}), Prices: prices, Provider: "openrouter", Model: "q"}
	resp, _ = m.Complete(context.Background(), req)
	if resp.PriceUnknown || resp.CostUSD != 0.25 {
		t.Errorf("a cost the server reported must be kept: %+v", resp)
	}
	boom := errors.New("boom")
	m = &Meter{Next: ClientFunc(func(ctx context.Context, req Request) (*Response, error) { return nil, boom }), Prices: prices}
	if _, err := m.Complete(context.Background(), req); err != boom {
		t.Errorf("error not passed through: %v", err)
	}
}

func TestRequestValidate(t *testing.T) {
	bad := []Request{
		{},
		{Messages: []Message{{Role: "system", Content: "x"}}},
		{Messages: []Message{{Role: RoleUser, Content: "  "}}},
		{Messages: []Message{{Role: RoleUser, Content: "x"}}, MaxOutputTokens: -1},
		{Messages: []Message{{Role: RoleUser, Content: "x"}}, Temperature: &[]float64{2.5}[0]},
	}
	for _, r := range bad {
		if err := r.Validate(); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if err := (Request{Messages: []Message{{Role: RoleUser, Content: "x"}, {Role: RoleAssistant, Content: "y"}, {Role: RoleUser, Content: "z"}}}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestEstimateTokens(t *testing.T) {
	// cl100k_base: "hello world" is [15339, 1917].
	if n := EstimateTokens("hello world"); n != 2 {
		t.Errorf("EstimateTokens(hello world) = %d, want 2", n)
	}
	if n := EstimateTokens(""); n != 0 {
		t.Errorf("empty: %d", n)
	}
	if n := EstimateTokens("<|endoftext|>"); n < 2 {
		t.Errorf("special token text must count as ordinary text: %d", n)
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	s := strings.Repeat("def forward(self, idx):\n    x = self.tok_emb(idx)  # token embeddings\n", 1000) // ~70 KB of code
	EstimateTokens("warm up")
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		EstimateTokens(s)
	}
}
