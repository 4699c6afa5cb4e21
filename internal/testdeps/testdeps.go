// Package testdeps decides what a test does when something it needs from
// the machine is missing (PyTorch, bubblewrap, Chromium, a Python
// interpreter, a Slurm cluster, a PostgreSQL server): on a developer's
// machine it skips, saying what is missing; where FRONTIER_REQUIRE_DEPS=1
// (CI sets it, after installing everything with scripts/install-deps.sh and
// starting Slurm and PostgreSQL with scripts/slurm.sh and
// scripts/postgres.sh) it fails, because a skip there would hide a broken
// install behind a green run.
package testdeps

import (
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv is the environment variable that turns a missing dependency
// into a test failure.
const RequireEnv = "FRONTIER_REQUIRE_DEPS"

// Required reports whether missing dependencies fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing ends the test because dep (a short name: "torch", "bwrap",
// "chromium", "python3", "slurm", "postgres") is not usable here: it skips,
// or fails when Required. The message says why, as t.Skipf would.
func Missing(t testing.TB, dep, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("missing dependency %s ("+RequireEnv+"=1): "+format, append([]any{dep}, args...)...)
	}
	t.Skipf("missing dependency %s: "+format, append([]any{dep}, args...)...)
}

// SlurmEnv names the state folder of the test cluster that
// scripts/slurm.sh starts; `scripts/slurm.sh env` prints it, with the
// SLURM_CONF that points the Slurm commands at that cluster.
const SlurmEnv = "FRONTIER_TEST_SLURM"

// Slurm returns the state folder of the test cluster, or ends the test
// when there is none. Tests may do to that cluster what they would never
// do to a real one (set its node down), so they run only where this
// variable names it, never on whatever cluster SLURM_CONF alone names.
func Slurm(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(SlurmEnv)
	if dir == "" {
		Missing(t, "slurm", "no test cluster: start one with sudo scripts/slurm.sh start, then eval \"$(scripts/slurm.sh env)\" (%s is not set)", SlurmEnv)
		return ""
	}
	conf := os.Getenv("SLURM_CONF")
	if conf != filepath.Join(dir, "slurm.conf") {
		Missing(t, "slurm", "SLURM_CONF is %q, not the test cluster's %s: eval \"$(scripts/slurm.sh env)\"", conf, filepath.Join(dir, "slurm.conf"))
		return ""
	}
	if _, err := os.Stat(conf); err != nil {
		Missing(t, "slurm", "the test cluster of %s=%s is gone (%v): start it with sudo scripts/slurm.sh start", SlurmEnv, dir, err)
		return ""
	}
	return dir
}
