package evolve

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// allMembers returns every member of p: those in flight themselves, the
// settled ones as copies.
func allMembers(p *population) []*store.Child {
	var out []*store.Child
	for _, c := range p.live {
		out = append(out, c)
	}
	for i := range p.n {
		if id := p.packedAt(i).id; p.at[id] == i { // a member settled twice is its newest
			out = append(out, p.member(id))
		}
	}
	return out
}

// rankedMembers is p.ranked(island) as members.
func rankedMembers(p *population, island int) []*store.Child {
	var out []*store.Child
	for _, i := range p.ranked(island) {
		out = append(out, p.get(i))
	}
	return out
}

// sameChild reports the first field in which a and b differ: floats bit
// for bit (NaN included), times as == compares them (instant, clock
// reading and location), after want's monotonic reading is stripped.
func sameChild(t *testing.T, got, want *store.Child) {
	t.Helper()
	g, w := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := 0; i < g.NumField(); i++ {
		name := g.Type().Field(i).Name
		a, b := g.Field(i).Interface(), w.Field(i).Interface()
		same := false
		switch b := b.(type) {
		case float64:
			same = math.Float64bits(a.(float64)) == math.Float64bits(b)
		case time.Time:
			same = a.(time.Time) == b.Round(0)
		default:
			same = a == b
		}
		if !same {
			t.Fatalf("child %d: %s is %#v, want %#v", want.ID, name, a, b)
		}
	}
}

// pointerFree reports whether values of type t hold no pointers.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func TestPackedHasNoPointers(t *testing.T) {
	if !pointerFree(reflect.TypeFor[packed]()) {
		t.Error("a packed member holds pointers: the collector scans every settled member")
	}
}

// A settled member reads back equal, field for field, to what settled:
// every field set, odd texts and hashes, extreme numbers, times of every
// kind.
func TestPackedRoundTrip(t *testing.T) {
	sha := strings.Repeat("0123456789abcdef", 4)
	zone := time.FixedZone("odd", -(3*3600 + 1800))
	now := time.Now() // with a monotonic reading, which is not kept
	texts := []string{"", "x", "héllo\n\t\x00 nul", "\xff\xfe not UTF-8", strings.Repeat("long ", 10000), sha,
		strings.ToUpper(sha), sha[:63], sha + "0", strings.Repeat("g", 64)}
	times := []time.Time{{}, now, now.UTC(), now.In(zone), time.UnixMilli(1765000000123), time.UnixMilli(0),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.Local),
		time.Date(1600, 2, 29, 1, 2, 3, 4, zone), time.Time{}.In(time.Local)}
	floats := []float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64, -3}
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 40}
	r := rand.New(rand.NewPCG(5, 5))
	text := func() string { return texts[r.IntN(len(texts))] }
	num := func() int64 { return ints[r.IntN(len(ints))] }
	flt := func() float64 { return floats[r.IntN(len(floats))] }
	tm := func() time.Time { return times[r.IntN(len(times))] }
	words := []string{"", "acceptable", "loss_too_high", "error", "done", "seed", "migrant", "llm", "odd word ü"}
	word := func() string { return words[r.IntN(len(words))] }

	p := newPopulation(ObjectiveTime, 3, 4)
	var all []*store.Child
	for id := int64(1); id <= 400; id++ {
		c := &store.Child{ID: id, RunID: num(), Iteration: int(num()), Slot: int(num()), Island: int(num() % 4), ParentID: num(),
			Origin: runs.Origin(word()), SourceID: num(), Model: text(), Stage: runs.Stage(word()), Template: text(),
			Seed: uint64(num()), State: runs.State(word()), ProgramHash: text(), NormHash: text(), Description: text(),
			Idea: text(), FixAttempts: int(num()), Verdict: runs.Verdict(word()), Reason: text(), Error: text(),
			FastEvaluationID: num(), EvaluationID: num(), ValLoss: flt(), TrainTimeMs: flt(), StepAvgMs: flt(), Score: flt(),
			Summary: text(), InputTokens: num(), OutputTokens: num(), CostUSD: flt(), CreatedAt: tm(), UpdatedAt: tm(), FinishedAt: tm()}
		if id%3 == 0 {
			c.State, c.Verdict, c.ProgramHash = runs.Done, runs.Acceptable, sha // one that ranks and holds a program
			c.Island = int(id % 3)
		}
		want := *c
		p.add(c)
		if p.member(id) != c {
			t.Fatal("a member in flight is not the record itself")
		}
		p.settle(c)
		all = append(all, &want)
	}
	for _, want := range all {
		got := p.member(want.ID)
		if got == nil {
			t.Fatalf("child %d is lost", want.ID)
		}
		sameChild(t, got, want)
		if got == p.member(want.ID) {
			t.Fatalf("child %d: a settled member is handed out twice as the same record", want.ID)
		}
		k := rankKey(ObjectiveTime, want)
		if pk := p.packedAt(p.at[want.ID]).key(); math.Float64bits(pk.value) != math.Float64bits(k.value) || pk.rank != k.rank || pk.id != k.id {
			t.Fatalf("child %d: packed rank key %+v, want %+v", want.ID, pk, k)
		}
	}
	// The store's update time, taken after the member settled.
	c := all[10]
	c.UpdatedAt = time.UnixMilli(1765000009999)
	p.restamp(c)
	sameChild(t, p.member(c.ID), c)
	// Over several chunks.
	for id := int64(1000); id < 10000; id++ {
		c := child(id, int(id%3), runs.Acceptable, float64(id), float64(id%97))
		c.Description = strings.Repeat("d", int(id%5))
		all = append(all, c)
		p.settle(c)
	}
	for _, want := range all {
		sameChild(t, p.member(want.ID), want)
	}
}

// The dedup index and the islands' sets of hashes answer as maps of
// strings do, for hashes of any form.
func TestHashMap(t *testing.T) {
	sha := strings.Repeat("0123456789abcdef", 4)
	m := newHashMap[int64]()
	keys := []string{"", sha, strings.ToUpper(sha), sha[:63], "na", strings.Repeat("g", 64)}
	for i, k := range keys {
		if _, ok := m.get(k); ok {
			t.Fatalf("%q found before it was set", k)
		}
		m.set(k, int64(i+1))
	}
	for i, k := range keys {
		if v, ok := m.get(k); !ok || v != int64(i+1) {
			t.Errorf("%q: %d %v, want %d", k, v, ok, i+1)
		}
	}
	if len(m.sha) != 1 || len(m.other) != len(keys)-1 {
		t.Errorf("%d hashes as bytes, %d as strings", len(m.sha), len(m.other))
	}
}

// hexHash reads exactly the lower-case hex of a SHA-256, and allocates
// nothing (it runs on every dedup lookup and settle).
func TestHexHash(t *testing.T) {
	for i := 0; i < 1000; i++ {
		sum := sha256.Sum256([]byte{byte(i), byte(i >> 8)})
		s := hex.EncodeToString(sum[:])
		h, ok := hexHash(s)
		if !ok || h != sum {
			t.Fatal(s)
		}
	}
	for _, s := range []string{"", "ab", string(make([]byte, 64)), "A" + hex.EncodeToString(make([]byte, 32))[1:], "g" + hex.EncodeToString(make([]byte, 32))[1:]} {
		if _, ok := hexHash(s); ok {
			t.Fatalf("%q accepted", s)
		}
	}
	s := hex.EncodeToString(make([]byte, 32))
	if n := testing.AllocsPerRun(100, func() { hexHash(s) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
