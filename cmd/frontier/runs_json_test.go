package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
)

// jsonOf runs frontier with args, which must succeed, and decodes its
// stdout into v: one JSON document and nothing else.
func jsonOf(t *testing.T, v any, args ...string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%q: exit %d\n%s%s", args, code, stdout, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, stdout)
	}
	if dec.More() {
		t.Fatalf("%q: more than one JSON document:\n%s", args, stdout)
	}
}

// Every command that lists or shows a run prints one JSON document with
// --json, in the words of internal/runs: a run with a confirmed record.
func TestRunsJSON(t *testing.T) {
	home := t.TempDir()
	confirmedRun(t, home)

	var list runview.RunsDoc
	jsonOf(t, &list, "--home", home, "runs", "--json")
	if len(list.Runs) != 1 {
		t.Fatalf("runs --json: %+v", list)
	}
	r := list.Runs[0]
	if r.Name != "db-run" || r.Track != "tiny" || r.State != "running" || r.Children != 1 || r.Acceptable != 1 || r.Record == nil ||
		r.Record.ID != 2 || r.Record.Reference || r.Record.N != 5 || r.Record.Speedup == nil || math.Abs(*r.Record.Speedup-0.2) > 1e-9 ||
		r.Record.ClaimID == 0 || !strings.Contains(r.Record.Evidence, "n = 5") || r.Candidate != nil {
		t.Errorf("runs --json: %+v, record %+v", r, r.Record)
	}

	var show runview.RunDoc
	jsonOf(t, &show, "--home", home, "runs", "show", "db-run", "--json")
	if show.Run.Name != "db-run" || show.Config == nil || len(show.Models) != 1 || show.Models[0].Name != "mutate" ||
		show.Verdicts.Classes[runs.ClassAcceptable] != 1 || show.Verdicts.Pending != 0 || len(show.Claims) != 1 ||
		show.Claims[0].State != string(runs.ClaimConfirmed) || len(show.Best) != 2 || show.Spend.Purposes == nil {
		t.Errorf("runs show --json: %+v", show)
	}
	var cfg struct {
		Islands int `json:"islands"`
	}
	if err := json.Unmarshal(show.Config, &cfg); err != nil || cfg.Islands != 4 {
		t.Errorf("runs show --json: config %s: %v", show.Config, err)
	}

	var best runsBestJSON
	jsonOf(t, &best, "--home", home, "runs", "best", "db-run", "--json")
	if best.Kind != "record" || best.Member.ID != 2 || best.Source != "x = 2\n" || best.Output != "" {
		t.Errorf("runs best --json: %+v", best)
	}
	file := filepath.Join(home, "best.py")
	var toFile runsBestJSON
	jsonOf(t, &toFile, "--home", home, "runs", "best", "db-run", "--json", "-o", file)
	if got, _ := os.ReadFile(file); toFile.Output != file || toFile.Source != "" || string(got) != "x = 2\n" {
		t.Errorf("runs best --json -o: %+v, wrote %q", toFile, got)
	}
	if code, _, stderr := runCLI(t, "--home", home, "runs", "best", "db-run", "--json", "-o", "-"); code != exitUsage || !strings.Contains(stderr, "not -o -") {
		t.Errorf("runs best --json -o -: exit %d: %s", code, stderr)
	}

	var diff runsDiffJSON
	jsonOf(t, &diff, "--home", home, "runs", "diff", "db-run", "--json")
	if diff.Member.ID != 2 || len(diff.Against) != 1 || diff.Against[0].Label != "reference" || diff.Against[0].Added != 1 ||
		diff.Against[0].Removed != 1 || !strings.Contains(diff.Against[0].Diff, "-x = 1\n+x = 2") {
		t.Errorf("runs diff --json: %+v", diff)
	}

	for _, args := range [][]string{{"runs", "child", "db-run", "2", "--json"}, {"runs", "show", "db-run", "--child", "2", "--json"}} {
		var child runview.MemberDoc
		jsonOf(t, &child, append([]string{"--home", home}, args...)...)
		if child.Run != "db-run" || child.Member.ID != 2 || child.Member.Origin != runs.OriginMutate || child.Member.Verdict != "acceptable" ||
			len(child.Lineage) != 2 || child.Lineage[0].Origin != runs.OriginReference || len(child.Claims) != 1 {
			t.Errorf("%q: %+v", args, child)
		}
	}

	var rep reportJSON
	jsonOf(t, &rep, "--home", home, "report", "db-run", "--json")
	if rep.Run != "db-run" || rep.Index != filepath.Join(home, "reports", "db-run", "index.html") || rep.Programs != 1 {
		t.Errorf("report --json: %+v", rep)
	}
	if _, err := os.Stat(rep.Index); err != nil {
		t.Error(err)
	}
}
