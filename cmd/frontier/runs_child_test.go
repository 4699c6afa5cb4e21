package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// A member of a run, from the terminal: its lineage, prompts and answers,
// attempts and evaluations; and its diff against the reference and its
// parent.
func TestRunsChildAndDiff(t *testing.T) {
	home := t.TempDir()
	var n atomic.Int64
	model := &llmtest.Fake{Respond: func(req llm.Request) llmtest.Reply {
		k := n.Add(1)
		return llmtest.Reply{Text: fmt.Sprintf("Less busywork.\n\n<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = %d\n>>>>>>> REPLACE\n", k%4),
			Usage: llm.Usage{InputTokens: 900, OutputTokens: 30}, CostUSD: 0.002}
	}}
	st, _ := quickRun(t, home, "kid", hashEvaluator(), []evolve.Model{{Name: "fake", Kind: propose.KindLLM, Client: model}},
		evolve.Config{Islands: 1, BranchingFactor: 2, Seed: 3, Budget: evolve.BudgetConfig{MaxIterations: 1}})
	st.Close()

	code, out, stderr := runCLI(t, "--home", home, "runs", "child", "kid", "2")
	for _, want := range []string{"member #2 of run kid: iteration 1", "lineage     #1 (reference, ", "->  #2",
		"model       fake, stage template", "attempts", "propose", "model calls (stored redacted)",
		"template fake: done, 900 in / 30 out", "[user]", "answer:", "\n      WASTE = ", "--prompts prints them in full"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("runs child lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	_, full, _ := runCLI(t, "--home", home, "runs", "child", "kid", "2", "--prompts")
	if !strings.Contains(full, "frontier:protected") || strings.Contains(full, "more lines]") {
		t.Errorf("--prompts does not print the prompt in full:\n%s", full)
	}
	if _, viaShow, _ := runCLI(t, "--home", home, "runs", "show", "kid", "--child", "2"); !strings.Contains(viaShow, "member #2 of run kid") {
		t.Errorf("runs show --child:\n%s", viaShow)
	}
	// --json: the calls in full, the request as the JSON it was stored as.
	var story runview.MemberDoc
	jsonOf(t, &story, "--home", home, "runs", "child", "kid", "2", "--json")
	if len(story.Calls) == 0 || story.Calls[0].Purpose != "template" || !strings.Contains(story.Calls[0].Answer, "WASTE = ") ||
		!strings.HasPrefix(string(story.Calls[0].Request), "{") || len(story.Attempts) == 0 || story.Member.Model != "fake" {
		t.Errorf("runs child --json: %+v", story)
	}
	if code, _, stderr := runCLI(t, "--home", home, "runs", "child", "kid", "99"); code != exitUsage || !strings.Contains(stderr, "no member #99") {
		t.Errorf("an unknown member: exit %d: %s", code, stderr)
	}
	code, out, stderr = runCLI(t, "--home", home, "runs", "diff", "kid", "2")
	if code != 0 || !strings.Contains(out, "# against the reference #1") || !strings.Contains(out, "-WASTE = 4") || !strings.Contains(out, "+WASTE = ") {
		t.Errorf("runs diff: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := runCLI(t, "--home", home, "runs", "show", "kid"); code != 0 || !strings.Contains(out, "spend by purpose") ||
		!strings.Contains(out, "template  2") || !strings.Contains(out, "islands") {
		t.Errorf("runs show: spend by purpose or islands missing:\n%s", out)
	}
}

// A member's evaluations show the load behind their time, in the text and
// the JSON.
func TestRunsChildConditions(t *testing.T) {
	home := t.TempDir()
	// Each evaluation is stored, as the evaluator does, with the
	// conditions it ran under.
	ev := hashEvaluator()
	ev.Store = storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	ev.Conditions = &store.Conditions{LoadAvg: []float64{3.25, 2, 1}, LoadAvgEnd: []float64{3.5, 2, 1},
		CPU: &store.CPUUse{WallMs: 4000, OwnMs: 7000, OwnSource: "procs", OthersMs: 1000, CPUs: 2}}
	st, _ := quickRun(t, home, "load", ev,
		[]evolve.Model{{Name: "fake", Kind: propose.KindLLM, Client: &llmtest.Fake{Respond: func(req llm.Request) llmtest.Reply {
			return llmtest.Reply{Text: "Less busywork.\n\n<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 1\n>>>>>>> REPLACE\n"}
		}}}},
		evolve.Config{Islands: 1, BranchingFactor: 1, Seed: 3, Budget: evolve.BudgetConfig{MaxIterations: 1}})
	st.Close()
	code, out, stderr := runCLI(t, "--home", home, "runs", "child", "load", "2")
	want := "ran under: wall 4.00s, own CPU 7.00s (procs), others 0.25 of 2 CPUs, load 3.25 -> 3.50"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("runs child lacks %q (exit %d):\n%s%s", want, code, out, stderr)
	}
	var story runview.MemberDoc
	jsonOf(t, &story, "--home", home, "runs", "child", "load", "2", "--json")
	if len(story.Evaluations) == 0 || story.Evaluations[0].Conditions == nil || story.Evaluations[0].Conditions.CPU == nil ||
		story.Evaluations[0].Conditions.CPU.OwnMs != 7000 {
		t.Errorf("runs child --json: evaluations %+v: want their conditions", story.Evaluations)
	}
}
