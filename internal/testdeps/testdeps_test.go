package testdeps

import (
	"testing"
)

// fakeT records how a test ended.
type fakeT struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Skipf(format string, args ...any) {
	f.skipped = true
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
}

func TestMissing(t *testing.T) {
	t.Setenv(RequireEnv, "")
	f := &fakeT{}
	Missing(f, "torch", "no Python with PyTorch: %v", "x")
	if !f.skipped || f.failed {
		t.Errorf("without %s: skipped %v, failed %v; want a skip", RequireEnv, f.skipped, f.failed)
	}
	t.Setenv(RequireEnv, "1")
	f = &fakeT{}
	Missing(f, "torch", "no Python with PyTorch: %v", "x")
	if !f.failed {
		t.Errorf("with %s=1: the test did not fail", RequireEnv)
	}
}
