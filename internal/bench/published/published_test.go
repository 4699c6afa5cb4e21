package published

import (
	"os"
	"path/filepath"
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
	if s.Name != "llm-speedrunner" || s.Contract != "log" || len(s.Records) != 4 {
		t.Fatalf("suite %s (%s) with %d records", s.Name, s.Contract, len(s.Records))
	}
	if got := strings.Join(im.Tasks, " "); got != "record_1 record_2 record_3" {
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
	for _, want := range []string{"record_4: its script cannot run", "task record_2: record 3 is not faster", "task record_3 has hints at levels [1] only"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
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
