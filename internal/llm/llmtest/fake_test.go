package llmtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
)

func TestFake(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	f := New(Reply{Text: "a"}, Reply{Err: boom}, Reply{Text: "c", FinishReason: llm.FinishLength, Model: "x"})
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	if r, err := f.Complete(ctx, req); err != nil || r.Text != "a" || r.Model != "m" || r.FinishReason != llm.FinishStop {
		t.Errorf("1: %+v %v", r, err)
	}
	if _, err := f.Complete(ctx, req); err != boom {
		t.Errorf("2: %v", err)
	}
	if r, _ := f.Complete(ctx, req); r.Text != "c" || r.FinishReason != llm.FinishLength || r.Model != "x" {
		t.Errorf("3: %+v", r)
	}
	if _, err := f.Complete(ctx, req); !errors.Is(err, ErrScriptExhausted) {
		t.Errorf("4: %v", err)
	}
	if f.Calls() != 4 || f.Requests()[0].Model != "m" {
		t.Errorf("recorded %d", f.Calls())
	}
	a := Always(Reply{Text: "same"})
	for range 3 {
		if r, _ := a.Complete(ctx, req); r.Text != "same" {
			t.Error("Always")
		}
	}
	f = Texts()
	f.Respond = func(r llm.Request) Reply { return Reply{Text: "echo " + r.Messages[0].Content} }
	if r, _ := f.Complete(ctx, req); r.Text != "echo hi" {
		t.Errorf("Respond: %+v", r)
	}
	slow := New(Reply{Text: "late", Delay: time.Hour})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := slow.Complete(cctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delay: %v", err)
	}
}

func TestServerRoutes(t *testing.T) {
	for _, p := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic, llm.ProtocolGemini} {
		s := NewServer(t, p, Step{Text: "x"})
		if _, err := llm.ParseSpec(s.Spec("m")); err != nil {
			t.Errorf("%s: spec %q: %v", p, s.Spec("m"), err)
		}
	}
	if got := pieces("héllo wörld"); len(got) != 3 || got[0]+got[1]+got[2] != "héllo wörld" {
		t.Errorf("pieces %q", got)
	}
}
