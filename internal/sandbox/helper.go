//go:build unix

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

// Helper is the body of the hidden "frontier sandbox-exec" command: args
// are what follows the command name, "--policy", a JSON policy, "--" and
// the program's absolute path and arguments. It applies the policy to
// itself and executes the program in its place, keeping the environment,
// the process (pid, process group, inherited descriptors) and the
// limits. It returns only on failure, with the exit code to use after
// printing the reason to stderr; when the policy names a status
// descriptor the reason is also written there, so that the sandbox can
// tell its own failure from the program's.
func Helper(args []string, stderr io.Writer) int {
	// Capabilities and some prctl settings are per thread, and the
	// program inherits them from the thread that calls execve.
	runtime.LockOSThread()
	p, argv, err := parseHelperArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "frontier %s: %v\n", HelperCommand, err)
		return exitSetup
	}
	// The status descriptor is written with plain system calls: an
	// *os.File would close it when collected.
	report := func(line string) error {
		_, err := syscall.Write(p.StatusFD, []byte(line+"\n"))
		return err
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "frontier %s: %v\n", HelperCommand, err)
		if p.StatusFD > 0 {
			_ = report(statusErrPrefix + oneLine(err.Error()))
		}
		return code
	}
	switch p.SIGTERM {
	case "ignore":
		// signal.Ignore sets SIG_IGN, which survives execve.
		signal.Ignore(syscall.SIGTERM)
	case "default":
		// A caught signal is reset to SIG_DFL by execve, an ignored one
		// is not: make sure it is caught.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
	case "":
	default:
		return fail(exitSetup, fmt.Errorf("unknown sigterm setting %q", p.SIGTERM))
	}
	var applied string
	if p.Landlock != nil {
		if applied, err = applyLandlock(*p.Landlock); err != nil {
			return fail(exitSetup, fmt.Errorf("landlock: %w", err))
		}
	}
	if p.StatusFD > 0 {
		if p.Landlock != nil {
			if err := report(statusOKPrefix + applied); err != nil {
				return fail(exitSetup, fmt.Errorf("write status: %w", err))
			}
		}
		if !p.PassStatusFD {
			syscall.CloseOnExec(p.StatusFD)
		}
	}
	if p.Reap {
		code, err := reap(argv, p.Files)
		if err != nil {
			return fail(code, err)
		}
		return code
	}
	err = syscall.Exec(argv[0], argv, os.Environ())
	code := exitCannotExec
	if errors.Is(err, syscall.ENOENT) {
		code = exitNotFound
	}
	return fail(code, fmt.Errorf("execute %s: %w", argv[0], err))
}

func parseHelperArgs(args []string) (policy, []string, error) {
	var p policy
	if len(args) < 4 || args[0] != "--policy" || args[2] != "--" {
		return p, nil, errors.New(`usage: sandbox-exec --policy JSON -- PROGRAM [ARGS...] (started by frontier's sandbox, not by hand)`)
	}
	dec := json.NewDecoder(strings.NewReader(args[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, nil, fmt.Errorf("policy: %w", err)
	}
	argv := args[3:]
	if !strings.HasPrefix(argv[0], "/") {
		return p, nil, fmt.Errorf("program %q: want an absolute path", argv[0])
	}
	if p.StatusFD != 0 && p.StatusFD < 3 {
		return p, nil, fmt.Errorf("status descriptor %d: want 3 or more", p.StatusFD)
	}
	return p, argv, nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
