package tracks_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// tiny-1cpu is tiny on one thread and nothing else: the same reference
// (but for its first line), corpus, target and evaluation. A change to one
// that misses the other fails here.
func TestTiny1CPUIsTiny(t *testing.T) {
	reg := track.NewRegistry(tracks.FS)
	tiny, err := reg.Get("tiny")
	if err != nil {
		t.Fatal(err)
	}
	one, err := reg.Get("tiny-1cpu")
	if err != nil {
		t.Fatal(err)
	}
	a, err := tiny.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	b, err := one.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	rest := func(src []byte) []byte { _, after, _ := bytes.Cut(src, []byte("\n")); return after }
	if !bytes.Equal(rest(a), rest(b)) {
		t.Error("tiny-1cpu's reference differs from tiny's below its first line")
	}
	if one.Hardware.Threads != 1 || one.Data.Dir != "tiny" {
		t.Errorf("tiny-1cpu: %d threads, data in %q", one.Hardware.Threads, one.Data.Dir)
	}
	// Everything else as tiny's.
	x := *one
	x.Hardware.Threads, x.Hardware.ReferenceStepMs, x.Data.Dir = tiny.Hardware.Threads, tiny.Hardware.ReferenceStepMs, tiny.Data.Dir
	for _, part := range []struct {
		name string
		a, b any
	}{
		{"data", x.Data, tiny.Data}, {"limits", x.Limits, tiny.Limits}, {"telemetry", x.Telemetry, tiny.Telemetry},
		{"hardware", x.Hardware, tiny.Hardware}, {"verification", x.Verification, tiny.Verification},
		{"target", x.TargetValLoss, tiny.TargetValLoss}, {"contract", x.Contract, tiny.Contract},
		{"launcher", x.Launcher, tiny.Launcher}, {"reference", x.Reference, tiny.Reference},
	} {
		if !reflect.DeepEqual(part.a, part.b) {
			t.Errorf("tiny-1cpu's %s differs from tiny's:\n%+v\n%+v", part.name, part.a, part.b)
		}
	}
}
