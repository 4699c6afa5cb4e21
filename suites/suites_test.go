package suites

import (
	"bytes"
	"os"
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
