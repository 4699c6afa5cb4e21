package testdeps

import (
	"os"
	"path/filepath"
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

func TestSlurm(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, env, conf string
		write, ok       bool
	}{
		{"unset", "", "", false, false},
		{"another cluster's config", dir, "/etc/slurm/slurm.conf", true, false},
		{"gone", dir, filepath.Join(dir, "slurm.conf"), false, false},
		{"started", dir, filepath.Join(dir, "slurm.conf"), true, true},
	}
	t.Setenv(RequireEnv, "")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(SlurmEnv, c.env)
			t.Setenv("SLURM_CONF", c.conf)
			os.Remove(filepath.Join(dir, "slurm.conf"))
			if c.write {
				if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := &fakeT{}
			got := Slurm(f)
			if c.ok != (got == dir && !f.skipped) || c.ok == f.skipped {
				t.Errorf("Slurm: %q, skipped %v; want ok %v", got, f.skipped, c.ok)
			}
		})
	}
}
