package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/frontier-bench/frontier/internal/bench/scaffold"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// The evolve scaffold is frontier's own search, called through
// internal/evolve's exported API as it is. Two things it lacks are made
// here from what it exports:
//
//   - The engine starts from its track's reference program. The attempt's
//     start program becomes the reference of a copy of the track, written
//     under Env.WorkDir (same name, same data, same limits; only its
//     recorded spec hash differs from the original's).
//   - Hints reach the engine's prompts through its template system: a
//     template "bench_hints" (evolve.prompt.template_dir) that carries the
//     hint text and the engine's shared blocks, as the only template of
//     the pool; meta-prompting is turned off so that no prompt goes
//     without them (the fix prompts, which repair a failure, do).

// hintTemplate is the name of the evolve template that carries the hints.
const hintTemplate = "bench_hints"

// evolveName is the name of an attempt's evolution run.
func (b *Bench) evolveName(a *store.BenchAttempt) string {
	return fmt.Sprintf("%s-a%d", b.run.Name, a.ID)
}

func (evolveSearch) search(ctx context.Context, b *Bench, at attemptStart) (*result, error) {
	a, spec, start, hints := at.a, at.spec, at.start, at.hints
	st := b.env.Store
	if b.env.WorkDir == "" {
		return nil, errors.New("the evolve scaffold needs a work folder (Env.WorkDir)")
	}
	dir := filepath.Join(b.env.WorkDir, b.run.Name, "a"+strconv.FormatInt(a.ID, 10))
	copySpec, err := writeTrackCopy(filepath.Join(dir, "track"), spec, start)
	if err != nil {
		return nil, err
	}
	cfg := *b.cfg.Evolve
	cfg.Budget = evolve.BudgetConfig{MaxIterations: -1, MaxEvaluations: b.cfg.Nodes + 1} // the start is evaluated too
	cfg.Seed = b.cfg.Seed ^ uint64(a.ID)*0x9e3779b97f4a7c15
	cfg.EvalSeed = a.Seed
	// A log-contract track's programs do not use the harness the engine's
	// own templates describe: its template says how they run instead.
	contract := ""
	if spec.Contract == "log" {
		contract = scaffold.LogContract(spec, b.suite.Hardware)
	}
	if len(hints) > 0 || contract != "" {
		tdir := filepath.Join(dir, "prompts")
		if err := writeHintTemplate(tdir, hints, contract); err != nil {
			return nil, err
		}
		off := false
		cfg.MetaPrompting.Enabled = &off
		cfg.Prompt.TemplateDir, cfg.Prompt.Templates = tdir, []string{hintTemplate}
	}
	opts := evolve.Options{Store: st, Track: copySpec, Evaluator: b.env.Evaluator, Models: []evolve.Model{b.model},
		Budget: b.budget, Redact: b.env.Redact, Log: b.env.Log}
	name := b.evolveName(a)
	var e *evolve.Engine
	if run, _, err := evolve.Load(ctx, st, name); err == nil {
		e, err = evolve.Resume(ctx, opts, run, evolve.Overrides{})
		if err != nil {
			return nil, fmt.Errorf("resume evolution run %s: %w", name, err)
		}
	} else if errors.Is(err, store.ErrNotFound) {
		if e, err = evolve.New(ctx, opts, cfg, name); err != nil {
			return nil, err
		}
	} else {
		return nil, err
	}
	if a.EvolveRun != name {
		a.EvolveRun = name
		if err := st.UpdateBenchAttempt(ctx, a); err != nil {
			return nil, err
		}
	}
	sum, err := b.runEngine(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("evolution run %s: %w", name, err)
	}
	res := &result{}
	switch sum.StopReason {
	case evolve.StopIterations, evolve.StopEvaluations, evolve.StopReferenceFails, evolve.StopLLMFailures:
		// The search is over: what it found is the attempt's result.
	case evolve.StopError:
		return nil, fmt.Errorf("evolution run %s stopped on an error: %s", name, sum.StopDetail)
	default:
		res.stopped = sum.StopReason + ": " + sum.StopDetail
		return res, nil
	}
	return b.evolveResult(ctx, e.RunID(), res)
}

// runEngine runs an engine, draining it when the bench is drained or its
// active time runs out.
func (b *Bench) runEngine(ctx context.Context, e *evolve.Engine) (*evolve.Summary, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var timeout <-chan time.Time
		if d := b.cfg.Budget.MaxDuration; d > 0 {
			left := time.Duration(d) - time.Duration(b.active())*time.Millisecond
			timeout = time.After(max(left, 0))
		}
		select {
		case <-b.drain.Requested():
			e.Drain(b.drain.Reason())
		case <-timeout:
			e.Drain("the bench run's active time is spent")
		case <-done:
		}
	}()
	sum, err := e.Run(ctx)
	close(done)
	wg.Wait()
	return sum, err
}

// evolveResult reads what an evolution run found.
func (b *Bench) evolveResult(ctx context.Context, runID int64, res *result) (*result, error) {
	st := b.env.Store
	kids, err := st.Children(ctx, runID)
	if err != nil {
		return nil, err
	}
	for _, c := range kids {
		if c.Origin == runs.OriginReference || c.Origin.IsCopy() {
			continue
		}
		if res.tally(c.Verdict, c.TrainTimeMs, c.EvaluationID) {
			res.bestMs, res.bestHash = c.TrainTimeMs, c.ProgramHash
		}
	}
	usd, tokens, _, err := st.RunSpend(ctx, runID)
	if err != nil {
		return nil, err
	}
	res.costUSD, res.tokens = usd, tokens
	return res, nil
}

// writeTrackCopy writes spec as a track folder whose reference program is
// start, and loads it back.
func writeTrackCopy(dir string, spec *track.Spec, start []byte) (*track.Spec, error) {
	cp := *spec
	cp.Reference = filepath.Base(programName(spec))
	b, err := yaml.Marshal(&cp)
	if err != nil {
		return nil, fmt.Errorf("write the track copy: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# Track %s with the start program of a bench attempt as its reference\n# (written by frontier bench for the evolve scaffold).\n", spec.Name)
	if err := os.WriteFile(filepath.Join(dir, track.SpecFile), append([]byte(head), b...), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, cp.Reference), start, 0o644); err != nil {
		return nil, err
	}
	loaded, err := track.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the track copy in %s does not load (a bug in frontier): %w", dir, err)
	}
	return loaded, nil
}

// writeHintTemplate writes the evolve template that shows the hints. The
// hint text goes in as a quoted template string, so that nothing in it is
// read as template syntax. contract, when set, says how the track's
// programs run (a log-contract track) in place of the engine's harness
// contract and answer format, which name the harness's API.
func writeHintTemplate(dir string, hints []Hint, contract string) error {
	var h strings.Builder
	if len(hints) > 0 {
		h.WriteString(`
## What the next record changed

The next record of this program's history trains faster. Here is what is known about
its change; reproduce it in this program.
`)
	}
	for _, x := range hints {
		fmt.Fprintf(&h, "\n### Hint: %s\n\n{{%s}}\n", x.Name, strconv.Quote(x.Text))
	}
	contractBlock, formatBlock := `{{template "contract" .}}`, `{{template "format" .}}`
	if contract != "" {
		contractBlock = "{{" + strconv.Quote(contract) + "}}"
		formatBlock = "{{" + strconv.Quote(logFormat) + "}}"
	}
	task := "Make this program reach the target validation loss in less training time."
	if len(hints) > 0 {
		task = "Make this program reach the target validation loss in less training time by\nreproducing the change the hints describe."
	}
	tmpl := `{{define "user" -}}
` + contractBlock + `
` + h.String() + `
{{template "parent" .}}
{{template "others" .}}

## Task

` + task + ` If it lets the loss fall faster per step,
lower the step count so that the run still reaches the target with a small margin.

{{template "sibling" .}}

` + formatBlock + `
{{- end}}
`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, hintTemplate+".tmpl"), []byte(tmpl), 0o644)
}

// logFormat is the answer format for a log-contract track's script.
const logFormat = `## Answer format

Say in two or three sentences what you change and why it should help, then give one or
more SEARCH/REPLACE blocks:

<<<<<<< SEARCH
lines copied exactly from the program, with their indentation
=======
the lines that replace them
>>>>>>> REPLACE

- Each SEARCH must match the program exactly, in one place only. Blocks apply in order.
- Keep blocks small. Do not rewrite the whole file and do not touch protected regions.
- The script must still run end to end under torchrun and print its validation lines.`
