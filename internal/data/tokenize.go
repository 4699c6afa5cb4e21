package data

import "fmt"

// Tokenizer turns documents into the token ids a shard holds.
type Tokenizer interface {
	// Name is how the command line and manifests call it.
	Name() string
	// VocabSize bounds every id it produces, BOS included.
	VocabSize() int
	// BOS is the id put before every document.
	BOS() uint16
	// NewEncoder returns an Encoder for one goroutine.
	NewEncoder() Encoder
}

// Encoder appends the tokens of text (without BOS) to dst. An Encoder may
// keep caches, so it is not safe for concurrent use; a Tokenizer hands out
// one per goroutine.
type Encoder interface {
	Encode(dst []uint16, text []byte) []uint16
}

// Tokenizer names accepted by NewTokenizer.
const (
	TokenizerGPT2 = "gpt2"
	TokenizerByte = "byte"
)

// NewTokenizer returns the tokenizer called name: "gpt2" (GPT-2 BPE, vocab
// 50257, BOS 50256) or "byte" (one token per byte, vocab 257, BOS 256).
func NewTokenizer(name string) (Tokenizer, error) {
	switch name {
	case TokenizerGPT2:
		return NewGPT2()
	case TokenizerByte:
		return ByteTokenizer{}, nil
	}
	return nil, fmt.Errorf("unknown tokenizer %q: use %q (GPT-2 BPE, as the speedrun) or %q (one token per byte)", name, TokenizerGPT2, TokenizerByte)
}

// ByteTokenizer maps each byte of the UTF-8 text to its value, 0-255, and
// puts 256 before each document: a vocabulary of 257 that needs no
// training and no tables, for small experiments.
type ByteTokenizer struct{}

// Byte tokenizer ids.
const (
	ByteVocabSize = 257
	ByteBOS       = 256
)

// Name is "byte".
func (ByteTokenizer) Name() string { return TokenizerByte }

// VocabSize is 257.
func (ByteTokenizer) VocabSize() int { return ByteVocabSize }

// BOS is 256.
func (ByteTokenizer) BOS() uint16 { return ByteBOS }

// NewEncoder returns the tokenizer itself: it keeps no state.
func (ByteTokenizer) NewEncoder() Encoder { return ByteTokenizer{} }

// Encode appends one token per byte.
func (ByteTokenizer) Encode(dst []uint16, text []byte) []uint16 {
	dst = growTokens(dst, len(text))
	for _, c := range text {
		dst = append(dst, uint16(c))
	}
	return dst
}

// growTokens makes room for n more tokens in dst.
func growTokens(dst []uint16, n int) []uint16 {
	if cap(dst)-len(dst) < n {
		grown := make([]uint16, len(dst), len(dst)+n+len(dst)/2)
		copy(grown, dst)
		dst = grown
	}
	return dst
}
