package propose

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/bounded"
	"github.com/frontier-bench/frontier/internal/llm"
)

// Record is one recorded model answer: one JSON object per line of a
// replay file (JSON Lines). Only "answer" is required.
//
//	{"prompt_hash":"3f1c…","answer":"<<<<<<< SEARCH\n…","model":"openai/gpt-5",
//	 "provider":"openai","finish_reason":"stop",
//	 "usage":{"input_tokens":5120,"output_tokens":380,"reasoning_tokens":0,"cached_tokens":0},
//	 "cost_usd":0.0102,"latency_ms":8123}
type Record struct {
	// PromptHash is PromptHash of the request that got this answer. When
	// set, the answer is replayed only for a request with the same hash;
	// when empty, answers are replayed in file order.
	PromptHash   string    `json:"prompt_hash,omitempty"`
	Answer       string    `json:"answer"`
	Model        string    `json:"model,omitempty"`
	Provider     string    `json:"provider,omitempty"`
	FinishReason string    `json:"finish_reason,omitempty"`
	Usage        llm.Usage `json:"usage"`
	CostUSD      float64   `json:"cost_usd"`
	LatencyMS    int64     `json:"latency_ms,omitempty"`
}

// PromptHash identifies a prompt for replay: the SHA-256, in hex, of the
// JSON encoding of its system prompt and messages. The model spec and the
// sampling settings are left out, so a recording can be replayed under
// another model name.
func PromptHash(prompt llm.Request) string {
	b, _ := json.Marshal(struct {
		System   string        `json:"system"`
		Messages []llm.Message `json:"messages"`
	}{prompt.System, prompt.Messages}) // cannot fail: plain strings
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// NewRecord returns the record of a model's response to prompt.
func NewRecord(prompt llm.Request, resp *llm.Response) Record {
	return Record{
		PromptHash:   PromptHash(prompt),
		Answer:       resp.Text,
		Model:        resp.Model,
		Provider:     resp.Provider,
		FinishReason: resp.FinishReason,
		Usage:        resp.Usage,
		CostUSD:      resp.CostUSD,
		LatencyMS:    resp.Latency.Milliseconds(),
	}
}

// AppendRecord writes rec to w as one line of JSON.
func AppendRecord(w io.Writer, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode replay record: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write replay record: %w", err)
	}
	return nil
}

// ErrExhausted is wrapped by the error Replay returns when no recorded
// answer is left for a request.
var ErrExhausted = errors.New("no recorded answer left")

// Replay proposes by replaying recorded answers (see Record). A request
// takes the first unused answer recorded with its prompt hash, or else
// the first unused answer recorded without one.
type Replay struct {
	name string
	mu   sync.Mutex
	recs []Record
	used []bool
}

// maxRecordLine bounds one line of a replay file.
const maxRecordLine = 64 << 20

// OpenReplay reads a replay file.
func OpenReplay(path string) (*Replay, error) {
	// A named pipe or a device is refused at once: opening a pipe would
	// wait for a writer.
	f, err := bounded.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open replay file: %w", err)
	}
	defer f.Close()
	return NewReplay(f, path)
}

// NewReplay reads replay records from r; name labels errors. Blank lines
// are skipped; a line that is not a record is an error naming the line.
func NewReplay(r io.Reader, name string) (*Replay, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecordLine)
	p := &Replay{name: name}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var raw struct {
			Record
			Answer *string `json:"answer"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s:%d: not a replay record: %w", name, line, err)
		}
		if raw.Answer == nil {
			return nil, fmt.Errorf("%s:%d: replay record has no \"answer\" field", name, line)
		}
		rec := raw.Record
		rec.Answer = *raw.Answer
		p.recs = append(p.recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: read replay file: %w", name, line+1, err)
	}
	p.used = make([]bool, len(p.recs))
	return p, nil
}

// Remaining returns the number of answers not replayed yet.
func (p *Replay) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, u := range p.used {
		if !u {
			n++
		}
	}
	return n
}

// take marks and returns the next answer for a prompt hash.
func (p *Replay) take(hash string) (Record, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, want := range []string{hash, ""} {
		for i, rec := range p.recs {
			if !p.used[i] && rec.PromptHash == want {
				p.used[i] = true
				return rec, true
			}
		}
	}
	return Record{}, false
}

// Propose implements Proposer.
func (p *Replay) Propose(ctx context.Context, req Request) (*Proposal, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hash := PromptHash(req.Prompt)
	rec, ok := p.take(hash)
	if !ok {
		return nil, &Error{
			Kind: FailExhausted, Proposer: KindReplay, Model: req.Prompt.Model,
			Err: fmt.Errorf("%w in %s for this prompt (hash %.12s): %d recorded, %d unused, none without a prompt hash or with this one; record more answers or run fewer iterations",
				ErrExhausted, p.name, hash, len(p.recs), p.Remaining()),
		}
	}
	resp := &llm.Response{
		Text:         rec.Answer,
		Usage:        rec.Usage,
		CostUSD:      rec.CostUSD,
		Latency:      time.Duration(rec.LatencyMS) * time.Millisecond,
		Model:        rec.Model,
		Provider:     rec.Provider,
		FinishReason: rec.FinishReason,
	}
	return finish(KindReplay, req, resp)
}
