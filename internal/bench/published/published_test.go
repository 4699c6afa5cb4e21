package published

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench"
)

// TestImport imports the fixture checkout, written in the published
// benchmark's layout: records 1 to 3 are speedrun-style scripts, record 4's
// script is not one (it keeps its time only); records 2 -> 3 get slower.
func TestImport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "suite")
	im, err := Import(Options{From: "testdata/checkout", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	s := im.Suite
	if s.Name != "llm-speedrunner" || s.Contract != "log" || len(s.Records) != 4 || !strings.Contains(s.Hardware, "8 x H100") {
		t.Fatalf("suite %s (%s) with %d records", s.Name, s.Contract, len(s.Records))
	}
	// Record 3 is slower than record 2: that task has nothing to
	// reproduce and is left out, as the paper leaves out record 6's.
	if got := strings.Join(im.Tasks, " "); got != "record_1 record_3" {
		t.Errorf("tasks %s", got)
	}
	r1, _ := s.Record("record_1")
	if r1.TimeMs != 949528 || r1.ValLoss != 3.2751 || r1.Track != "tracks/record_1" || r1.Description != "Baseline." {
		t.Errorf("record_1: %+v", r1)
	}
	if r4, _ := s.Record("record_4"); r4.Program != "" || r4.TimeMs != 600000 {
		t.Errorf("record_4 (a script that cannot run) should keep its time only: %+v", r4)
	}
	// Each record's script is its own track under the log contract, with
	// its data paths protected.
	prog, err := s.Program("record_2")
	if err != nil || !strings.Contains(string(prog), "# frontier:protected begin train-files") || !strings.Contains(string(prog), "num_iterations = 4500") {
		t.Errorf("record_2's program:\n%s\n%v", prog, err)
	}
	spec, err := os.ReadFile(filepath.Join(out, "tracks", "record_2", "track.yaml"))
	if err != nil || !strings.Contains(string(spec), "contract: log") {
		t.Errorf("record_2's track: %v", err)
	}
	if got := s.TrackOf(r1); got != filepath.Join(out, "tracks", "record_1") {
		t.Errorf("TrackOf(record_1) = %s", got)
	}

	task, err := s.Task("record_1")
	if err != nil || task.Start != "record_1" || task.Goal != "record_2" {
		t.Fatalf("task record_1: %+v, %v", task, err)
	}
	hints, err := s.HintsFor(task, bench.HintLevels{1, 2, 3})
	if err != nil || !strings.Contains(hints[0].Text, "HINT-1-PSEUDO") || !strings.Contains(hints[1].Text, "HINT-1-DESCRIPTION") ||
		!strings.Contains(hints[2].Text, "HINT-1-PAPER") {
		t.Errorf("hints %+v, %v", hints, err)
	}
	if d, err := s.GroundTruth(task); err != nil || !strings.Contains(d, "+    num_iterations = 4500") {
		t.Errorf("ground truth %q, %v", d, err)
	}
	// Only levels 1 to 3 are hints: the background document is not copied.
	if _, err := os.Stat(filepath.Join(out, "hints", "record_2", "level_9_muon.txt")); err == nil {
		t.Error("level_9_muon.txt was imported as a hint")
	}
	t3, _ := s.Task("record_3")
	if t3.Goal != "record_4" || len(t3.Hints.Levels()) != 1 {
		t.Errorf("task record_3: %+v", t3)
	}
	notes := strings.Join(im.Notes, "\n")
	for _, want := range []string{"record_4: its script cannot run", "task record_3 has hints at levels [1] only"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if skipped := strings.Join(im.Skipped, "\n"); !strings.Contains(skipped, "task record_2: record 3 is not faster") {
		t.Errorf("left out:\n%s", skipped)
	}
	readme, _ := os.ReadFile(filepath.Join(out, "README.md"))
	if !strings.Contains(string(readme), "log contract") || !strings.Contains(string(readme), "record_4: its script cannot run") {
		t.Errorf("README:\n%s", readme)
	}
	// The written suite passes bench check, and a second import refuses
	// to write over it.
	if _, err := bench.LoadDir(out); err != nil {
		t.Error(err)
	}
	if _, err := Import(Options{From: "testdata/checkout", Out: out}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("importing over a suite: %v", err)
	}
}

func TestImportNotACheckout(t *testing.T) {
	_, err := Import(Options{From: t.TempDir(), Out: filepath.Join(t.TempDir(), "s")})
	if err == nil || !strings.Contains(err.Error(), "not a checkout") {
		t.Errorf("an empty folder: %v", err)
	}
}

// paperTimes are the published benchmark's results.json train times (ms)
// of records 1 to 21, as its repository holds them.
var paperTimes = []float64{2968348, 2209926, 1386147, 1301740, 949528, 766259, 773072, 662205, 505531, 477150, 442985,
	317839, 289805, 273107, 241463, 232971, 220374, 211840, 199442, 188680, 184262}

// TestImportPaperTasks imports a checkout shaped as the published one: 21
// records with its times, record 7 shipping record 6's very script (its
// gain was a PyTorch upgrade) and record 17's script setting val_tokens
// twice. The import must give the paper's 19 tasks: 1 to 20 without 6.
func TestImportPaperTasks(t *testing.T) {
	from := t.TempDir()
	base, err := os.ReadFile("testdata/checkout/workspace_templates/nanogpt_speedrun/record_1/train_gpt2.py")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 21; i++ {
		id := fmt.Sprintf("record_%d", i)
		script := strings.Replace(string(base), "num_iterations = 5100", fmt.Sprintf("num_iterations = %d", 6000-10*i), 1)
		switch i {
		case 7:
			script = strings.Replace(string(base), "num_iterations = 5100", fmt.Sprintf("num_iterations = %d", 6000-10*6), 1)
		case 17:
			script = strings.Replace(script, "    val_loss_every = 125\n", "    val_loss_every = 125\n    val_tokens = 10485760  # set again\n", 1)
		}
		dir := filepath.Join(from, TemplatesDir, id)
		write(t, filepath.Join(dir, scriptFile), script)
		write(t, filepath.Join(dir, resultsFile), fmt.Sprintf(`{"metrics": {"n_steps": 1000, "val_loss": 3.27, "train_time": %.0f}, "hypothesis": "record %d"}`, paperTimes[i-1], i))
		if i < 21 {
			k := filepath.Join(from, KnowledgeDir, id)
			for level, f := range hintFiles {
				write(t, filepath.Join(k, f), fmt.Sprintf("hint %d of %s", level, id))
			}
			write(t, filepath.Join(k, diffFile), "diff")
		}
	}
	im, err := Import(Options{From: from, Out: filepath.Join(t.TempDir(), "suite")})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 20; i++ {
		if i != 6 {
			want = append(want, fmt.Sprintf("record_%d", i))
		}
	}
	if !slices.Equal(im.Tasks, want) {
		t.Errorf("tasks %v\nwant the paper's 19: %v\nleft out: %q", im.Tasks, want, im.Skipped)
	}
	if len(im.Records) != 21 {
		t.Errorf("%d records, want 21", len(im.Records))
	}
	if r, _ := im.Suite.Record("record_17"); r == nil || r.Program == "" {
		t.Errorf("record 17 keeps its time only: its script must run as the published benchmark runs it (%+v)", r)
	}
	if skipped := strings.Join(im.Skipped, "\n"); !strings.Contains(skipped, "task record_6: record 7 runs the same script as record 6") {
		t.Errorf("left out:\n%s", skipped)
	}
	if notes := strings.Join(im.Notes, "\n"); !strings.Contains(notes, "record_17: line") || !strings.Contains(notes, "sets val_tokens again") {
		t.Errorf("notes:\n%s", notes)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
