package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSandboxCmdFailures: the helper command refuses a bad command line and
// a missing program with the shell's exit codes and a reason. (Its success
// replaces the process, which internal/sandbox tests through its own test
// binary.)
func TestSandboxCmdFailures(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 125, "usage: sandbox-exec"},
		{[]string{"--policy", "{", "--", "/bin/true"}, 125, "policy"},
		{[]string{"--policy", "{}", "--", "/no/such/program"}, 127, "/no/such/program"},
	} {
		var stderr bytes.Buffer
		g := &globals{stdout: &bytes.Buffer{}, stderr: &stderr}
		cmd := newSandboxCmd(g)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if exitCode(err) != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("args %q: %v, stderr %q; want exit %d and %q", c.args, err, stderr.String(), c.code, c.want)
		}
	}
}
