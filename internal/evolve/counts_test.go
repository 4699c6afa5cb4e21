package evolve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

var crashLineRe = regexp.MustCompile(`(?m)^# CRASH \d+$`)

// revertingModel adds a crashing line, then answers the fix prompt by
// removing it: the fix gives back the parent's program.
func revertingModel() *llmtest.Fake {
	var n atomic.Int64
	f := &llmtest.Fake{}
	f.Respond = func(req llm.Request) llmtest.Reply {
		user := req.Messages[len(req.Messages)-1].Content
		r := llmtest.Reply{Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}
		if strings.Contains(user, "## A change that fails when it runs") {
			line := crashLineRe.FindString(user)
			r.Text = fmt.Sprintf("Remove it.\n\n<<<<<<< SEARCH\n%s\n=======\n>>>>>>> REPLACE\n", line)
			return r
		}
		r.Text = fmt.Sprintf("Add a line.\n\n<<<<<<< SEARCH\n=======\n# CRASH %d\n>>>>>>> REPLACE\n", n.Add(1))
		return r
	}
	return f
}

// A child whose fast check crashed and whose fix came back to its parent's
// program counts by its crash (buggy), not as a duplicate: the run
// with four crashing fast checks reported 0% buggy. Duplicates are shown
// apart. A resumed run still knows the crashing programs.
func TestOutcomeByAttempts(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	opts := fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: revertingModel()})
	// A program with a "# CRASH" line fails its fast check; every other
	// one passes it.
	opts.Evaluator = &evaltest.Scripted{Store: st, Rules: []evaltest.Rule{{Source: evaltest.Contains("# CRASH"),
		Outcome: evaltest.Outcome{Crash: "NameError: name 'crash' is not defined", Reason: "fast check: NameError: name 'crash' is not defined"}}},
		Else: func(req eval.Request, hash string) evaltest.Outcome {
			req.FastOnly = false // hashOutcome without its failing fast checks
			return hashOutcome(req, hash)
		}}
	cfg := smallConfig()
	cfg.Budget.MaxIterations = 1
	cfg.Islands = 1
	e, sum := runEngine(t, opts, cfg)
	ctx := context.Background()
	run, _ := st.Run(ctx, fmt.Sprint(e.RunID()))
	s, err := runview.Summarize(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status.Buggy != 3 || sum.Status.Duplicates != 0 || s.Settled.Classes[runs.Buggy] != 3 || s.EndedOnDuplicate != 3 {
		t.Fatalf("status buggy %d, duplicates %d; summary buggy %d, ended on a duplicate %d; want 3, 0, 3, 3",
			sum.Status.Buggy, sum.Status.Duplicates, s.Settled.Classes[runs.Buggy], s.EndedOnDuplicate)
	}
	var crashing []string
	attempts, _ := st.Attempts(ctx, run.ID)
	for _, c := range s.Children {
		if c.Verdict != runs.Error || c.SourceID != s.Reference.ID || !strings.Contains(c.Reason, "its fix then gave #1's program") {
			t.Errorf("child %d: %s (%s), source %d", c.ID, c.Verdict, c.Reason, c.SourceID)
		}
		for _, a := range attempts {
			if a.ChildID == c.ID && a.FastVerdict == runs.Error {
				src, _ := st.Program(ctx, a.ProgramHash)
				crashing = append(crashing, edit.NormalizedHash(src))
			}
		}
	}
	// Resumed, the run knows every crashing program: proposing one again
	// would be a duplicate, not another fast check.
	cfg2 := Overrides{Budget: BudgetConfig{MaxIterations: 2}}
	e2, err := Resume(ctx, opts, run, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if len(crashing) != 3 {
		t.Fatalf("%d crashing programs, want 3", len(crashing))
	}
	for _, norm := range crashing {
		if first, _ := e2.pop.byNorm.get(norm); first == 0 {
			t.Errorf("the resumed run forgot a program that crashed in its fast check")
		}
	}
	// Shown among the diverse programs of a prompt, such a child shows
	// the change that crashed, not the empty change of its last program
	// (its parent's) next to its crash.
	var kid *store.Child
	for _, c := range allMembers(e2.pop) {
		if c.ParentID == s.Reference.ID && c.Verdict == runs.Error {
			kid = c
			break
		}
	}
	if kid == nil {
		t.Fatal("no crashed child of the reference")
	}
	w := &proposalWork{child: store.Child{ID: 999}, kind: kindPropose, model: &Model{Name: "fake"},
		parent: s.Reference, baseHash: s.Reference.ProgramHash, diverse: []store.Child{e2.shownAs(kid)},
		parents: map[int64]store.Child{s.Reference.ID: *s.Reference}}
	ref, _ := st.Program(ctx, s.Reference.ProgramHash)
	d, err := e2.work.prompter.data(ctx, w, ref)
	if err != nil {
		t.Fatal(err)
	}
	if diff := d.Diverse[0].Diff; strings.Contains(diff, "(no difference)") || !strings.Contains(diff, "+# CRASH") {
		t.Errorf("a crashed child is shown with an empty change:\n%s", diff)
	}
}

// A resumed run removes the folder an evaluation killed with the last
// session left: the one it recorded, else the one named as the evaluator
// names folders, started within seconds of it.
func TestLeftFolders(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	hash := strings.Repeat("ab", 32)
	mine := filepath.Join(dir, start.Add(time.Second).Format("20060102-150405")+"-"+hash[:12]+"-s0-123")
	otherSeed := filepath.Join(dir, start.Format("20060102-150405")+"-"+hash[:12]+"-s1-456")
	later := filepath.Join(dir, start.Add(time.Hour).Format("20060102-150405")+"-"+hash[:12]+"-s0-789")
	for _, d := range []string{mine, otherSeed, later} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := leftFolders(dir, &store.Evaluation{ProgramHash: hash, Seed: 0, StartedAt: start})
	if len(got) != 1 || got[0] != mine {
		t.Errorf("left folders %v, want only %s", got, mine)
	}
	if got := leftFolders(dir, &store.Evaluation{ProgramHash: hash, RunDir: "/kept/here"}); len(got) != 1 || got[0] != "/kept/here" {
		t.Errorf("a recorded folder: %v", got)
	}
	st := openStore(t, "")
	e, err := New(context.Background(), Options{Store: st, Track: quickTrack(t), Evaluator: fakeEvaluator(st),
		Models: []Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}}, RunsDir: dir}, smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := st.PutProgram(context.Background(), []byte("x = 1\n"), "")
	ev := &store.Evaluation{ProgramHash: h, Track: "quick", TrackHash: "t", Seed: 0}
	if err := st.CreateEvaluation(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, ev.StartedAt.Format("20060102-150405")+"-"+h[:12]+"-s0-1")
	os.MkdirAll(left, 0o755)
	if err := e.interruptAndClean(context.Background(), h, ev.StartedAt.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed evaluation's folder is still there: %v", err)
	}
	if got, _ := st.Evaluation(context.Background(), ev.ID); got.State != store.StateInterrupted {
		t.Errorf("evaluation %s, want interrupted", got.State)
	}
}

// A run started on a track folder records the folder.
func TestTrackDirRecorded(t *testing.T) {
	st := openStore(t, "")
	e, err := New(context.Background(), fakeOptions(t, st), smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join("testdata", "quick"))
	if e.run.TrackDir != abs {
		t.Errorf("track dir %q, want %q", e.run.TrackDir, abs)
	}
}
