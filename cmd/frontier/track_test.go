package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/data"
)

func TestTrackShow(t *testing.T) {
	code, out, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "tiny")
	for _, want := range []string{"target val loss  3.45", "verification     repeats 1",
		"the model that starts the clock scores at least 5.0214 (an untrained model: ln 256 = 5.5452)", "logit noise at most 0.001 "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("track show lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown track: exit %d: %s", code, stderr)
	}
}

// The hostile spec (208 KB nested 100,000 levels deep: 15 GB and
// 136 s before) is refused at once, at the cost of a few allocations.
func TestTrackCheckHostileSpec(t *testing.T) {
	dir := t.TempDir()
	src := "name: x\nreference: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	os.WriteFile(filepath.Join(dir, "track.yaml"), []byte(src), 0o600)
	os.WriteFile(filepath.Join(dir, "train.py"), []byte("print(1)\n"), 0o600)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	code, _, stderr := runCLI(t, "--home", t.TempDir(), "track", "check", dir)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if code != exitUsage || !strings.Contains(stderr, "track.yaml:2:75: reference: nested deeper than 64 levels") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The command line, cobra and the registry cost a few megabytes; the
	// file itself is read once.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("track check allocated %d MB", alloc>>20)
	}
	if took > 2*time.Second {
		t.Errorf("track check took %v", took)
	}
}

// track check takes a folder, its track.yaml or a track's name; --json
// gives every error located.
func TestTrackCheck(t *testing.T) {
	home := t.TempDir()
	if code, out, stderr := runCLI(t, "--home", home, "track", "check", "tiny"); code != 0 || !strings.Contains(out, "track tiny in built-in is valid") {
		t.Errorf("check by name: exit %d\n%s%s", code, out, stderr)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "track.yaml"), []byte("name: bad\nreference: train.py\ndata: {train: ../../../../etc/*, val: \"..\", vocab_size: 3, bos_id: 1, val_tokens: 8, val_seq_len: 4}\ntarget_val_loss: 1\nlimits: {full_run: 5m}\ntelemetry: {top_k: 15.9}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "train.py"), []byte("print(1)\n"), 0o600)
	code, out, _ := runCLI(t, "--home", home, "track", "check", filepath.Join(dir, "track.yaml"), "--json")
	var got trackCheck
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitUsage || got.Valid {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	var keys []string
	for _, e := range got.Errors {
		keys = append(keys, fmt.Sprintf("%d:%d %s", e.Line, e.Column, e.Key))
	}
	if want := "6:20 telemetry.top_k"; len(keys) != 1 || keys[0] != want {
		// Inspect's errors come first, alone: the fraction.
		t.Errorf("errors %v, want [%s]", keys, want)
	}
	os.WriteFile(filepath.Join(dir, "track.yaml"), []byte(strings.Replace(mustRead(t, filepath.Join(dir, "track.yaml")), "top_k: 15.9", "top_k: 15", 1)), 0o600)
	code, out, _ = runCLI(t, "--home", home, "track", "check", dir, "--json")
	json.Unmarshal([]byte(out), &got)
	keys = keys[:0]
	for _, e := range got.Errors {
		keys = append(keys, e.Key)
	}
	if code != exitUsage || strings.Join(keys, " ") != "data.train data.val" {
		t.Errorf("exit %d, errors at %v:\n%s", code, keys, out)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --yaml and --json fill in the values that apply where the spec leaves
// the default to the code.
func TestTrackShowDefaults(t *testing.T) {
	home := t.TempDir()
	code, out, stderr := runCLI(t, "--home", home, "track", "show", "tiny", "--yaml")
	for _, want := range []string{"static_rules:\n  - compile-options", "max_noise: 0.", "min_initial_loss: 5.02", "full_run_max: 20m0s", "disk: 1GiB"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--yaml lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	code, out, stderr = runCLI(t, "--home", home, "track", "show", "tiny", "--json")
	var spec map[string]any
	if err := json.Unmarshal([]byte(out), &spec); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if spec["target_val_loss"] != 3.45 || spec["limits"].(map[string]any)["full_run"] != "5m0s" {
		t.Errorf("--json: %v", spec)
	}
	code, out, _ = runCLI(t, "--home", home, "track", "list", "--json")
	var list trackList
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list.Tracks) < 4 || list.Tracks[0].Name != "nanogpt" {
		t.Errorf("list --json: exit %d, %v\n%s", code, err, out)
	}
}

// TestTrackShowTinyFloor checks that track show prints the floor of the
// corpus built on this installation, and says when it will be known
// before.
func TestTrackShowTinyFloor(t *testing.T) {
	home := t.TempDir()
	code, out, stderr := runCLI(t, "--home", home, "track", "show", "tiny")
	if code != 0 || !strings.Contains(out, "loss floor: computed when the corpus is built") {
		t.Errorf("before a build (exit %d):\n%s%s", code, out, stderr)
	}
	if code, out, _ := runCLI(t, "--home", home, "track", "list"); code != 0 || !regexp.MustCompile(`(?m)^tiny +cpu +3.45 +on build `).MatchString(out) {
		t.Errorf("track list before a build (exit %d):\n%s", code, out)
	}
	p := data.DefaultTinyParams()
	p.ValShardTokens, p.TrainShardTokens, p.TrainShards = 70000, 4096, 1
	s := data.TinySecret{1}
	man, err := data.BuildTiny(context.Background(), filepath.Join(home, "data", "tiny"), data.TinyOptions{Params: p, Secret: &s})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "--home", home, "track", "show", "tiny")
	for _, want := range []string{
		fmt.Sprintf("loss floor %.4f on this installation's corpus", man.Tiny.Floor.Floor),
		fmt.Sprintf("n-gram baseline %.4f", man.Tiny.NGram.Best.Loss),
		"from secret " + s.Fingerprint(),
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("after a build, track show lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	// track list shows the same floor, in the table and as JSON.
	floor := fmt.Sprintf("%.4f", man.Tiny.Floor.Floor)
	if code, out, _ := runCLI(t, "--home", home, "track", "list"); code != 0 || !regexp.MustCompile(`(?m)^tiny +cpu +3.45 +`+regexp.QuoteMeta(floor)+` `).MatchString(out) {
		t.Errorf("track list after a build lacks the floor %s (exit %d):\n%s", floor, code, out)
	}
	_, out, _ = runCLI(t, "--home", home, "track", "list", "--json")
	var list trackList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, tr := range list.Tracks {
		if tr.Name == "tiny" && tr.LossFloor != man.Tiny.Floor.Floor {
			t.Errorf("track list --json: tiny's floor %v, want %v", tr.LossFloor, man.Tiny.Floor.Floor)
		}
	}
}

// eval --track takes what track check takes: a track's name, a folder, a
// folder's track.yaml, and a name that is a folder here with a
// track.yaml. A missing program is said once the track is found, before
// any Python.
func TestEvalTrackAsCheck(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o700)
	for _, f := range []string{"track.yaml", "train.py"} {
		os.WriteFile(filepath.Join(mine, f), []byte(mustRead(t, filepath.Join(quickTracks, "quick", f))), 0o600)
	}
	os.Mkdir(filepath.Join(dir, "notatrack"), 0o700)
	t.Chdir(dir)
	for _, arg := range []string{"mine", "./mine", mine, filepath.Join(mine, "track.yaml"), "mine/track.yaml"} {
		if code, out, stderr := runCLI(t, "--home", home, "track", "check", arg); code != 0 || !strings.Contains(out, "track quick in ") {
			t.Errorf("track check %s: exit %d\n%s%s", arg, code, out, stderr)
		}
		if code, _, stderr := runCLI(t, "--home", home, "eval", "--track", arg, "missing.py"); code != exitUsage || !strings.Contains(stderr, "program missing.py does not exist") {
			t.Errorf("eval --track %s: exit %d: %s", arg, code, stderr)
		}
	}
	for _, cmd := range [][]string{{"track", "check", "notatrack"}, {"eval", "--track", "notatrack", "missing.py"}} {
		if code, _, stderr := runCLI(t, append([]string{"--home", home}, cmd...)...); code != exitUsage ||
			!strings.Contains(stderr, `no track named "notatrack"`) || !strings.Contains(stderr, "the folder notatrack here is not a track folder: it has no track.yaml") {
			t.Errorf("%q: exit %d: %s", cmd, code, stderr)
		}
	}
}
