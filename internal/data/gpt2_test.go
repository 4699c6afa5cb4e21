package data

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// knownGPT2 holds GPT-2 encodings computed by an independent
// implementation (OpenAI's tiktoken "gpt2" encoding as ported to
// JavaScript, with its own regular-expression engine), pinned here.
var knownGPT2 = []struct {
	text   string
	tokens []uint16
}{
	{"hello world", []uint16{31373, 995}},
	{"Hello world", []uint16{15496, 995}},
	{"<|endoftext|>", []uint16{27, 91, 437, 1659, 5239, 91, 29}},
	{"hello <|endoftext|> world", []uint16{31373, 1279, 91, 437, 1659, 5239, 91, 29, 995}},
	{"The quick brown fox jumps over the lazy dog.", []uint16{464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13}},
	{"  leading and trailing spaces  ", []uint16{220, 3756, 290, 25462, 9029, 220, 220}},
	{"line one\nline two\n\n\nline five\r\n", []uint16{1370, 530, 198, 1370, 734, 628, 198, 1370, 1936, 201, 198}},
	{"tabs\tand\tmore\t\ttabs", []uint16{8658, 82, 197, 392, 197, 3549, 197, 197, 8658, 82}},
	{"I'm sure they'll say it's John's, we've seen 'em. You'd think so? DON'T SHOUT", []uint16{40, 1101, 1654, 484, 1183, 910, 340, 338, 1757, 338, 11, 356, 1053, 1775, 705, 368, 13, 921, 1549, 892, 523, 30, 23917, 6, 51, 6006, 12425}},
	{"Numbers: 0 00 000 0000 1234567890 3.14159 -42 1,000,000 2024-05-20", []uint16{49601, 25, 657, 3571, 12877, 17643, 17031, 2231, 30924, 3829, 513, 13, 1415, 19707, 532, 3682, 352, 11, 830, 11, 830, 48609, 12, 2713, 12, 1238}},
	{"Unicode: café naïve Zürich Ελληνικά русский 日本語のテキスト 한국어", []uint16{3118, 291, 1098, 25, 40304, 41492, 1168, 9116, 7527, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 220, 21169, 35072, 21727, 21727, 31583, 18849, 140, 117, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112}},
	{"Emoji 😀👍🏽 and ❤\ufe0f and 🇫🇷 flags", []uint16{36, 5908, 7285, 30325, 222, 41840, 235, 8582, 237, 121, 290, 43074, 97, 37929, 290, 12520, 229, 104, 8582, 229, 115, 9701}},
	{"Math ½ ² ³ Ⅻ ٣ ४ symbols ∑∫√ ≤≥", []uint16{37372, 25208, 1587, 110, 1587, 111, 2343, 227, 104, 18923, 96, 220, 24231, 103, 14354, 18872, 239, 24861, 104, 24861, 248, 41305, 35705, 98}},
	{"non\u00a0breaking\u3000ideographic\u2028separator", []uint16{13159, 1849, 13395, 5099, 222, 485, 6826, 447, 101, 25512, 1352}},
	{"multiple     spaces    here", []uint16{48101, 220, 220, 220, 220, 9029, 220, 220, 220, 994}},
	{"e\u0301 combining accent and a\u0308", []uint16{68, 136, 223, 19771, 18702, 290, 257, 136, 230}},
	{"code: for (int i = 0; i < n; i++) { x += y[i]; }", []uint16{8189, 25, 329, 357, 600, 1312, 796, 657, 26, 1312, 1279, 299, 26, 1312, 29577, 1391, 2124, 15853, 331, 58, 72, 11208, 1782}},
	{"https://example.com/path?query=1&b=2#frag", []uint16{5450, 1378, 20688, 13, 785, 14, 6978, 30, 22766, 28, 16, 5, 65, 28, 17, 2, 8310, 363}},
	{"   ", []uint16{220, 220, 220}},
	{"\n", []uint16{198}},
	{"a", []uint16{64}},
	{"'s 'S 'll 'LL 're 'x", []uint16{338, 705, 50, 705, 297, 705, 3069, 705, 260, 705, 87}},
	{"end with space ", []uint16{437, 351, 2272, 220}},
	{"end with newline\n", []uint16{437, 351, 649, 1370, 198}},
	{"----------------------------------------------------------------", []uint16{10097}},
	{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", []uint16{24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794, 24794}},
}

var testGPT2 = sync.OnceValues(NewGPT2)

func mustGPT2(t testing.TB) *GPT2 {
	t.Helper()
	tok, err := testGPT2()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGPT2KnownEncodings(t *testing.T) {
	tok := mustGPT2(t)
	enc := tok.NewEncoder()
	for _, c := range knownGPT2 {
		got := enc.Encode(nil, []byte(c.text))
		if !slices.Equal(got, c.tokens) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.text, got, c.tokens)
		}
		if dec := string(tok.Decode(got)); dec != c.text {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, dec)
		}
	}
	// The same encoder again: answers now come from its cache.
	for _, c := range knownGPT2 {
		if got := enc.Encode(nil, []byte(c.text)); !slices.Equal(got, c.tokens) {
			t.Errorf("cached Encode(%q) = %v, want %v", c.text, got, c.tokens)
		}
	}
}

func TestGPT2Vocabulary(t *testing.T) {
	tok := mustGPT2(t)
	if tok.VocabSize() != 50257 || tok.BOS() != 50256 || tok.Name() != "gpt2" {
		t.Errorf("vocab %d, BOS %d, name %q", tok.VocabSize(), tok.BOS(), tok.Name())
	}
	if got := string(tok.Decode([]uint16{50256})); got != "<|endoftext|>" {
		t.Errorf("Decode(50256) = %q", got)
	}
	// Every token whose bytes form one pre-token encodes back to itself.
	enc := tok.NewEncoder()
	for id := range uint16(50256) {
		b := tok.Decode([]uint16{id})
		if nextPiece(b, 0) != len(b) {
			continue // not a single pre-token, e.g. " \n"
		}
		if got := enc.Encode(nil, b); len(got) != 1 || got[0] != id {
			t.Fatalf("token %d (%q) encodes to %v", id, b, got)
		}
	}
}

// tiktokenGPT2 builds tiktoken-go's r50k_base from the embedded ranks
// without touching its package-level loader.
func tiktokenGPT2(t testing.TB) *tiktoken.Tiktoken {
	t.Helper()
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(gpt2RanksFile)
	if err != nil {
		t.Fatal(err)
	}
	const pat = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	special := map[string]int{"<|endoftext|>": 50256}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, pat)
	if err != nil {
		t.Fatal(err)
	}
	return tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: "r50k_base", PatStr: pat, MergeableRanks: ranks, SpecialTokens: special}, map[string]any{"<|endoftext|>": true})
}

// randomText returns text that exercises every branch of the
// pre-tokenizer: words from the vocabulary and made-up ones, contractions
// in both cases, every kind of white space, digits and other numbers,
// letters of many scripts, combining marks, emoji sequences, random code
// points, and long runs that take the heap merge.
func randomText(rng *rand.Rand, tok *GPT2, n int) string {
	spaces := []string{" ", " ", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\t", " \n", "\n ", "\u00a0", "\u3000", "\u2028", "\u0085", "\v", "\f", " \t ", "\u2009"}
	puncts := []string{".", ",", ";", ":", "!", "?", "'", "\"", "(", ")", "[", "]", "-", "\u2014", "\u2026", "\u00ab", "\u00bb", "'", "''", "#", "@", "<|endoftext|>", "$", "%", "&"}
	contractions := []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'x"}
	numbers := []string{"0", "42", "1999", "3.14", "1,000", "\u00bd", "\u00b2", "\u0663\u0664", "\u216b", "\u0966\u0967", "000000000000"}
	scripts := []string{"caf\u00e9", "na\u00efve", "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1", "\u0440\u0443\u0441\u0441\u043a\u0438\u0439", "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u0939\u093f\u0928\u094d\u0926\u0940", "e\u0301", "a\u0308\u0308", "\U0001f600", "\U0001f44d\U0001f3fd", "\u2764\ufe0f", "\U0001f1eb\U0001f1f7", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u0e44\u0e17\u0e22", "\u05e2\u05d1\u05e8\u05d9\u05ea"}
	var b strings.Builder
	for b.Len() < n {
		switch k := rng.IntN(100); {
		case k < 40:
			id := uint16(rng.IntN(50256))
			w := tok.Decode([]uint16{id})
			if utf8.Valid(w) {
				b.Write(w)
			}
		case k < 55:
			b.WriteString(spaces[rng.IntN(len(spaces))])
		case k < 65:
			b.WriteString(puncts[rng.IntN(len(puncts))])
		case k < 70:
			b.WriteString(contractions[rng.IntN(len(contractions))])
		case k < 77:
			b.WriteString(numbers[rng.IntN(len(numbers))])
		case k < 87:
			b.WriteString(scripts[rng.IntN(len(scripts))])
		case k < 95:
			for range 1 + rng.IntN(8) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		case k < 99:
			// A random valid code point of any plane.
			for {
				r := rune(rng.IntN(0x30000))
				if utf8.ValidRune(r) && r != utf8.RuneError {
					b.WriteRune(r)
					break
				}
			}
		default:
			run := []string{"a", "-", "=", "ab", "\u00e9", "1", " ", "\U0001f600", "*"}[rng.IntN(9)]
			b.WriteString(strings.Repeat(run, 100+rng.IntN(400)))
		}
	}
	return b.String()
}

func TestGPT2MatchesTiktoken(t *testing.T) {
	tok := mustGPT2(t)
	ref := tiktokenGPT2(t)
	enc := tok.NewEncoder()
	rng := rand.New(rand.NewPCG(1, 2))
	docs, size := 400, 2000
	if testing.Short() {
		docs = 50
	}
	for d := range docs {
		text := randomText(rng, tok, size+rng.IntN(size))
		got := enc.Encode(nil, []byte(text))
		want := ref.EncodeOrdinary(text)
		if !equalInts(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("doc %d differs from tiktoken at token %d: got %v, want %v\naround %q", d, i, got[i:min(i+5, len(got))], want[i:min(i+5, len(want))], tok.Decode(got[max(i-5, 0):min(i+5, len(got))]))
		}
	}
}

func equalInts(got []uint16, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if int(got[i]) != want[i] {
			return false
		}
	}
	return true
}

func firstDiff(got []uint16, want []int) int {
	for i := range min(len(got), len(want)) {
		if int(got[i]) != want[i] {
			return i
		}
	}
	return min(len(got), len(want))
}

// Every single rune, alone and between letters, is split and merged as
// tiktoken does: this pins the character classes (\s, \p{L}, \p{N}) for
// the whole Basic Multilingual Plane.
func TestGPT2ClassesMatchTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes every BMP code point")
	}
	tok := mustGPT2(t)
	ref := tiktokenGPT2(t)
	enc := tok.NewEncoder()
	var b strings.Builder
	flush := func() {
		text := b.String()
		if got, want := enc.Encode(nil, []byte(text)), ref.EncodeOrdinary(text); !equalInts(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("differs from tiktoken at token %d near %q", i, tok.Decode(got[max(i-3, 0):min(i+3, len(got))]))
		}
		b.Reset()
	}
	for r := rune(0); r < 0x10000; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		b.WriteString("a ")
		b.WriteRune(r)
		b.WriteString("b ")
		b.WriteRune(r)
		b.WriteString("  ")
		b.WriteRune(r)
		if b.Len() > 1<<14 {
			flush()
		}
	}
	flush()
}

func TestGPT2HeapMergeMatchesScan(t *testing.T) {
	tok := mustGPT2(t)
	e := tok.NewEncoder().(*gpt2Encoder)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		var piece []byte
		switch i % 4 {
		case 0: // a long run of one pre-token class
			piece = []byte(strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(600)))
		case 1: // random letters
			for range 1 + rng.IntN(600) {
				piece = append(piece, byte('a'+rng.IntN(26)))
			}
		case 2: // random bytes, invalid UTF-8 included: merging is byte-level
			for range 1 + rng.IntN(600) {
				piece = append(piece, byte(rng.IntN(256)))
			}
		case 3: // a random vocabulary token repeated
			w := tok.Decode([]uint16{uint16(rng.IntN(50256))})
			piece = []byte(strings.Repeat(string(w), 1+rng.IntN(60)))
		}
		scan := e.mergeScan(nil, piece)
		hp := e.mergeHeap(nil, piece)
		if !slices.Equal(scan, hp) {
			t.Fatalf("piece %q: scan %v, heap %v", piece, scan, hp)
		}
		if string(tok.Decode(hp)) != string(piece) {
			t.Fatalf("piece %q does not round-trip", piece)
		}
	}
}

// Cutting text where safeSplit allows never changes its tokens: Prepare
// relies on this to stream documents of any length.
func TestSafeSplit(t *testing.T) {
	tok := mustGPT2(t)
	enc := tok.NewEncoder()
	rng := rand.New(rand.NewPCG(5, 6))
	cuts := 0
	for range 100 {
		text := []byte(randomText(rng, tok, 500))
		whole := enc.Encode(nil, text)
		for i := range text {
			if !safeSplit(text, i) {
				continue
			}
			cuts++
			parts := enc.Encode(enc.Encode(nil, text[:i]), text[i:])
			if !slices.Equal(parts, whole) {
				t.Fatalf("cut at %d of %q changes the tokens", i, text)
			}
		}
	}
	if cuts < 1000 {
		t.Errorf("only %d cuts tested", cuts)
	}
	for _, c := range []struct {
		text string
		at   int
		ok   bool
	}{
		{"ab cd", 2, true},
		{"ab  cd", 3, false}, // inside a run of spaces
		{"ab\ncd", 2, true},
		{" ab", 0, false},
		{"ab", 1, false},
		{"\u00e9 x", 2, true},
		{"\u00a0 x", 2, false}, // the rune before is white space
	} {
		if got := safeSplit([]byte(c.text), c.at); got != c.ok {
			t.Errorf("safeSplit(%q, %d) = %v, want %v", c.text, c.at, got, c.ok)
		}
	}
}

func TestByteTokenizer(t *testing.T) {
	tok, err := NewTokenizer("byte")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 257 || tok.BOS() != 256 {
		t.Errorf("vocab %d BOS %d", tok.VocabSize(), tok.BOS())
	}
	got := tok.NewEncoder().Encode([]uint16{256}, []byte("h\u00e9"))
	if want := []uint16{256, 'h', 0xc3, 0xa9}; !slices.Equal(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
	if _, err := NewTokenizer("gpt4"); err == nil || !strings.Contains(err.Error(), "gpt2") {
		t.Errorf("unknown tokenizer: %v", err)
	}
}

func TestRuneClass(t *testing.T) {
	for _, c := range []struct {
		r   rune
		cls uint8
	}{{' ', clsSpace}, {'\u3000', clsSpace}, {'\u0085', clsSpace}, {'\ufeff', clsOther}, {'x', clsLetter}, {'\u00e9', clsLetter}, {'7', clsNumber}, {'\u00bd', clsNumber}, {'\u0301', clsOther}, {'_', clsOther}} {
		if got := runeClass(c.r); got != c.cls {
			t.Errorf("runeClass(%U) = %d, want %d", c.r, got, c.cls)
		}
	}
}
