package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/importer"
	"github.com/frontier-bench/frontier/internal/track"
)

func TestTrackImport(t *testing.T) {
	code, err := os.ReadFile("../../internal/eval/testdata/speedrun_mini.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sep := importer.Separator + "\n"
	logPath := filepath.Join(dir, "2026-03-01_Mini", "5f0c8e1a-1111-4222-8333-444455556666.txt")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	record := string(code) + sep + "Running PyTorch 2.9.0\n" + sep + "step:30/30 val_loss:3.2790 train_time:81234ms step_avg:2707.80ms\n"
	if err := os.WriteFile(logPath, []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tracks", "mini")

	// Through cobra, as a user types it.
	g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	cmd := newTrackImportCmd(g)
	cmd.SetArgs([]string{"--from", logPath, "--out", out, "--gpus", "1"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := g.stdout.(*bytes.Buffer).String()
	for _, want := range []string{"imported the record log", "as track 2026-03-01_mini", "1 GPU (torchrun", "val-tokens",
		"ends at step 30/30 with val loss 3.2790 in 81.2s", "frontier track check " + out} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// --json: the same, for a script.
	jout := filepath.Join(dir, "tracks", "mini-json")
	code2, stdout, stderr := runCLI(t, "track", "import", "--from", logPath, "--out", jout, "--gpus", "1", "--json")
	var im trackImportJSON
	if err := json.Unmarshal([]byte(stdout), &im); code2 != 0 || err != nil {
		t.Fatalf("track import --json: exit %d, %v\n%s%s", code2, err, stdout, stderr)
	}
	if im.Track != "2026-03-01_mini" || im.Dir != jout || im.Kind != "log" || im.Contract != "log" || im.GPUs != 1 ||
		len(im.Protected) == 0 || im.Protected[0].FirstLine == 0 || im.Record == nil || im.Record.ValLoss != 3.279 || im.Record.Steps != 30 ||
		len(im.Next) != 2 {
		t.Errorf("track import --json: %+v", im)
	}
	var check bytes.Buffer
	if err := runTrackCheck(context.Background(), &check, track.NewRegistry(nil), out, false); err != nil || !strings.Contains(check.String(), "is valid") {
		t.Fatalf("track check: %v %s", err, check.String())
	}

	// Errors are usage errors that say what to do.
	cases := []struct {
		o    trackImportOptions
		want string
	}{
		{trackImportOptions{}, "--from is required"},
		{trackImportOptions{from: filepath.Join(dir, "missing.txt")}, "the record " + filepath.Join(dir, "missing.txt") + " does not exist"},
		{trackImportOptions{from: dir}, "is a folder, not a regular file"},
		{trackImportOptions{from: logPath, out: out}, "not empty"},
	}
	notSpeedrun := filepath.Join(dir, "train.py")
	if err := os.WriteFile(notSpeedrun, []byte("import torch\nprint('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		o    trackImportOptions
		want string
	}{trackImportOptions{from: notSpeedrun, out: filepath.Join(dir, "x")}, "no Hyperparameters block"})
	for _, c := range cases {
		err := runTrackImport(context.Background(), &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != exitUsage {
			t.Errorf("%+v: err = %v, want a usage error with %q", c.o, err, c.want)
		}
	}
}
