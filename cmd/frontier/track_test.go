package main

import (
	"strings"
	"testing"
)

func TestTrackShow(t *testing.T) {
	code, out, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "tiny")
	for _, want := range []string{"target val loss  3.1", "verification     repeats 1",
		"the model that starts the clock scores at least 4.9339 (an untrained model: ln 256 = 5.5452)", "logit noise at most 0.0001"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("track show lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "track", "show", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown track: exit %d: %s", code, stderr)
	}
}
