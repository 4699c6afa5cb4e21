package evolve

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	d := Defaults()
	if d.Islands != 4 || d.BranchingFactor != 10 || d.ArchiveSize != 20 || *d.TopPrograms != 3 || *d.DiversePrograms != 2 ||
		d.Objective != ObjectiveScore || *d.FastFixes != 3 || *d.MetaPrompting.StartIteration != 20 || !*d.MetaPrompting.Enabled ||
		d.Budget.MaxIterations != 100 || d.Migration.Interval != 10 || d.Migration.Count != 2 {
		t.Errorf("defaults %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	// An explicit zero stays zero where zero means something.
	c := Config{TopPrograms: ptr(0), FastFixes: ptr(0), MetaPrompting: MetaConfig{StartIteration: ptr(0)}}.Resolved()
	if *c.TopPrograms != 0 || *c.FastFixes != 0 || c.metaStart() != 0 {
		t.Errorf("explicit zeros lost: %+v", c)
	}
	if (Config{MetaPrompting: MetaConfig{Enabled: ptr(false)}}).Resolved().metaStart() != -1 {
		t.Error("meta-prompting off still starts")
	}
	bad := Config{Islands: -1, Objective: "fast", Selection: SelectionConfig{Strategy: "best", Exploration: ptr(2.0)},
		Models: []ModelWeight{{Name: "a"}, {Name: "a"}, {Name: ""}}, Bandit: BanditConfig{Strategy: "greedy"}, Proposer: "human",
		Budget: BudgetConfig{MaxUSD: -1}}
	err := bad.Validate()
	for _, want := range []string{"evolve.islands", "evolve.objective", "evolve.selection.strategy", "evolve.selection.exploration",
		"evolve.models[1]", "evolve.models[2]", "evolve.bandit.strategy", "evolve.proposer", "evolve.budget"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestParseConfigStrict(t *testing.T) {
	c, err := ParseConfig([]byte("islands: 3\nbranching_factor: 5\nmeta_prompting: {start_iteration: 0}\nbudget: {max_usd: 12.5, max_duration: 2h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Islands != 3 || c.BranchingFactor != 5 || *c.MetaPrompting.StartIteration != 0 || c.Budget.MaxUSD != 12.5 || c.Budget.MaxDuration.D().Hours() != 2 {
		t.Errorf("parsed %+v", c)
	}
	_, err = ParseConfig([]byte("islands: 3\nbranching: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "branching") || !strings.Contains(err.Error(), "2:") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := ParseConfig(nil); err != nil {
		t.Errorf("empty section: %v", err)
	}
}

func child(id int64, island int, verdict runs.Verdict, score, ms float64) *store.Child {
	return &store.Child{ID: id, Island: island, Verdict: verdict, Score: score, TrainTimeMs: ms, ValLoss: 3,
		State: runs.Done, ProgramHash: "h", NormHash: "n" + string(rune('a'+id)), Origin: "llm"}
}

func TestRankingAndArchive(t *testing.T) {
	p := newPopulation(ObjectiveScore, 2, 3)
	members := []*store.Child{
		child(1, 0, "acceptable", 300, 10),
		child(2, 0, "loss_too_high", 100, 5), // better score, worse verdict
		child(3, 1, "acceptable", 250, 9),
		child(4, 1, "error", 0, 0),
		child(5, 0, "acceptable", 200, 12),
		child(6, 1, "acceptable", 400, 8),
	}
	for _, c := range members {
		p.settle(c)
	}
	if got := p.archive; len(got) != 3 || got[0] != 5 || got[1] != 3 || got[2] != 1 {
		t.Errorf("archive %v, want [5 3 1]: acceptable by score, capped at 3", got)
	}
	if p.best().ID != 5 {
		t.Errorf("best %d", p.best().ID)
	}
	if !beats(ObjectiveScore, members[0], members[1]) || beats(ObjectiveScore, members[1], members[0]) {
		t.Error("an acceptable program must beat a loss_too_high one whatever the score")
	}
	if beats(ObjectiveScore, members[3], members[1]) {
		t.Error("an error beats a valid program")
	}
	if !beats(ObjectiveTime, members[5], members[0]) {
		t.Error("objective time: 8 ms beats 10 ms")
	}
	// Island 1's ranking: valid ones only, best first.
	r := rankedMembers(p, 1)
	if len(r) != 2 || r[0].ID != 3 || r[1].ID != 6 {
		t.Errorf("island 1 ranked %v", ids(r))
	}
	// Copies are on islands but not in the archive, and do not migrate.
	cp := copyOf(members[4], runs.OriginMigrant, 1, 3)
	cp.ID = 7
	p.add(cp)
	if p.settle(cp) || len(p.onIsland[1]) != 4 {
		t.Error("a migrant changed the archive or missed its island")
	}
	if em := p.emigrants(1, 0, 2); len(em) != 2 || em[0].ID != 3 || em[1].ID != 6 {
		t.Errorf("emigrants of island 1: %v (the migrant copy must not move again)", ids(em))
	}
	if em := p.emigrants(0, 1, 2); len(em) != 2 || em[0].ID != 1 || em[1].ID != 2 {
		t.Errorf("emigrants of island 0: %v, want [1 2]: 5 is on island 1 already", ids(em))
	}
}

func TestClaimDedup(t *testing.T) {
	p := newPopulation(ObjectiveScore, 1, 5)
	if p.claim("x", 1) != 0 {
		t.Error("a new program is a duplicate")
	}
	if p.claim("x", 1) != 0 {
		t.Error("a member's own claim again is a duplicate")
	}
	if p.claim("x", 2) != 1 || p.claim("", 3) != 0 {
		t.Error("dedup index")
	}
}

func TestParentSampling(t *testing.T) {
	p := newPopulation(ObjectiveScore, 1, 10)
	for i := int64(1); i <= 5; i++ {
		p.settle(child(i, 0, "acceptable", float64(100*i), 10))
	}
	p.settle(child(6, 0, "error", 0, 0))
	r := rand.New(rand.NewPCG(1, 1))
	counts := map[int64]int{}
	sel := SelectionConfig{Strategy: SelectPowerLaw, Alpha: 1, Exploration: ptr(0.0), ChildPenalty: ptr(0.0)}
	for range 10000 {
		counts[p.sampleParent(r, 0, sel).ID]++
	}
	if counts[6] != 0 {
		t.Error("a failed program was drawn while valid ones exist")
	}
	// Power law over the rank: weights 1, 1/2, 1/3, 1/4, 1/5.
	if counts[1] < counts[2] || counts[2] < counts[3] || counts[3] < counts[5] || counts[1] < 3500 || counts[1] > 4800 {
		t.Errorf("power law draws %v", counts)
	}
	// The child penalty moves draws away from an expanded parent.
	for range 20 {
		p.expand(1)
	}
	pen := sel
	pen.ChildPenalty = ptr(1.0)
	counts = map[int64]int{}
	for range 5000 {
		counts[p.sampleParent(r, 0, pen).ID]++
	}
	if counts[1] > counts[2] {
		t.Errorf("penalized draws %v", counts)
	}
	soft := SelectionConfig{Strategy: SelectSoftmax, Temperature: 0.5, Exploration: ptr(0.0), ChildPenalty: ptr(0.0)}
	counts = map[int64]int{}
	for range 5000 {
		counts[p.sampleParent(r, 0, soft).ID]++
	}
	if counts[1] < counts[5] || counts[5] == 0 && counts[4] == 0 && counts[3] == 0 && counts[2] == 0 {
		t.Errorf("softmax draws %v", counts)
	}
	// An island of failures still gives a parent.
	q := newPopulation(ObjectiveScore, 1, 10)
	q.settle(child(1, 0, "error", 0, 0))
	if got := q.sampleParent(r, 0, sel); got == nil || got.ID != 1 {
		t.Errorf("parent of an island of failures: %v", got)
	}
}

// The parent's draw reads each member's expansions from beside the
// island's ranking, kept as members settle and parents are drawn in any
// order (a resumed run counts expansions before its members settle); it
// draws what weighing by the expansions' map draws, draw for draw.
func TestParentDrawKeepsExpansions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	p := newPopulation(ObjectiveScore, 2, 10)
	verdicts := []runs.Verdict{"acceptable", "acceptable", "loss_too_high", "error"}
	var ids []int64
	for id := int64(1); id <= 400; id++ {
		c := child(id, int(id%2), verdicts[r.IntN(len(verdicts))], float64(r.IntN(1000)+1), 10)
		if r.IntN(4) == 0 { // expanded before it settles, as on resume
			p.expand(id)
		}
		p.settle(c)
		ids = append(ids, id)
		for range r.IntN(3) {
			p.expand(ids[r.IntN(len(ids))])
		}
	}
	for island := range 2 {
		if len(p.valid[island]) != len(p.validExpanded[island]) {
			t.Fatalf("island %d: %d valid members, %d counts", island, len(p.valid[island]), len(p.validExpanded[island]))
		}
		for i, c := range p.valid[island] {
			id := p.packedAt(c).id
			if int(p.validExpanded[island][i]) != p.expanded[id] {
				t.Fatalf("island %d, #%d: %d expansions beside the ranking, %d counted", island, id, p.validExpanded[island][i], p.expanded[id])
			}
		}
	}
	byMap := func(r *rand.Rand, island int, sel SelectionConfig) *store.Child {
		cands := rankedMembers(p, island)
		if r.Float64() < *sel.Exploration {
			return cands[r.IntN(len(cands))]
		}
		w := slices.Clone(p.powerLaw(sel.Alpha, len(cands)))
		for i, c := range cands {
			if n := p.expanded[c.ID]; n != 0 {
				w[i] /= math.Pow(1+float64(n), *sel.ChildPenalty)
			}
		}
		return cands[weighted(r, w)]
	}
	sel := SelectionConfig{Strategy: SelectPowerLaw, Alpha: 1, Exploration: ptr(0.1), ChildPenalty: ptr(0.5)}
	a, b := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
	for n := range 5000 {
		if got, want := p.sampleParent(a, n%2, sel), byMap(b, n%2, sel); got.ID != want.ID {
			t.Fatalf("draw %d: #%d, weighing by the map draws #%d", n, got.ID, want.ID)
		}
	}
}

// T is drawn from the best acceptable programs, not uniformly from an
// archive that holds failures; D from outside T; and both are non-empty
// whenever the run has two programs besides the parent (the runs
// never showed a diverse set, and showed three failures as "top").
func TestInspirationSets(t *testing.T) {
	p := newPopulation(ObjectiveScore, 1, 10)
	p.settle(child(1, 0, "acceptable", 500, 10))
	for i := int64(2); i <= 4; i++ {
		p.settle(child(i, 0, "loss_too_high", float64(10*i), 10)) // better scores, worse verdict
	}
	for i := int64(5); i <= 9; i++ {
		p.settle(child(i, 0, "acceptable", float64(100*i), 10))
	}
	p.settle(child(10, 0, "error", 0, 0))
	r := rand.New(rand.NewPCG(2, 2))
	parent := p.member(1)
	best := map[int64]bool{5: true, 6: true, 7: true, 8: true, 9: true} // the acceptable ones, parent excluded
	for range 200 {
		top := p.sampleTop(r, 2, parent, true)
		if len(top) != 2 {
			t.Fatalf("top set %v", ids(top))
		}
		for _, c := range top {
			if !best[c.ID] || c.ID > 8 { // the 2k = 4 best acceptable: 5, 6, 7, 8
				t.Fatalf("top set %v: want two of the four best acceptable programs", ids(top))
			}
		}
		div := p.sampleDiverse(r, 3, parent, top)
		if len(div) != 3 {
			t.Fatalf("diverse set %v", ids(div))
		}
		seen := map[int64]bool{}
		for _, c := range append(div, top...) {
			if c.ID == 1 || seen[c.ID] {
				t.Fatalf("sets %v / %v hold the parent or a repeat", ids(top), ids(div))
			}
			seen[c.ID] = true
		}
	}
	// Fewer acceptable than asked for: all of them, then the rest in rank
	// order; and a program is left for D.
	q := newPopulation(ObjectiveScore, 1, 10)
	q.settle(child(1, 0, "acceptable", 500, 10))
	q.settle(child(2, 0, "loss_too_high", 100, 10))
	q.settle(child(3, 0, "acceptable", 300, 10))
	top := q.sampleTop(r, 3, q.member(1), true)
	div := q.sampleDiverse(r, 2, q.member(1), top)
	if len(top) != 1 || top[0].ID != 3 || len(div) != 1 || div[0].ID != 2 {
		t.Errorf("two programs besides the parent: top %v, diverse %v; want [3] and [2]", ids(top), ids(div))
	}
	if top := q.sampleTop(r, 3, q.member(1), false); len(top) != 2 || top[0].ID != 3 || top[1].ID != 2 {
		t.Errorf("no diverse set wanted: top %v, want [3 2]", ids(top))
	}
}

func TestEnsemble(t *testing.T) {
	models := []Model{{Name: "cheap", Weight: 1}, {Name: "dear", Weight: 3}}
	r := rand.New(rand.NewPCG(3, 3))
	fixed := newEnsemble(models, BanditConfig{})
	counts := map[string]int{}
	for range 4000 {
		counts[fixed.choose(r)]++
	}
	if counts["dear"] < 2800 || counts["dear"] > 3200 {
		t.Errorf("weights 1:3 drew %v", counts)
	}
	for _, strategy := range []string{BanditUCB1, BanditThompson} {
		e := newEnsemble(models, Defaults().Bandit)
		e.strategy = strategy
		if strategy == BanditUCB1 && (e.choose(r) != "cheap" || func() bool { e.record("cheap", false, 0); return e.choose(r) != "dear" }()) {
			t.Errorf("%s: untried models first", strategy)
		}
		// cheap improves often for little; dear rarely for a lot.
		for i := range 200 {
			e.record("cheap", i%3 == 0, 0.01)
			e.record("dear", i%10 == 0, 0.5)
		}
		counts := map[string]int{}
		for range 1000 {
			counts[e.choose(r)]++
		}
		if counts["cheap"] < 800 {
			t.Errorf("%s: improvements per dollar favour cheap, drew %v", strategy, counts)
		}
		saved := e.save()
		f := newEnsemble([]Model{{Name: "cheap"}, {Name: "new"}}, Defaults().Bandit)
		if err := f.load(saved); err != nil {
			t.Fatal(err)
		}
		if f.stats["cheap"].Children != e.stats["cheap"].Children || f.stats["new"].Children != 0 || f.stats["dear"] != nil {
			t.Errorf("%s: restored %+v", strategy, f.stats)
		}
	}
	for _, k := range []float64{0.5, 1, 3} {
		sum := 0.0
		for range 4000 {
			sum += gammaSample(r, k)
		}
		if m := sum / 4000; m < 0.9*k || m > 1.1*k {
			t.Errorf("Gamma(%g) mean %g", k, m)
		}
	}
}

func TestPromptsRender(t *testing.T) {
	p, err := loadPrompts("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.pool, ",") != "combine,convergence,explore,profile,speed" {
		t.Errorf("pool %v", p.pool)
	}
	d := &promptData{
		Track:     trackView{Name: "tiny", Device: "cpu", FullRun: "5m0s", CompileBudget: "1m0s", Target: 2.7, Floor: 2.39, Threads: 2},
		Objective: objectiveText(ObjectiveScore), ProgramName: "train.py", Program: "import frontier_harness as fh\nLR = 1\n",
		Parent:    programView{ID: 7, Metrics: "acceptable: val loss 2.69", Summary: "sections: forward 40%"},
		Reference: programView{ID: 1, Metrics: "acceptable: val loss 2.70"},
		Top:       []programView{{ID: 9, Metrics: "acceptable", Diff: "--- a\n+++ b\n"}},
		Diverse:   []programView{{ID: 4, Metrics: "error: boom", Diff: "--- a\n+++ b\n"}},
		LastError: "NameError: x", Attempt: 2, Branching: 10, Iteration: 3, Idea: "Use a better optimizer.",
		Error: "Traceback: boom", Description: "a change", PreviousAnswer: "<<<<<<< SEARCH\nfoo\n",
	}
	for name := range p.byID {
		sys, user, err := p.render(name, d)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(sys, "NanoGPT speedrun") || !strings.Contains(user, "frontier:protected") || !strings.Contains(user, "2.7") {
			t.Errorf("%s: the contract is missing:\n%s", name, user)
		}
		if name != promptIdea && !strings.Contains(user, ">>>>>>> REPLACE") {
			t.Errorf("%s: no answer format", name)
		}
		if !strings.Contains(user, "LR = 1") {
			t.Errorf("%s: no program", name)
		}
	}
	_, user, _ := p.render("speed", d)
	for _, want := range []string{"#9", "#4", "error: boom", "NameError: x", "attempt 2 of 10", "iteration 3", "sections: forward 40%"} {
		if !strings.Contains(user, want) {
			t.Errorf("templated prompt lacks %q", want)
		}
	}
	_, user, _ = p.render(promptImplement, d)
	if !strings.Contains(user, "Use a better optimizer.") {
		t.Error("implementation prompt lacks the idea")
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine.tmpl"), []byte(`{{define "user"}}{{template "contract" .}} Only shorten the program. {{template "format" .}}{{end}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "speed.tmpl"), []byte(`{{define "user"}}replaced {{.ProgramName}}{{end}}`), 0o644)
	p2, err := loadPrompts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, user, _ := p2.render("speed", d); user != "replaced train.py\n" {
		t.Errorf("override: %q", user)
	}
	if _, err := loadPrompts(dir, []string{"mine", "profile"}); err != nil {
		t.Error(err)
	}
	if _, err := loadPrompts("", []string{"nope"}); err == nil || !strings.Contains(err.Error(), "no template \"nope\"") {
		t.Errorf("unknown template: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "broken.tmpl"), []byte(`{{define "user"}}{{.Nope}}{{end}}`), 0o644)
	p3, err := loadPrompts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p3.render("broken", d); err == nil {
		t.Error("a template with an unknown field rendered")
	}
}

func TestTelemetrySummary(t *testing.T) {
	// Shares of step time for sections, with time outside every section
	// said apart (it took a slot of four before); operator shares said to
	// be of the listed operators.
	res := &eval.Result{
		Sections: []harness.Section{{Name: "data", Pct: 2, AvgMs: 0.1}, {Name: "(untracked)", Pct: 15, AvgMs: 4}, {Name: "forward", Pct: 41, AvgMs: 12},
			{Name: "backward", Pct: 38, AvgMs: 11}, {Name: "optimizer", Pct: 3, AvgMs: 1}},
		TopOps: &harness.TopOps{Kind: "cpu", Ops: []harness.Op{{Name: "aten::mm", TotalMs: 30}, {Name: "aten::bmm", TotalMs: 10}}},
	}
	got := telemetrySummary(res)
	want := "share of step time: forward 41% (12.00 ms/step), backward 38% (11.00 ms/step), optimizer 3% (1.00 ms/step), data 2% (0.10 ms/step), outside any section 15%; " +
		"top cpu ops (share of the 2 listed ops' time): aten::mm 75%, aten::bmm 25%"
	if got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	if telemetrySummary(&eval.Result{}) != "" {
		t.Error("no telemetry should give no summary")
	}
}

func TestClip(t *testing.T) {
	s := strings.Repeat("a", 50) + strings.Repeat("b", 50)
	c := clip(s, 30)
	if !strings.HasPrefix(c, "aaaa") || !strings.HasSuffix(c, "bbbb") || !strings.Contains(c, "70 bytes cut") {
		t.Errorf("clip %q", c)
	}
	if clipTail(s, 10) != "[... 90 bytes cut ...]\nbbbbbbbbbb" || clip("short", 30) != "short" {
		t.Error("clipTail")
	}
	if runs.ClassOf(runs.ApplyFailed) != runs.Buggy || runs.ClassOf("timeout") != runs.Buggy || runs.ClassOf(runs.NoProposal) != runs.ClassNone || runs.ClassOf("acceptable") != runs.ClassAcceptable {
		t.Error("classes")
	}
}

// The run records the first iteration planned for meta-prompting, -1 when
// it never meta-prompts: off, never drawn, or no model that writes ideas.
func TestPlannedMetaStart(t *testing.T) {
	no, zero, start := false, 0.0, 7
	llm := []Model{{Name: "m", Kind: propose.KindLLM}}
	mutate := []Model{{Name: "mutate", Kind: propose.KindMutate}}
	for _, c := range []struct {
		name   string
		cfg    Config
		models []Model
		want   int
	}{
		{"default", Config{}, llm, 20},
		{"start", Config{MetaPrompting: MetaConfig{StartIteration: &start}}, llm, 7},
		{"off", Config{MetaPrompting: MetaConfig{Enabled: &no}}, llm, -1},
		{"never drawn", Config{MetaPrompting: MetaConfig{Probability: &zero}}, llm, -1},
		{"mutate only", Config{}, mutate, -1},
	} {
		if got := c.cfg.Resolved().plannedMetaStart(c.models); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// The run's vocabulary spells the evaluator's verdicts as the evaluator
// does: a child's verdict is the evaluator's, copied.
func TestVerdictVocabulary(t *testing.T) {
	for ev, v := range map[eval.Verdict]runs.Verdict{
		eval.Acceptable: runs.Acceptable, eval.LossTooHigh: runs.LossTooHigh, eval.Invalid: runs.Invalid,
		eval.Error: runs.Error, eval.Timeout: runs.Timeout, eval.NoResult: runs.NoResult, eval.FastOK: runs.FastOK,
	} {
		if string(ev) != string(v) {
			t.Errorf("eval verdict %q is %q in internal/runs", ev, v)
		}
	}
}
