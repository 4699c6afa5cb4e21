package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// reap runs argv as a child of this process, which is a child subreaper:
// a process the program leaves behind is re-parented here when its parent
// exits, however it left (double fork, setsid), and is killed once the
// program has exited. It returns the exit code to use, or, for a program
// killed by a signal, kills this process with the same signal so that the
// runner sees what the program did.
func reap(argv []string, files int) (int, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return exitSetup, fmt.Errorf("become a child subreaper: %w", err)
	}
	// SIGTERM from the runner reaches the program's process group, which
	// this process shares; it outlives the program to reap what is left.
	// Caught (not ignored), so that the program gets the default action.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for fd := 3; fd < 3+files; fd++ {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), "inherited-"+strconv.Itoa(fd)))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		code := exitCannotExec
		if errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		return code, fmt.Errorf("execute %s: %w", argv[0], err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	err := cmd.Wait()
	killOrphans()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal.Reset(ws.Signal())
			_ = syscall.Kill(os.Getpid(), ws.Signal())
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return exitSetup, fmt.Errorf("wait for %s: %w", argv[0], err)
}

// killOrphans kills and collects this process's children until none is
// left: what the program left behind, re-parented here. Killing a process
// re-parents its own children here too, so it repeats.
func killOrphans() {
	for range 1000 {
		kids := children()
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, 0, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// children lists this process's children from /proc/self/task/*/children
// (a child belongs to the thread that forked it, or to the main thread
// once re-parented).
func children() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
