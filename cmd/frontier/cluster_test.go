package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// TestMain lets the test binary serve as the frontier of a cluster's nodes
// (phase-exec, which the Slurm executor runs there) and as the sandbox's
// helper, as the frontier binary does; and, with FRONTIER_TEST_MAIN set,
// as the frontier command itself, signals and all (input_test.go).
func TestMain(m *testing.M) {
	if os.Getenv("FRONTIER_TEST_MAIN") == "1" {
		main()
	}
	if slices.Contains(os.Args[1:], "phase-exec") || slices.Contains(os.Args[1:], "phase-worker") || len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	removeSharedData()
	os.Exit(code)
}

// evalJSON evaluates the quick track's reference with frontier eval --json
// under the configuration cfg and returns the result.
func evalJSON(t *testing.T, cfg string) *eval.Result {
	t.Helper()
	code, out, stderr := runCLI(t, "--config", cfg, "eval", "--track", "quick", "--json", "--quiet")
	var res eval.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, stderr)
	}
	return &res
}

// A full frontier eval of a reference gives the same verdict through the
// test cluster as on this machine; its phases ran on the cluster's node.
func TestEvalThroughSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training programs as Slurm jobs")
	}
	testdeps.Slurm(t)
	abs, _ := filepath.Abs(quickTracks)
	local := t.TempDir()
	onSlurm := t.TempDir()
	data := sharedDataDir(t)
	localCfg := writeTemp(t, local, "frontier.yaml", fmt.Sprintf("home: %s\ndata_dir: %s\ntracks_dirs: [%s]\n", local, data, abs))
	slurmCfg := writeTemp(t, onSlurm, "frontier.yaml", fmt.Sprintf("home: %s\ndata_dir: %s\ntracks_dirs: [%s]\nexecutor: slurm\nslurm: {poll: 1s}\n", onSlurm, data, abs))
	a, b := evalJSON(t, localCfg), evalJSON(t, slurmCfg)
	if a.Verdict != b.Verdict || a.Verdict != eval.Acceptable {
		t.Errorf("verdict here %s (%s), through Slurm %s (%s)", a.Verdict, a.Reason, b.Verdict, b.Reason)
	}
	if b.Full == nil || b.Full.Node == "" || b.Full.Scorer == nil || b.Probe == nil || !b.Probe.OK {
		t.Errorf("the Slurm run's full phase: %+v, probe %+v", b.Full, b.Probe)
	}
	if matches, _ := filepath.Glob(filepath.Join(onSlurm, "runs", "slurm", "frontier-*-full", "report.json")); len(matches) != 1 {
		t.Errorf("reports of full phases: %v", matches)
	}
}

// A short search runs its evaluations in a Slurm worker and ends as it
// does here: every child settled.
func TestEvolveThroughSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training programs as Slurm jobs")
	}
	testdeps.Slurm(t)
	home := t.TempDir()
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf(
		"home: %s\ndata_dir: %s\ntracks_dirs: [%s]\nexecutor: slurm\nslurm: {poll: 1s, jobs: 2, workers: 1, worker_idle: 30s}\nevolve:\n  islands: 1\n  branching_factor: 2\n  confirm: {enabled: false}\n", home, sharedDataDir(t), abs))
	code, out, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "quick", "--iterations", "1", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "stopped: iterations") {
		t.Errorf("no run summary:\n%s", out)
	}
	phases, _ := filepath.Glob(filepath.Join(home, "runs", "slurm", "frontier-*-*", "report.json"))
	workers, _ := filepath.Glob(filepath.Join(home, "runs", "slurm", "workers", "*", "worker-*.out"))
	if len(phases) < 2 || len(workers) != 1 {
		t.Errorf("%d phases ran in %d workers: want them all in one\n%s", len(phases), len(workers), stderr)
	}
}
