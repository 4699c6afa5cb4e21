package evolve

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
	"github.com/frontier-bench/frontier/internal/propose"
)

// A new run's ensemble: the replay file, the mutate baseline, or the
// configured models whose key is set; and the same records reopen as
// models, new or resumed.
func TestChooseAndOpenModels(t *testing.T) {
	cfg := llm.Config{Models: []llm.ModelConfig{{Name: "a", Spec: "openai/gpt-5", Weight: 2}, {Name: "b", Spec: "anthropic/claude-sonnet-4-5"}}}
	onlyOpenAI := func(k string) (string, bool) { return "sk-test", k == "OPENAI_API_KEY" }
	log := slog.New(slog.DiscardHandler)
	names := func(recs []ModelsRecord) string {
		var s []string
		for _, r := range recs {
			s = append(s, r.Name+":"+r.Kind)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		name string
		ch   ModelChoice
		want string
		err  string
	}{
		{"auto leaves out a model without its key", ModelChoice{}, "a:llm", ""},
		{"mutate", ModelChoice{Proposer: ProposerMutate}, "mutate:mutate", ""},
		{"replay", ModelChoice{Replay: "answers.jsonl"}, "replay:replay", ""},
		{"named without a key", ModelChoice{Models: []ModelWeight{{Name: "b"}}, Named: true}, "", "model b"},
		{"llm without a key", ModelChoice{Proposer: ProposerLLM}, "", "model b"},
		{"unknown proposer", ModelChoice{Proposer: "gpt"}, "", "--proposer"},
	} {
		recs, err := ChooseModels(cfg, c.ch, onlyOpenAI, log)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || names(recs) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.name, names(recs), err, c.want)
		}
	}
	recs, _ := ChooseModels(llm.Config{}, ModelChoice{}, onlyOpenAI, log)
	if names(recs) != "mutate:mutate" {
		t.Errorf("no model configured: %s, want the mutate baseline", names(recs))
	}
	// Reopening: a model no longer configured is left out; all gone is an error.
	recs = []ModelsRecord{{Name: "a", Kind: "llm", Weight: 2}, {Name: "gone", Kind: "llm"}, {Name: "mutate", Kind: "mutate", Weight: 1}}
	models, err := OpenModels(recs, cfg, provider.Options{LookupEnv: onlyOpenAI}, "run-1", log)
	if err != nil || len(models) != 2 || models[0].Client == nil || models[0].Weight != 2 || models[1].Kind != propose.KindMutate {
		t.Errorf("reopened %+v, %v", models, err)
	}
	if _, err := OpenModels([]ModelsRecord{{Name: "gone", Kind: "llm"}}, cfg, provider.Options{LookupEnv: onlyOpenAI}, "run-1", log); err == nil ||
		!strings.Contains(err.Error(), "none of its models") {
		t.Errorf("every model gone: %v", err)
	}
}
