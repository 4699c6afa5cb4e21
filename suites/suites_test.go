package suites

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The ladder's first record is the tiny track's reference: a change to the
// reference must be measured into the ladder, not drift apart from it.
func TestTinyLadderStartsAtTheReference(t *testing.T) {
	ref, err := os.ReadFile("../tracks/tiny/train.py")
	if err != nil {
		t.Fatal(err)
	}
	r0, err := FS.ReadFile("tiny-ladder/records/r0.py")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ref, r0) {
		t.Error("suites/tiny-ladder/records/r0.py differs from tracks/tiny/train.py: copy the reference and measure the ladder again (suites/tiny-ladder/measure.sh)")
	}
}

// Each task's ground-truth diff must be the diff of its two programs: every
// line it removes is in the start record, every line it adds is in the goal
// and its context is in both, so that an edit to a record's changed lines
// without a new diff fails here.
func TestTinyLadderDiffsMatchTheRecords(t *testing.T) {
	for i := 1; i <= 6; i++ {
		start := fmt.Sprintf("r%d", i-1)
		goal := fmt.Sprintf("r%d", i)
		diff := readLines(t, "tiny-ladder/hints/"+goal+"/level_0_diff.txt")
		old := set(readLines(t, "tiny-ladder/records/"+start+".py"))
		nw := set(readLines(t, "tiny-ladder/records/"+goal+".py"))
		if len(diff) < 3 || diff[0] != "--- records/"+start+".py" || diff[1] != "+++ records/"+goal+".py" {
			t.Errorf("%s: the diff does not start with the two records' headers", goal)
			continue
		}
		changed := 0
		for n, line := range diff[2:] {
			switch {
			case strings.HasPrefix(line, "@@"), line == "":
			case strings.HasPrefix(line, "-"):
				changed++
				if !old[line[1:]] {
					t.Errorf("%s diff line %d removes a line that is not in %s.py: %q", goal, n+3, start, line)
				}
			case strings.HasPrefix(line, "+"):
				changed++
				if !nw[line[1:]] {
					t.Errorf("%s diff line %d adds a line that is not in %s.py: %q", goal, n+3, goal, line)
				}
			case strings.HasPrefix(line, " "):
				if !old[line[1:]] || !nw[line[1:]] {
					t.Errorf("%s diff line %d: context not in both records: %q", goal, n+3, line)
				}
			default:
				t.Errorf("%s diff line %d is not a unified diff line: %q", goal, n+3, line)
			}
		}
		if changed == 0 {
			t.Errorf("%s: the diff changes nothing", goal)
		}
	}
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func set(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[l] = true
	}
	return m
}
