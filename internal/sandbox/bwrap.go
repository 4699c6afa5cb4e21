package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// harnessDir is the one folder of a run folder that is bound read-only
// into the job's tmpfs (the harness's files); the others start empty.
const harnessDir = "_frontier"

// bwrapArgs is the bubblewrap command line for a job, up to and including
// the "--" before the command. The order matters: later mounts cover
// earlier ones, so the hidden paths are covered after the read-only root,
// and what the job may see inside them (its folder, the visible paths) is
// bound after that. helper is the helper program to keep
// visible when one runs inside the sandbox, or "".
func bwrapArgs(bwrap string, p jobPolicy, devices []string, memory int64, statusFD int, helper string) []string {
	a := []string{bwrap,
		// New user, mount, pid, network, IPC, UTS and cgroup namespaces;
		// the network namespace has only lo, which bwrap brings up.
		"--unshare-all",
		// The sandbox dies with bwrap, which dies with the runner's
		// SIGKILL to the group; no --new-session, which would leave the
		// runner's process group.
		"--die-with-parent",
		// Root running bwrap would otherwise keep its capabilities in
		// the sandbox and could remount the root writable.
		"--cap-drop", "ALL",
		"--json-status-fd", strconv.Itoa(statusFD),
		"--ro-bind", "/", "/",
		"--dev", "/dev",
	}
	for _, d := range devices {
		a = append(a, "--dev-bind-try", d, d)
	}
	a = append(a, "--proc", "/proc")
	// /dev/shm is private (it holds no other job's segments) and, since
	// a file in a tmpfs is memory no process owns, as large as the
	// memory limit at most.
	if memory > 0 {
		a = append(a, "--size", strconv.FormatInt(memory, 10))
	}
	a = append(a, "--tmpfs", "/dev/shm")
	// Sockets of system services (container engines, D-Bus, the DNS
	// resolver) live under /run; a read-only mount does not stop
	// connect(2) on them.
	// They are made read-only at the end, once the binds below have
	// created their mount points.
	var readOnly []string
	for _, d := range []string{"/run", "/var/run"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", d)
			readOnly = append(readOnly, d)
		}
	}
	// Hidden paths: a folder becomes an empty tmpfs, a file an empty one.
	// Those that hold the job's folder (the folder of all runs) go first,
	// and what the job needs inside them is bound back below; those inside
	// the job's writable paths go last, over the binds.
	var inner []string
	hide := func(h string) {
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", h)
			readOnly = append(readOnly, h)
		} else {
			a = append(a, "--ro-bind", os.DevNull, h)
		}
	}
	for _, h := range p.hidden {
		if h == p.dir || within(h, p.dir) || slices.ContainsFunc(p.writable, func(w string) bool { return h == w || within(h, w) }) {
			inner = append(inner, h)
			continue
		}
		hide(h)
	}
	for _, v := range p.visible {
		a = append(a, "--ro-bind", v, v)
	}
	// The helper, when one runs inside, must stay visible wherever it is.
	if helper != "" {
		a = append(a, "--ro-bind", helper, helper)
	}
	if p.scratch != "" {
		// The job's temporary files: a private tmpfs, bounded like its
		// folder; the host folder is never written.
		if p.disk > 0 {
			a = append(a, "--size", strconv.FormatInt(p.disk, 10))
		}
		a = append(a, "--tmpfs", p.scratch)
	}
	if p.disk > 0 {
		// The run folder is a tmpfs of the job's disk quota: what the
		// program writes cannot fill the disk, and is gone when it ends.
		// What the evaluator wrote there is bound into it read-only; its
		// folders ("tmp") start empty and writable.
		a = append(a, "--size", strconv.FormatInt(p.disk, 10), "--tmpfs", p.dir)
		for _, e := range p.entries {
			src := filepath.Join(p.dir, e.Name())
			if slices.Contains(inner, src) {
				continue
			}
			if e.IsDir() && e.Name() != harnessDir {
				a = append(a, "--dir", src)
				continue
			}
			a = append(a, "--ro-bind", src, src)
		}
	} else {
		a = append(a, "--bind", p.dir, p.dir)
	}
	for _, w := range p.writable {
		a = append(a, "--bind", w, w)
	}
	for _, h := range inner {
		hide(h)
	}
	for _, d := range readOnly {
		a = append(a, "--remount-ro", d)
	}
	return append(a, "--chdir", p.dir, "--")
}
