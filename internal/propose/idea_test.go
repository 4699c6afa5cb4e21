package propose

import (
	"context"
	"errors"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
)

func TestIdea(t *testing.T) {
	answer := func(text string, err error) llm.Client {
		return llm.ClientFunc(func(context.Context, llm.Request) (*llm.Response, error) {
			if err != nil {
				return nil, err
			}
			return &llm.Response{Text: text}, nil
		})
	}
	req := llm.Request{Model: "m"}
	if idea, err := NewLLM(answer("  fuse the optimizer steps \n", nil)).Idea(context.Background(), req); err != nil || idea != "fuse the optimizer steps" {
		t.Errorf("Idea = %q, %v", idea, err)
	}
	for name, c := range map[string]struct {
		client llm.Client
		kind   FailureKind
	}{
		"call fails":   {answer("", errors.New("503")), FailCall},
		"empty answer": {answer(" \n", nil), FailNoAnswer},
		"no client":    {nil, FailCall},
	} {
		_, err := NewLLM(c.client).Idea(context.Background(), req)
		if pe := AsError(err); pe == nil || pe.Kind != c.kind || pe.Model != "m" {
			t.Errorf("%s: %v, want a %s error", name, err, c.kind)
		}
	}
}
