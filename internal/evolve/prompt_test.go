package evolve

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// A template that needs a top set is not drawn for an iteration without
// one: the combine prompt spoke of "the top programs above" with
// none above.
func TestTemplateNeeds(t *testing.T) {
	p, err := loadPrompts("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.needs["combine"]; len(got) != 1 || got[0] != NeedTop {
		t.Fatalf("combine needs %v, want [top]", got)
	}
	for _, name := range p.drawable(map[string]bool{}) {
		if name == "combine" || name == "profile" {
			t.Errorf("%s drawn for an iteration with no top set and no profile", name)
		}
	}
	all := p.drawable(map[string]bool{NeedTop: true, NeedProfile: true})
	if len(all) != len(p.pool) {
		t.Errorf("with everything: %v of %v", all, p.pool)
	}
	if _, err := parseNeeds("x", "{{/* needs: top, karma */}}"); err == nil || !strings.Contains(err.Error(), `unknown need "karma"`) {
		t.Errorf("an unknown need: %v", err)
	}
	// The engine draws only what the iteration has.
	st := openStore(t, "")
	cfg := smallConfig()
	cfg.TopPrograms = ptr(0)
	e, _ := runEngine(t, fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: fakeModel(0)}), cfg)
	kids, _ := st.Children(context.Background(), e.RunID())
	for _, c := range kids {
		if c.Template == "combine" {
			t.Errorf("child %d drew combine with |T| = 0", c.ID)
		}
	}
}

// The contract says what is ranked, as configured: under the paper's score
// cutting steps does not raise a program, and the prompt says so instead
// of "shorter training time wins".
func TestObjectiveText(t *testing.T) {
	p, err := loadPrompts("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for objective, want := range map[string]string{
		ObjectiveScore: "cutting the number of steps changes neither",
		ObjectiveTime:  "ranks by training time",
		ObjectiveLoss:  "time does not change the rank",
	} {
		d := &promptData{Objective: objectiveText(objective), ProgramName: "train.py", Program: "x = 1\n", Attempt: 1, Branching: 2}
		_, user, err := p.render("speed", d)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(user, want) || strings.Contains(user, "shorter training time wins") || !strings.Contains(user, "A record is the shortest training time") {
			t.Errorf("objective %s: the contract lacks %q or contradicts it", objective, want)
		}
	}
}

// A fix prompt of a long program sends the lines the error and the change
// point at, and the child's idea; a short program is sent whole.
func TestFixPromptExcerpts(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "x%d = %d  # line %d of a long training program\n", i, i, i)
	}
	long := []byte(b.String())
	tb := "Traceback (most recent call last):\n  File \"/run/fast/train.py\", line 300, in <module>\nNameError: name 'y' is not defined"
	ex := excerpts(long, errorAnchors(tb, "train.py"), excerptContext)
	if len(ex) != 1 || ex[0].From != 288 || ex[0].To != 312 || !strings.Contains(ex[0].Text, "x300 = 300") || strings.Contains(ex[0].Text, "x100 =") {
		t.Fatalf("excerpts %+v", ex)
	}
	if excerpts([]byte("x = 1\n"), []int{1}, excerptContext) != nil {
		t.Error("a short program is excerpted")
	}
	applyErr := "SEARCH/REPLACE block 1 of 1: SEARCH text not found\n 120 | x120 = 120\n 121 | x121 = 121\n"
	if a := errorAnchors(applyErr, "train.py"); len(a) != 2 || a[0] != 120 {
		t.Errorf("edit error anchors %v", a)
	}
	if a := diffAnchors("@@ -10,2 +10,3 @@\n x\n+y\n"); len(a) != 3 || a[0] != 10 {
		t.Errorf("diff anchors %v", a)
	}
	p, err := loadPrompts("", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &promptData{ProgramName: "train.py", Program: string(long), Error: tb, Idea: "Fuse the projections into one matmul.",
		Excerpts: ex, ExcerptNote: excerptSummary(long, ex), Change: "--- a\n+++ b\n@@ -300 +300 @@\n-x300 = 300\n+x300 = y\n"}
	for _, name := range []string{promptFixRun, promptFixApply} {
		_, user, err := p.render(name, d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(user, "x100 = 100") || !strings.Contains(user, "x300 = 300") || !strings.Contains(user, "Lines 288-312") ||
			!strings.Contains(user, "Fuse the projections") || len(user) > len(long)/2 {
			t.Errorf("%s: %d characters for a %d-character program, or lacks the excerpt or the idea:\n%.600s", name, len(user), len(long), user)
		}
	}
}

// Top and diverse programs are shown with their change to their own
// parent, not to this iteration's parent; an island's seed is named as the
// reference.
func TestPromptShowsOwnChange(t *testing.T) {
	st := openStore(t, "")
	e, err := New(context.Background(), fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: fakeModel(0)}), smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(src string) string {
		h, err := st.PutProgram(ctx, []byte(src), "")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ref := &store.Child{ID: 1, Origin: runs.OriginReference, State: runs.Done, Verdict: runs.Acceptable, ProgramHash: put("a = 1\nb = 1\nc = 1\n"), TrainTimeMs: 1000, ValLoss: 3.9}
	seed := &store.Child{ID: 2, Island: 1, Origin: runs.OriginSeed, SourceID: 1, State: runs.Done, Verdict: runs.Acceptable, ProgramHash: ref.ProgramHash}
	mid := &store.Child{ID: 3, ParentID: 1, Origin: runs.OriginLLM, State: runs.Done, Verdict: runs.Acceptable, ProgramHash: put("a = 2\nb = 1\nc = 1\n"), TrainTimeMs: 900, ValLoss: 3.9}
	top := &store.Child{ID: 4, ParentID: 3, Origin: runs.OriginLLM, State: runs.Done, Verdict: runs.Acceptable, ProgramHash: put("a = 2\nb = 2\nc = 1\n"), TrainTimeMs: 800, ValLoss: 3.9}
	w := &proposalWork{child: store.Child{ID: 9}, kind: kindPropose, model: &Model{Name: "fake"}, parent: seed,
		baseHash: ref.ProgramHash, top: []store.Child{*top}, parents: map[int64]store.Child{3: *mid}}
	d, err := e.work.prompter.data(ctx, w, []byte("a = 1\nb = 1\nc = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	diff := d.Top[0].Diff
	if !strings.Contains(diff, "-b = 1") || !strings.Contains(diff, "+b = 2") || strings.Contains(diff, "a = ") && strings.Contains(diff, "-a = 1") {
		t.Errorf("#4's change should be b only (its parent #3 changed a):\n%s", diff)
	}
	if d.Top[0].ParentID != 3 || !strings.Contains(d.Top[0].ParentMetrics, "acceptable") {
		t.Errorf("top view %+v", d.Top[0])
	}
	if !strings.Contains(d.Parent.Description, "reference") {
		t.Errorf("the seed copy is described as %q", d.Parent.Description)
	}
}

// A model that answers the idea prompt with code twice gets a templated
// prompt instead; the fallback is recorded, and no implement call carries
// a non-idea.
func TestIdeaFallback(t *testing.T) {
	st := openStore(t, "")
	model := fakeModel(0)
	inner := model.Respond
	model.Respond = func(req llm.Request) llmtest.Reply {
		r := inner(req)
		if strings.Contains(req.Messages[0].Content, "## Task: an idea first") {
			r.Text = "<<<<<<< SEARCH\nLR = 0.5\n=======\nLR = 0.6\n>>>>>>> REPLACE\n"
		}
		return r
	}
	cfg := smallConfig()
	cfg.MetaPrompting = MetaConfig{StartIteration: ptr(1)}
	cfg.Budget.MaxIterations = 1
	e, _ := runEngine(t, fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: model}), cfg)
	ctx := context.Background()
	evs, _ := st.RunEvents(ctx, e.RunID(), "idea_fallback")
	kids, _ := st.Children(ctx, e.RunID())
	calls, _ := st.LLMCalls(ctx, e.RunID(), true)
	n := 0
	for _, c := range kids {
		if c.Origin == runs.OriginLLM {
			n++
			if c.Stage != runs.StageTemplate || c.Template == promptIdea || c.Idea != "" {
				t.Errorf("child %d: stage %s, template %s, idea %q", c.ID, c.Stage, c.Template, c.Idea)
			}
		}
	}
	purposes := map[string]int{}
	for _, c := range calls {
		purposes[c.Purpose]++
	}
	if len(evs) != n || purposes[PurposeIdea] != 2*n || purposes[PurposeImplement] != 0 || purposes[PurposeTemplate] < n {
		t.Errorf("%d fallbacks for %d children; calls by purpose %v", len(evs), n, purposes)
	}
}
