package propose

import (
	"context"
	"errors"
	"strings"
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

// What the issue saw taken as ideas: SEARCH/REPLACE blocks, "I could not
// find a change", a program. Real ideas, prose with a formula or a short
// snippet, pass.
func TestNotAnIdea(t *testing.T) {
	for answer, want := range map[string]string{
		"Cut the warmup.\n\n<<<<<<< SEARCH\nwarmup = 100\n=======\nwarmup = 10\n>>>>>>> REPLACE\n": "SEARCH/REPLACE",
		"I could not find a change that would help here.":                                          "no idea",
		"I have no idea.": "no idea",
		"Sorry, the program already looks optimal to me, nothing to add.":                                              "no idea",
		"```python\nimport torch\nmodel = torch.nn.Linear(4, 4)\nx = model(x)\nloss = x.sum()\nloss.backward()\n```\n": "mostly code",
		"Use Muon.": "too short",
		"Fuse the QKV projections into one matmul: three small GEMMs become one larger one, which uses the cores better on this CPU, so every step is shorter while the model computes exactly the same function.":                                   "",
		"Replace the cosine schedule by a linear decay to zero over the last 30% of steps, e.g.\n```python\nlr = base * min(1, (steps - step) / (0.3 * steps))\n```\nThe loss falls faster at the end, so the step count can drop by about a tenth.": "",
	} {
		got := NotAnIdea(answer)
		if (want == "") != (got == "") || (want != "" && !strings.Contains(got, want)) {
			t.Errorf("NotAnIdea(%.40q) = %q, want %q", answer, got, want)
		}
	}
}

// An answer that is not an idea is sent back once with what was wrong; a
// second one fails with FailNotIdea and the answer, for the caller's
// fallback.
func TestIdeaAsksAgain(t *testing.T) {
	var asked []llm.Request
	answers := []string{"<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "Fuse the three attention projections into one matmul so each step does fewer, larger GEMMs."}
	client := llm.ClientFunc(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		asked = append(asked, req)
		return &llm.Response{Text: answers[len(asked)-1]}, nil
	})
	prompt := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "one idea please"}}}
	idea, err := NewLLM(client).Idea(context.Background(), prompt)
	if err != nil || !strings.HasPrefix(idea, "Fuse") || len(asked) != 2 {
		t.Fatalf("Idea = %q, %v after %d calls", idea, err, len(asked))
	}
	second := asked[1].Messages
	if len(second) != 3 || second[1].Role != llm.RoleAssistant || !strings.Contains(second[2].Content, "SEARCH/REPLACE blocks") {
		t.Errorf("the re-ask: %+v", second)
	}
	asked, answers = nil, []string{"I cannot think of anything.", "No change."}
	_, err = NewLLM(client).Idea(context.Background(), prompt)
	if pe := AsError(err); pe == nil || pe.Kind != FailNotIdea || pe.Answer != "No change." || len(asked) != 2 {
		t.Errorf("twice not an idea: %v (%d calls)", err, len(asked))
	}
}
