// Package testdeps decides what a test does when something it needs from
// the machine is missing (PyTorch, bubblewrap, Chromium, a Python
// interpreter, a PostgreSQL server): on a developer's machine it skips,
// saying what is missing; where FRONTIER_REQUIRE_DEPS=1 (CI sets it, after
// installing everything with scripts/install-deps.sh and starting
// PostgreSQL with scripts/postgres.sh) it fails, because a skip there would
// hide a broken install behind a green run.
package testdeps

import (
	"os"
	"testing"
)

// RequireEnv is the environment variable that turns a missing dependency
// into a test failure.
const RequireEnv = "FRONTIER_REQUIRE_DEPS"

// Required reports whether missing dependencies fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing ends the test because dep (a short name: "torch", "bwrap",
// "chromium", "python3", "postgres") is not usable here: it skips, or fails when
// Required. The message says why, as t.Skipf would.
func Missing(t testing.TB, dep, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("missing dependency %s ("+RequireEnv+"=1): "+format, append([]any{dep}, args...)...)
	}
	t.Skipf("missing dependency %s: "+format, append([]any{dep}, args...)...)
}
