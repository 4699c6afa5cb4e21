package evolve

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
	"github.com/frontier-bench/frontier/internal/propose"
)

// ModelChoice is what a new run asks for as its ensemble.
type ModelChoice struct {
	// Proposer is auto (the configured models whose key is set, else
	// mutate), llm or mutate; "" means auto.
	Proposer string
	// Models names the ensemble with weights; empty means every model under
	// llm.models with its own weight.
	Models []ModelWeight
	// Named says the models were named on the command line: a missing API
	// key is then an error, not a reason to leave the model out.
	Named bool
	// Replay, when set, is a JSONL file of recorded answers that replaces
	// the models.
	Replay string
}

// ChooseModels returns the ensemble a new run records: the replay file,
// the mutate baseline, or the configured models (in auto mode, those whose
// API key is set; the mutate baseline when none is). lookup reads the
// environment for keys.
func ChooseModels(cfg llm.Config, ch ModelChoice, lookup llm.LookupEnv, log *slog.Logger) ([]ModelsRecord, error) {
	if ch.Replay != "" {
		return []ModelsRecord{{Name: "replay", Kind: string(propose.KindReplay), Spec: ch.Replay}}, nil
	}
	mutate := []ModelsRecord{{Name: "mutate", Kind: string(propose.KindMutate), Weight: 1}}
	mode := ch.Proposer
	if mode == "" {
		mode = ProposerAuto
	}
	switch mode {
	case ProposerAuto, ProposerLLM:
	case ProposerMutate:
		return mutate, nil
	default:
		return nil, fmt.Errorf("--proposer %q: use auto, llm or mutate", mode)
	}
	wanted := ch.Models
	if len(wanted) == 0 {
		for _, m := range cfg.Models {
			wanted = append(wanted, ModelWeight{Name: m.Name, Weight: m.Weight})
			if m.Name == "" {
				wanted[len(wanted)-1].Name = m.Spec
			}
		}
	}
	if len(wanted) == 0 {
		if mode == ProposerLLM {
			return nil, errors.New("evolve: proposer llm but no model is configured: add one under llm.models in frontier.yaml (docs/llm.md), or use --proposer mutate")
		}
		log.Info("evolve: no model is configured (llm.models); the mutate baseline proposes")
		return mutate, nil
	}
	var out []ModelsRecord
	var skipped []string
	for _, w := range wanted {
		m, err := cfg.Model(w.Name)
		if err != nil {
			if ch.Named {
				return nil, fmt.Errorf("model %s, named on the command line: %w", w.Name, err)
			}
			return nil, fmt.Errorf("evolve.models: %w", err)
		}
		if _, err := m.APIKey(lookup); err != nil {
			if mode == ProposerLLM || ch.Named {
				return nil, fmt.Errorf("model %s: %w", m.Name, err)
			}
			skipped = append(skipped, fmt.Sprintf("%s (%v)", m.Name, err))
			continue
		}
		weight := w.Weight
		if weight == 0 {
			weight = m.Config.Weight
		}
		out = append(out, ModelsRecord{Name: m.Name, Kind: string(propose.KindLLM), Spec: m.Config.Spec, Weight: weight})
	}
	if len(skipped) > 0 {
		log.Warn("evolve: models left out for lack of an API key", "models", strings.Join(skipped, "; "))
	}
	if len(out) == 0 {
		log.Warn("evolve: no configured model has its API key; the mutate baseline proposes")
		return mutate, nil
	}
	return out, nil
}

// OpenModels opens the ensemble a run records, new or resumed: the mutate
// baseline, the replay file, or clients of the configured models, all
// built once by provider.New with popts (its budget, log and
// environment). A model that is no longer configured is left out, with a
// warning, and its children go to the others; a model whose key is
// missing is an error. run names a resumed run in messages ("" for a new
// one).
func OpenModels(recs []ModelsRecord, cfg llm.Config, popts provider.Options, run string, log *slog.Logger) ([]Model, error) {
	ofRun := ""
	if run != "" {
		ofRun = " of run " + run
	}
	var set *provider.Set
	var out []Model
	for _, r := range recs {
		switch propose.Kind(r.Kind) {
		case propose.KindMutate:
			out = append(out, Model{Name: r.Name, Kind: propose.KindMutate, Proposer: propose.NewMutate(), Weight: r.Weight})
		case propose.KindReplay:
			p, err := propose.OpenReplay(r.Spec)
			if err != nil && run != "" {
				return nil, fmt.Errorf("run %s replays %s: %w", run, r.Spec, err)
			} else if err != nil {
				return nil, err
			}
			out = append(out, Model{Name: r.Name, Kind: propose.KindReplay, Proposer: p, Weight: r.Weight, Spec: r.Spec})
		default:
			if set == nil {
				var err error
				if set, err = provider.New(cfg, popts); err != nil {
					return nil, err
				}
			}
			m, err := cfg.Model(r.Name)
			if err != nil {
				log.Warn("evolve: a model of the run is no longer configured; its children go to the others", "model", r.Name, "err", err)
				continue
			}
			if _, err := m.APIKey(popts.LookupEnv); err != nil {
				return nil, fmt.Errorf("model %s%s: %w", r.Name, ofRun, err)
			}
			out = append(out, Model{Name: r.Name, Kind: propose.KindLLM, Client: set, Weight: r.Weight, Spec: r.Spec})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("run %s: none of its models (%d) is configured any more", run, len(recs))
	}
	return out, nil
}
