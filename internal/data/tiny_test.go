package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// testSecret returns a fixed secret for tests: the corpus of an
// installation whose secret it is.
func testSecret(n int) TinySecret {
	return sha256.Sum256(fmt.Appendf(nil, "frontier tiny test secret %d", n))
}

// pinnedTinyValSHA256 is the SHA-256 of the default validation shard
// (tiny_val_000000.bin) drawn from testSecret(1). It pins the generator: a
// secret must give the same bytes on every machine and with every build,
// and any change to the tables, the sampling code, the seed derivation or
// DefaultTinyParams changes it. If a change is deliberate, bump
// tinyVersion (so installed corpora are rebuilt), put the new hash here
// and recalibrate the tiny track's target.
const pinnedTinyValSHA256 = "369a7d841cf5e922aa93150124269cc2725d7eb28b09b25c00ff72cf40f28778"

func TestTinyValShardPinned(t *testing.T) {
	p := DefaultTinyParams()
	m, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeShard(m.Generate(0, p.ValShardTokens))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != pinnedTinyValSHA256 {
		t.Fatalf("the tiny val shard of the test secret changed: sha256 %s, pinned %s (see the comment on pinnedTinyValSHA256)", got, pinnedTinyValSHA256)
	}
}

func TestTinyDeterministic(t *testing.T) {
	p := DefaultTinyParams()
	m1, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := NewTinyModel(p, testSecret(1))
	a, b := m1.Generate(3, 50000), m2.Generate(3, 50000)
	if !slices.Equal(a, b) {
		t.Fatal("two generations of the same shard differ")
	}
	// A shard's prefix does not depend on its length.
	if !slices.Equal(m1.Generate(3, 1000), a[:1000]) {
		t.Error("a shorter generation is not a prefix of a longer one")
	}
	// Shards are independent streams.
	if slices.Equal(m1.Generate(4, 1000), a[:1000]) {
		t.Error("shards 3 and 4 are identical")
	}
	// Another secret draws other tables and another sample.
	m3, _ := NewTinyModel(p, testSecret(2))
	if slices.Equal(m3.Generate(3, 1000), a[:1000]) {
		t.Error("changing the secret did not change the corpus")
	}
	if slices.Equal(m3.weight, m1.weight) || slices.Equal(m3.base, m1.base) || slices.Equal(m3.keyW, m1.keyW) {
		t.Error("changing the secret left some tables unchanged")
	}
}

func TestTinySecretDerivation(t *testing.T) {
	s := testSecret(1)
	a, b := s.stream("tables"), s.stream("shard 0")
	if a.Uint64() == b.Uint64() {
		t.Error("two labels give the same stream")
	}
	f := s.Fingerprint()
	if len(f) != 16 || f == testSecret(2).Fingerprint() {
		t.Errorf("fingerprint %q", f)
	}
	if f != s.Fingerprint() {
		t.Error("fingerprint is not a function of the secret")
	}
	text := hex.EncodeToString(s[:])
	if got, err := ParseTinySecret(text + "\n"); err != nil || got != s {
		t.Errorf("ParseTinySecret round trip: %v", err)
	}
	for _, bad := range []string{"", text[:62], text + "00", "zz" + text[2:]} {
		if _, err := ParseTinySecret(bad); err == nil {
			t.Errorf("ParseTinySecret(%q) accepted", bad)
		}
	}
}

// TestTinyInvariants checks the generator's story on a long stretch: token
// ranges, grammar (a key is followed by a value and nothing else is),
// bindings that never change inside a document, BOS never twice in a row,
// and the rates the parameters set.
func TestTinyInvariants(t *testing.T) {
	p := DefaultTinyParams()
	m, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		t.Fatal(err)
	}
	toks := m.Generate(1, 400000)
	if toks[0] != m.BOS() || m.BOS() != 255 {
		t.Fatalf("shard starts with %d, BOS is %d; want 255", toks[0], m.BOS())
	}
	bound := map[uint16]uint16{}
	seen := map[uint16]bool{}
	var docs, content, repeats, keys int
	for i := 1; i < len(toks); i++ {
		prev, cur := toks[i-1], toks[i]
		pc, cc := m.class(prev), m.class(cur)
		if cc == classUnused {
			t.Fatalf("token %d at %d is in the unused range", cur, i)
		}
		if (pc == classKey) != (cc == classValue) {
			t.Fatalf("%s followed by %s at %d", classNames[pc], classNames[cc], i)
		}
		switch {
		case pc == classBOS && cc == classBOS:
			t.Fatalf("empty document at %d", i)
		case cc == classValue:
			if v, ok := bound[prev]; ok && v != cur {
				t.Fatalf("key %d bound to %d, then %d at %d", prev, v, cur, i)
			}
			bound[prev] = cur
		case cc == classKey:
			keys++
		case cc == classContent:
			content++
			if seen[cur] {
				repeats++
			}
			seen[cur] = true
		case cc == classBOS:
			docs++
			clear(bound)
			clear(seen)
		}
	}
	n := float64(len(toks))
	// Documents end at a chain position with probability 1/256; keys add
	// a value each, so a document averages 256 * (1 + key share) tokens.
	keyShare := float64(keys) / n
	if mean := n / float64(docs+1); mean < 240 || mean > 320 {
		t.Errorf("mean document length %.1f, want about %.0f", mean, 256*(1+keyShare))
	}
	if keyShare < 0.04 || keyShare > 0.08 {
		t.Errorf("keys are %.3f of tokens, want about 0.06", keyShare)
	}
	// Content tokens are a large share, and the cache makes most of them
	// repeats within their document.
	if share := float64(content) / n; share < 0.35 || share > 0.5 {
		t.Errorf("content tokens are %.3f of tokens", share)
	}
	if r := float64(repeats) / float64(content); r < 0.7 {
		t.Errorf("only %.3f of content tokens repeat one earlier in their document", r)
	}
}

func TestTinyParamsValidate(t *testing.T) {
	if err := DefaultTinyParams().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*TinyParams){
		"vocab too small": func(p *TinyParams) { p.Vocab = 200 },
		"no topics":       func(p *TinyParams) { p.Topics = 0 },
		"support":         func(p *TinyParams) { p.Support = 17 },
		"end chance":      func(p *TinyParams) { p.EndNum = 0 },
		"rows":            func(p *TinyParams) { p.ContentPermille = 950 },
		"alpha":           func(p *TinyParams) { p.AlphaDen = 0 },
		"class picks":     func(p *TinyParams) { p.ClassPicks = p.Classes + 1 },
	} {
		p := DefaultTinyParams()
		f(&p)
		if _, err := NewTinyModel(p, testSecret(1)); err == nil {
			t.Errorf("%s: NewTinyModel accepted %+v", name, p)
		}
	}
}

func TestUniform(t *testing.T) {
	// uniform(n) never reaches n and hits every value about equally.
	src := rand.NewPCG(1, 2)
	seen := make([]int, 7)
	for range 7000 {
		v := uniform(src, 7)
		if v >= 7 {
			t.Fatalf("uniform(7) = %d", v)
		}
		seen[v]++
	}
	for v, n := range seen {
		if n < 850 || n > 1150 {
			t.Errorf("uniform(7) gave %d %d times in 7000", v, n)
		}
	}
}
