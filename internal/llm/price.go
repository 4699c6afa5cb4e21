package llm

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

//go:embed prices.yaml
var shippedPrices []byte

// PriceTable finds the price of a model. It is immutable and safe for
// concurrent use.
type PriceTable struct {
	asOf    string
	entries map[string]Price // "provider/model" or "provider/*"
}

// ShippedPrices returns the price table built into the binary.
func ShippedPrices() (*PriceTable, error) {
	return parsePrices(shippedPrices)
}

func parsePrices(b []byte) (*PriceTable, error) {
	var doc struct {
		AsOf   string           `yaml:"as_of"`
		Prices map[string]Price `yaml:"prices"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b), yaml.Strict(), yaml.DisallowUnknownField())
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	for k, p := range doc.Prices {
		if err := checkPriceKey(k); err != nil {
			return nil, fmt.Errorf("price table %q: %w", k, err)
		}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("price table %q: %w", k, err)
		}
	}
	return &PriceTable{asOf: doc.AsOf, entries: doc.Prices}, nil
}

// NewPriceTable returns the shipped table with the config's overrides
// applied on top.
func NewPriceTable(overrides map[string]Price) (*PriceTable, error) {
	t, err := ShippedPrices()
	if err != nil {
		return nil, err
	}
	return t.With(overrides), nil
}

// With returns a copy of t in which the given entries replace or add to
// t's.
func (t *PriceTable) With(overrides map[string]Price) *PriceTable {
	out := &PriceTable{asOf: t.asOf, entries: maps.Clone(t.entries)}
	if out.entries == nil {
		out.entries = map[string]Price{}
	}
	maps.Copy(out.entries, overrides)
	return out
}

// AsOf is the date the shipped prices were checked.
func (t *PriceTable) AsOf() string { return t.asOf }

// snapshotSuffix matches the date or version that providers append to a
// model id for a fixed snapshot: -2025-08-06, -20250929, @20250929, -001.
var snapshotSuffix = regexp.MustCompile(`([-@](\d{4}-\d{2}-\d{2}|\d{8})|-\d{3}|-latest)$`)

// Lookup returns the price of a provider's model: the exact entry, else
// the entry of the model a dated snapshot id belongs to, else the
// provider's "*" entry. ok is false when the price is unknown.
func (t *PriceTable) Lookup(provider, model string) (p Price, ok bool) {
	if t == nil {
		return Price{}, false
	}
	id := strings.ToLower(model)
	if p, ok := t.entries[provider+"/"+id]; ok {
		return p, true
	}
	if base := snapshotSuffix.ReplaceAllString(id, ""); base != id {
		if p, ok := t.entries[provider+"/"+base]; ok {
			return p, true
		}
	}
	p, ok = t.entries[provider+"/*"]
	return p, ok
}

// Cost is what a call with usage u costs at price p, in USD.
func (p Price) Cost(u Usage) float64 {
	in, out, cachedIn, cacheWrite := p.Input, p.Output, p.CachedInput, p.CacheWrite
	for _, t := range p.Tiers {
		if u.InputTokens > t.AboveInputTokens {
			in, out, cachedIn, cacheWrite = t.Input, t.Output, t.CachedInput, t.CacheWrite
		}
	}
	cr, cw := in, in
	if cachedIn != nil {
		cr = *cachedIn
	}
	if cacheWrite != nil {
		cw = *cacheWrite
	}
	cached := min(max(u.CachedTokens, 0), max(u.InputTokens, 0))
	written := min(max(u.CacheWriteTokens, 0), max(u.InputTokens-cached, 0))
	plain := max(u.InputTokens-cached-written, 0)
	usd := float64(plain)*in + float64(cached)*cr + float64(written)*cw + float64(max(u.OutputTokens, 0))*out
	return usd / 1e6
}

// String shows the price as "in $1.25 / out $10.00 / cached $0.125 per 1M".
func (p Price) String() string {
	s := fmt.Sprintf("in $%s / out $%s", money(p.Input), money(p.Output))
	if p.CachedInput != nil {
		s += " / cached $" + money(*p.CachedInput)
	}
	if p.CacheWrite != nil {
		s += " / cache write $" + money(*p.CacheWrite)
	}
	s += " per 1M tokens"
	if len(p.Tiers) > 0 {
		s += fmt.Sprintf(" (dearer above %d input tokens)", p.Tiers[0].AboveInputTokens)
	}
	return s
}

func money(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	return s
}
