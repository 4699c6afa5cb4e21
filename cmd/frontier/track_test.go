package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/data"
)

func TestTrackShow(t *testing.T) {
	code, out, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "tiny")
	for _, want := range []string{"target val loss  3.45", "verification     repeats 1",
		"the model that starts the clock scores at least 5.0214 (an untrained model: ln 256 = 5.5452)", "logit noise at most 0.0001"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("track show lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown track: exit %d: %s", code, stderr)
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
}
