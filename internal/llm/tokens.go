package llm

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// cl100kPattern is the pre-tokenizer regular expression of OpenAI's
// cl100k_base encoding.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// cl100k loads the tokenizer once, on first use: it takes ~100 ms and tens
// of MB, and is needed only when a server reports no usage. It is built
// from the embedded vocabulary directly rather than through
// tiktoken.SetBpeLoader, which would change that package's global state.
var cl100k = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, err
	}
	special := map[string]int{
		"<|endoftext|>":   100257,
		"<|fim_prefix|>":  100258,
		"<|fim_middle|>":  100259,
		"<|fim_suffix|>":  100260,
		"<|endofprompt|>": 100276,
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, cl100kPattern)
	if err != nil {
		return nil, err
	}
	set := map[string]any{}
	for k := range special {
		set[k] = true
	}
	enc := &tiktoken.Encoding{Name: "cl100k_base", PatStr: cl100kPattern, MergeableRanks: ranks, SpecialTokens: special}
	return tiktoken.NewTiktoken(bpe, enc, set), nil
})

// EstimateTokens counts the tokens of s with the cl100k_base tokenizer.
// Other providers' tokenizers differ by some percent; the figure is an
// estimate for budgets and cost when a server reports nothing. If the
// tokenizer cannot load, it falls back to one token per four bytes.
func EstimateTokens(s string) int64 {
	if s == "" {
		return 0
	}
	enc, err := cl100k()
	if err != nil {
		return int64(len(s)+3) / 4
	}
	return int64(len(enc.EncodeOrdinary(s)))
}

// EstimateInputTokens estimates the prompt tokens of a request, counting
// the few tokens each message adds for its role and separators as OpenAI's
// chat format does.
func EstimateInputTokens(req Request) int64 {
	const perMessage, priming = 3, 3
	n := int64(priming)
	if req.System != "" {
		n += perMessage + EstimateTokens(req.System)
	}
	for _, m := range req.Messages {
		n += perMessage + EstimateTokens(m.Content)
	}
	return n
}
