package propose

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
)

func blockAnswer(from, to string) string {
	return "<<<<<<< SEARCH\n" + from + "\n=======\n" + to + "\n>>>>>>> REPLACE\n"
}

func TestReplayInOrderAndByHash(t *testing.T) {
	pA, pB := promptFor("m"), promptFor("m")
	pB.Messages = []llm.Message{{Role: llm.RoleUser, Content: "another prompt"}}
	var buf bytes.Buffer
	// One answer recorded for prompt B, two without a hash.
	recB := NewRecord(pB, &llm.Response{Text: blockAnswer("steps = 100", "steps = 90"), Model: "gpt-x", Provider: "openai", FinishReason: "stop", CostUSD: 0.5, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, Latency: 1500 * time.Millisecond})
	for _, rec := range []Record{
		{Answer: blockAnswer("lr = 0.1", "lr = 0.2"), Model: "m1"},
		recB,
		{Answer: blockAnswer("lr = 0.1", "lr = 0.3"), Model: "m2"},
	} {
		if err := AppendRecord(&buf, rec); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("AppendRecord wrote %d lines", n)
	}
	rp, err := NewReplay(&buf, "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	parent := Program{Source: []byte(tinyParent)}
	ctx := context.Background()

	p, err := rp.Propose(ctx, Request{Parent: parent, Prompt: pB})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Child()), "steps = 90") || p.Kind != KindReplay {
		t.Errorf("prompt B got %q", p.Child())
	}
	if r := p.Response; r.Model != "gpt-x" || r.CostUSD != 0.5 || r.Usage.OutputTokens != 5 || r.Latency != 1500*time.Millisecond || r.FinishReason != "stop" {
		t.Errorf("replayed response = %+v", r)
	}
	// Prompt B again: its own answer is used up, so the unhashed ones follow in order.
	for _, want := range []string{"lr = 0.2", "lr = 0.3"} {
		p, err := rp.Propose(ctx, Request{Parent: parent, Prompt: pB})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(p.Child()), want) {
			t.Errorf("got %q, want %q", p.Child(), want)
		}
	}
	_, err = rp.Propose(ctx, Request{Parent: parent, Prompt: pA})
	pe := AsError(err)
	if pe == nil || pe.Kind != FailExhausted || !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "rec.jsonl") || !strings.Contains(err.Error(), "3 recorded") {
		t.Fatalf("err = %v, want exhausted naming the file", err)
	}
	if rp.Remaining() != 0 {
		t.Errorf("Remaining = %d", rp.Remaining())
	}
}

func TestReplayHashedAnswerNotGivenToOtherPrompt(t *testing.T) {
	pA, pB := promptFor("m"), promptFor("m")
	pB.System = "different system prompt"
	if PromptHash(pA) == PromptHash(pB) {
		t.Fatal("different prompts share a hash")
	}
	other := pA
	other.Model = "another/model"
	other.Temperature = nil
	if PromptHash(pA) != PromptHash(other) {
		t.Error("the model spec and sampling settings must not change the hash")
	}
	var buf bytes.Buffer
	AppendRecord(&buf, NewRecord(pB, &llm.Response{Text: blockAnswer("lr = 0.1", "lr = 0.2")}))
	rp, err := NewReplay(&buf, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Propose(context.Background(), Request{Parent: Program{Source: []byte(tinyParent)}, Prompt: pA}); AsError(err) == nil || AsError(err).Kind != FailExhausted {
		t.Fatalf("err = %v, want exhausted", err)
	}
}

func TestReplayFailuresKeepResponse(t *testing.T) {
	var buf bytes.Buffer
	AppendRecord(&buf, Record{Answer: blockAnswer("missing = 1", "missing = 2"), CostUSD: 0.3})
	rp, _ := NewReplay(&buf, "x")
	_, err := rp.Propose(context.Background(), Request{Parent: Program{Source: []byte(tinyParent)}})
	pe := AsError(err)
	if pe == nil || pe.Kind != FailApply || pe.Response == nil || pe.Response.CostUSD != 0.3 || pe.Feedback() == "" {
		t.Fatalf("err = %v", err)
	}
}

func TestReplayFileErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not json", "{\"answer\":\"a\"}\n\nnot json\n", "f.jsonl:3: not a replay record"},
		{"no answer", "{\"model\":\"m\"}\n", "f.jsonl:1: replay record has no \"answer\" field"},
		{"unknown field", "{\"answer\":\"a\",\"anwser\":\"b\"}\n", "f.jsonl:1: not a replay record: json: unknown field \"anwser\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReplay(strings.NewReader(tt.data), "f.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := OpenReplay(filepath.Join(t.TempDir(), "none.jsonl")); err == nil || !strings.Contains(err.Error(), "open replay file") {
		t.Errorf("missing file: err = %v", err)
	}
	// A named pipe is refused at once: opening it would wait for a writer.
	fifo := filepath.Join(t.TempDir(), "answers.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := OpenReplay(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a named pipe, not a regular file") {
			t.Errorf("a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenReplay waits on a named pipe")
	}
}

func TestReplayFileAndConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	for i := range n {
		AppendRecord(f, Record{Answer: blockAnswer("steps = 100", "steps = "+string(rune('a'+i)))})
	}
	f.Close()
	rp, err := OpenReplay(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := rp.Propose(context.Background(), Request{Parent: Program{Source: []byte(tinyParent)}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[p.Answer] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct answers replayed to %d concurrent requests", len(seen), n)
	}
}
