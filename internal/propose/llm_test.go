package propose

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/llm"
)

// fakeClient answers every request with a fixed response or error and
// remembers what it was asked.
type fakeClient struct {
	mu   sync.Mutex
	got  []llm.Request
	resp *llm.Response
	err  error
}

func (f *fakeClient) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, req)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.resp, f.err
}

const tinyParent = "lr = 0.1\nsteps = 100\n\n\ndef train():\n    pass\n"

func promptFor(model string) llm.Request {
	temp := 0.7
	return llm.Request{
		Model:       model,
		System:      "You improve training programs.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: "Make it faster.\n" + tinyParent}},
		Temperature: &temp,
	}
}

func TestLLMProposes(t *testing.T) {
	answer := "Lower the learning rate slightly.\n\n```python\n<<<<<<< SEARCH\nlr = 0.1\n=======\nlr = 0.08\n>>>>>>> REPLACE\n```\n"
	fc := &fakeClient{resp: &llm.Response{Text: answer, Model: "gpt-test-2026", Provider: "openai", FinishReason: "stop", CostUSD: 0.01, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}}
	req := Request{Parent: Program{Name: "train.py", Source: []byte(tinyParent)}, Prompt: promptFor("openai/gpt-test")}
	p, err := NewLLM(fc).Propose(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.got) != 1 || !reflect.DeepEqual(fc.got[0], req.Prompt) {
		t.Errorf("client got %+v, want the prompt as given", fc.got)
	}
	if string(p.Child()) != strings.Replace(tinyParent, "lr = 0.1", "lr = 0.08", 1) {
		t.Errorf("child = %q", p.Child())
	}
	if p.Kind != KindLLM || p.Response != fc.resp || p.Answer != answer || len(p.Edit.Blocks) != 1 {
		t.Errorf("proposal = %+v", p)
	}
	if want := "gpt-test-2026: Lower the learning rate slightly. (1 block: exact)"; p.Description != want {
		t.Errorf("Description = %q, want %q", p.Description, want)
	}
}

func TestLLMFailures(t *testing.T) {
	callErr := errors.New("429 too many requests")
	tests := []struct {
		name     string
		resp     *llm.Response
		err      error
		kind     FailureKind
		editKind edit.ErrorKind
		feedback string
	}{
		{name: "call fails", err: callErr, kind: FailCall},
		{name: "empty answer", resp: &llm.Response{Text: "  \n", CostUSD: 0.02}, kind: FailNoAnswer, feedback: "Your answer was empty"},
		{name: "prose only", resp: &llm.Response{Text: "You could lower the learning rate.", CostUSD: 0.02}, kind: FailUnparseable, editKind: edit.NoEdit, feedback: "no SEARCH/REPLACE block"},
		{name: "cut at the limit", resp: &llm.Response{Text: "<<<<<<< SEARCH\nlr = 0.1\n=======\nlr = 0.2\n>>>>>>> REPLACE\n", FinishReason: "length"}, kind: FailUnparseable, editKind: edit.Truncated, feedback: "output token limit"},
		{name: "search not found", resp: &llm.Response{Text: "<<<<<<< SEARCH\nlearning_rate = 0.1\n=======\nlearning_rate = 0.2\n>>>>>>> REPLACE\n"}, kind: FailApply, editKind: edit.NotFound, feedback: "SEARCH/REPLACE block 1 of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &fakeClient{resp: tt.resp, err: tt.err}
			req := Request{Parent: Program{Source: []byte(tinyParent)}, Prompt: promptFor("anthropic/claude-test")}
			_, err := NewLLM(fc).Propose(context.Background(), req)
			pe := AsError(err)
			if pe == nil || pe.Kind != tt.kind || pe.Proposer != KindLLM || pe.Model != "anthropic/claude-test" {
				t.Fatalf("err = %#v, want kind %s", err, tt.kind)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("the llm error is not wrapped: %v", err)
			}
			if tt.resp != nil && pe.Response != tt.resp {
				t.Errorf("the paid-for response is not kept in the error")
			}
			if tt.editKind != "" && edit.KindOf(err) != tt.editKind {
				t.Errorf("edit kind = %q, want %q", edit.KindOf(err), tt.editKind)
			}
			if fb := pe.Feedback(); !strings.Contains(fb, tt.feedback) || (tt.feedback == "" && fb != "") {
				t.Errorf("Feedback() = %q, want it to contain %q", fb, tt.feedback)
			}
		})
	}
}

func TestLLMApplyErrorInside(t *testing.T) {
	answer := "<<<<<<< SEARCH\nnope = 1\n=======\nnope = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\n    pass\n=======\n    return\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nstill_nope\n=======\nx\n>>>>>>> REPLACE\n"
	fc := &fakeClient{resp: &llm.Response{Text: answer}}
	_, err := NewLLM(fc).Propose(context.Background(), Request{Parent: Program{Source: []byte(tinyParent)}})
	var ae *edit.ApplyError
	if !errors.As(err, &ae) || ae.Block != 1 {
		t.Fatalf("err = %v, want an *edit.ApplyError for block 1 inside", err)
	}
	if n := len(edit.ApplyErrors(err)); n != 2 {
		t.Errorf("%d apply errors, want 2 (blocks 1 and 3)", n)
	}
}

func TestLLMNoClient(t *testing.T) {
	_, err := NewLLM(nil).Propose(context.Background(), Request{})
	if pe := AsError(err); pe == nil || pe.Kind != FailCall {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewLLM(&fakeClient{resp: &llm.Response{Text: "x"}}).Propose(ctx, Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled inside", err)
	}
}
