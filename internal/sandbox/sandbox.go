package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
)

// Mode is how programs are confined.
type Mode string

// The modes. See the package doc for what each guarantees.
const (
	ModeAuto     Mode = "auto"     // bwrap if it works here, else landlock, else refuse
	ModeBwrap    Mode = "bwrap"    // bubblewrap namespaces
	ModeLandlock Mode = "landlock" // Landlock through a re-exec helper
	ModeNone     Mode = "none"     // no confinement; only when asked for
)

// ParseMode reads a mode as written in a config file or on a flag.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeAuto, ModeBwrap, ModeLandlock, ModeNone:
		return m, nil
	case "":
		return ModeAuto, nil
	}
	return "", fmt.Errorf("sandbox mode %q: want auto, bwrap, landlock or none", s)
}

// Options tune a sandboxing runner. The zero value is ready to use.
type Options struct {
	// Helper is the command line that runs [Helper] (the program and its
	// leading arguments; "--policy", the policy, "--" and the program
	// follow). The default is the running executable with HelperCommand,
	// which is right for the frontier binary; tests register the helper
	// in TestMain.
	Helper []string

	// Bwrap is the bubblewrap program, looked up in the runner's PATH
	// (default "bwrap").
	Bwrap string

	// Writable, Hidden and Visible are added to every job's.
	Writable []string
	Hidden   []string
	Visible  []string

	// NoSystemHidden leaves the folders where other users' and other
	// runs' files lie (/tmp, /home, ...) readable: for tests of a job's own
	// hidden paths, whose fixtures lie in /tmp. Never set it for programs.
	NoSystemHidden bool

	// Capabilities from an earlier Detect, to save a second probe; nil
	// means Wrap detects them.
	Capabilities *Capabilities

	// Log receives warnings (running unconfined, falling back to
	// landlock) and debug events. Nil discards them.
	Log *slog.Logger
}

// Runner runs jobs confined by a sandbox, through the runner it wraps. It
// is safe for concurrent use.
type Runner struct {
	inner  runner.Runner
	mode   Mode // resolved: bwrap, landlock or none
	opts   Options
	caps   Capabilities
	helper []string
	log    *slog.Logger
}

var _ runner.Runner = (*Runner)(nil)

// Wrap returns a runner that confines every job as mode says and then runs
// it with inner. ModeAuto resolves to the best mode that works here (see
// [Capabilities.Auto]) and fails when there is none; ModeNone must be
// asked for, and is logged as a warning. Wrap probes the machine once
// (Detect) unless opts.Capabilities is set.
func Wrap(ctx context.Context, inner runner.Runner, mode Mode, opts Options) (*Runner, error) {
	if inner == nil {
		return nil, errors.New("sandbox: no runner to wrap")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{inner: inner, opts: opts, log: log}
	if mode == ModeNone {
		log.Warn("sandbox: none: candidate programs run unconfined, with this user's access to files, network and processes; every result is marked sandbox=none")
		r.mode = ModeNone
		// Unconfined, the program still runs under the helper, which reaps
		// what it leaves behind; without a helper, the runner's scan alone.
		if h, err := helperCommand(opts); err == nil {
			r.helper = h
		} else {
			log.Warn("sandbox: none: no helper to reap leftover processes", "err", err)
		}
		return r, nil
	}
	if opts.Capabilities != nil {
		r.caps = *opts.Capabilities
	} else {
		bwrap := opts.Bwrap
		if bwrap == "" {
			bwrap = "bwrap"
		}
		r.caps = detect(ctx, bwrap)
	}
	switch mode {
	case ModeAuto:
		r.mode = r.caps.Auto()
		switch r.mode {
		case "":
			return nil, fmt.Errorf("sandbox: no way to confine programs here: bwrap: %s; landlock: %v. Install bubblewrap and allow user namespaces (docs/sandbox.md), or set sandbox: none to run programs unconfined", bwrapProblem(r.caps), r.caps.LandlockErr)
		case ModeLandlock:
			log.Warn("sandbox: bubblewrap is unavailable, using landlock, which confines less (docs/sandbox.md)", "bwrap", bwrapProblem(r.caps))
		}
	case ModeBwrap:
		if !r.caps.BwrapWorks() {
			return nil, fmt.Errorf("sandbox: bwrap: %s", bwrapProblem(r.caps))
		}
		r.mode = ModeBwrap
	case ModeLandlock:
		if r.caps.LandlockABI == 0 {
			return nil, fmt.Errorf("sandbox: landlock: %v", r.caps.LandlockErr)
		}
		r.mode = ModeLandlock
	default:
		return nil, fmt.Errorf("sandbox mode %q: want auto, bwrap, landlock or none", mode)
	}
	h, err := helperCommand(opts)
	if err != nil {
		return nil, err
	}
	r.helper = h
	log.Debug("sandbox: ready", "mode", r.mode, "helper", r.helper[0])
	return r, nil
}

// helperCommand is the command line that runs [Helper]: opts.Helper, or
// this executable with HelperCommand.
func helperCommand(opts Options) ([]string, error) {
	h := opts.Helper
	if len(h) == 0 {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: find this program to re-execute as the helper: %w", err)
		}
		h = []string{exe, HelperCommand}
	}
	if !filepath.IsAbs(h[0]) {
		return nil, fmt.Errorf("sandbox: helper %q: want an absolute path", h[0])
	}
	return h, nil
}

func bwrapProblem(c Capabilities) string {
	switch {
	case c.Bwrap == "":
		return "not installed (" + installHint + ")"
	case c.BwrapErr != nil:
		return c.BwrapErr.Error()
	}
	return "works"
}

// Mode returns the mode jobs run in: bwrap, landlock or none.
func (r *Runner) Mode() Mode { return r.mode }

// Capabilities returns what Wrap found on this machine (zero in mode none).
func (r *Runner) Capabilities() Capabilities { return r.caps }

// Run confines job and runs it with the wrapped runner. The Result is the
// program's, with Sandbox set to the mode. A sandbox that cannot be set up
// is an error, not a Result: the program never ran.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	// Resolve the program first, so that a missing interpreter is the
	// program's failure to start rather than the sandbox's.
	path, err := runner.LookPath(job)
	if err != nil {
		return runner.Result{Status: runner.StatusNoStart, ExitCode: -1, Message: "could not start: " + err.Error() + ".", Sandbox: string(r.mode)}, nil
	}
	if r.mode == ModeNone {
		if len(r.helper) > 0 {
			abs, err := filepath.Abs(path)
			if err != nil {
				return runner.Result{}, fmt.Errorf("sandbox: %w", err)
			}
			if job.Argv, err = helperArgs(r.helper, policy{Reap: true, Files: len(job.ExtraFiles)}, append([]string{abs}, job.Argv[1:]...)); err != nil {
				return runner.Result{}, err
			}
		}
		res, err := r.inner.Run(ctx, job)
		res.Sandbox = string(ModeNone)
		return res, err
	}
	if path, err = filepath.Abs(path); err != nil {
		return runner.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	pol, err := resolvePolicy(job, r.opts, r.mode)
	if err != nil {
		return runner.Result{}, err
	}
	argv := append([]string{path}, job.Argv[1:]...)

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return runner.Result{}, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	defer statusR.Close()
	statusFD := 3 + len(job.ExtraFiles)
	wrapped := job
	var diskR *os.File // the helper's report of a full tmpfs, under bwrap
	if pol.disk > 0 {
		// The tmpfs bounds what the job writes; the runner looks inside to
		// stop the job once it is full, as it does under the other modes.
		wrapped.DiskFull = []string{pol.dir}
		if pol.scratch != "" {
			wrapped.DiskFull = append(wrapped.DiskFull, pol.scratch)
		}
	}
	wrapped.ExtraFiles = append(slices.Clone(job.ExtraFiles), statusW)
	switch r.mode {
	case ModeBwrap:
		inside, err := r.withSIGTERM("default", argv, 0)
		if pol.disk > 0 && err == nil {
			// A shell runs the program and, once it ended, says on a pipe
			// of its own whether its tmpfs was full: the tmpfs goes with
			// the sandbox. (bwrap keeps its status descriptor from what it
			// runs.)
			var diskW *os.File
			if diskR, diskW, err = os.Pipe(); err != nil {
				statusW.Close()
				return runner.Result{}, fmt.Errorf("sandbox: disk pipe: %w", err)
			}
			defer diskR.Close()
			defer diskW.Close()
			wrapped.ExtraFiles = append(wrapped.ExtraFiles, diskW)
			inside = diskReport(statusFD+1, wrapped.DiskFull, inside)
		}
		if err != nil {
			statusW.Close()
			return runner.Result{}, err
		}
		helperInside := ""
		if inside[0] == r.helper[0] {
			helperInside = r.helper[0]
		}
		args := append(bwrapArgs(r.caps.Bwrap, pol, r.caps.Devices, job.MemoryBytes, statusFD, helperInside), inside...)
		if wrapped.Argv, err = r.withSIGTERM("ignore", args, statusFD); err != nil {
			statusW.Close()
			return runner.Result{}, err
		}
	case ModeLandlock:
		write := append([]string{pol.dir}, pol.writable...)
		if pol.scratch != "" {
			write = append(write, pol.scratch)
		}
		lp := &landlockPolicy{Write: write, Hide: pol.hidden, Read: pol.visible, Devices: r.caps.Devices, DenyTCP: !job.LoopbackTCP,
			NoShm: job.IsolateIPC}
		wrapped.Argv, err = helperArgs(r.helper, policy{StatusFD: statusFD, Landlock: lp, Reap: true, Files: len(job.ExtraFiles)}, argv)
		if err != nil {
			statusW.Close()
			return runner.Result{}, err
		}
	}

	res, err := r.inner.Run(ctx, wrapped)
	statusW.Close()
	status := readStatus(statusR)
	if diskR != nil {
		for _, f := range wrapped.ExtraFiles[len(job.ExtraFiles)+1:] {
			f.Close()
		}
		status += readStatus(diskR)
	}
	if err != nil {
		return res, err
	}
	if err := setupError(r.mode, status, res); err != nil {
		return runner.Result{}, err
	}
	if line, ok := findLine(status, statusDiskPrefix); ok && res.Status != runner.StatusLimit && res.Status != runner.StatusTimeout &&
		res.Status != runner.StatusCanceled {
		// Full when the program ended: the limit was reached, as the
		// runner says of a folder it measures itself.
		res.Status, res.Limit = runner.StatusLimit, runner.LimitDisk
		res.Message = fmt.Sprintf("%s, a file system of %d MiB of its own, was full when the program ended: it reached its disk limit",
			strings.TrimSpace(line), job.DiskBytes>>20)
	}
	if line, ok := findLine(status, statusOKPrefix); ok {
		r.log.Debug("sandbox: applied", "mode", r.mode, "what", line)
	}
	res.Sandbox = string(r.mode)
	return res, nil
}

// diskScript runs the program ("$@" after the descriptor, the folders and
// "--"), then writes "disk full: DIR" on the descriptor for each folder
// whose file system has less than 1% of its blocks free, and exits as the
// program did.
const diskScript = `fd=$1; shift; dirs=""
while [ "$1" != "--" ]; do dirs="$dirs $1"; shift; done; shift
"$@"; rc=$?
for d in $dirs; do
	set -- $(stat -f -c '%a %b' "$d" 2>/dev/null)
	if [ -n "$2" ] && [ "$1" -lt $(($2 / 100 + 1)) ]; then echo "` + statusDiskPrefix + `$d" >/proc/self/fd/$fd; fi
done
exit $rc`

// diskReport wraps argv in a shell that reports, on descriptor fd, which
// of dirs (the job's tmpfs folders) were full when the program ended.
func diskReport(fd int, dirs, argv []string) []string {
	out := []string{"/bin/sh", "-c", diskScript, "sh", strconv.Itoa(fd)}
	out = append(out, dirs...)
	out = append(out, "--")
	return append(out, argv...)
}

// withSIGTERM prefixes argv with a command that sets SIGTERM to "ignore"
// or "default" and executes it: coreutils env when it can (it starts in a
// fraction of the helper's time), else the helper, which then also reports
// its own failures on statusFD and leaves that descriptor open for bwrap.
func (r *Runner) withSIGTERM(setting string, argv []string, statusFD int) ([]string, error) {
	if r.caps.Env != "" && !strings.Contains(argv[0], "=") { // env would take NAME=VALUE for a variable
		return append([]string{r.caps.Env, "--" + setting + "-signal=TERM"}, argv...), nil
	}
	p := policy{SIGTERM: setting}
	if statusFD > 0 {
		p.StatusFD, p.PassStatusFD = statusFD, true
	}
	return helperArgs(r.helper, p, argv)
}

// readStatus reads what the helper and bubblewrap reported. Every writer
// is gone once the job has ended, short of a process the runner could not
// kill, so the read is bounded in time rather than waiting for EOF.
func readStatus(r *os.File) string {
	_ = r.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	return string(b)
}

// setupError tells a sandbox that could not be set up (the program never
// ran) from a program that failed.
func setupError(mode Mode, status string, res runner.Result) error {
	if msg, ok := findLine(status, statusErrPrefix); ok {
		return fmt.Errorf("sandbox (%s) could not be set up: %s", mode, msg)
	}
	if res.Status == runner.StatusNoStart {
		return fmt.Errorf("sandbox (%s): the helper %s", mode, strings.TrimPrefix(res.Message, "could not start: "))
	}
	if res.Status != runner.StatusError {
		return nil // ran, or stopped by a limit before it reported
	}
	switch mode {
	case ModeBwrap:
		if !strings.Contains(status, `"child-pid"`) {
			return fmt.Errorf("sandbox (bwrap) could not be set up: %s", complaint(res.Stderr.String(), "bwrap: "))
		}
	case ModeLandlock:
		if _, ok := findLine(status, statusOKPrefix); !ok {
			return fmt.Errorf("sandbox (landlock): the helper ended before it applied the policy: %s", complaint(res.Stderr.String(), ""))
		}
	}
	return nil
}

// findLine returns the rest of the first line of s that starts with prefix.
func findLine(s, prefix string) (string, bool) {
	for line := range strings.Lines(s) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// complaint picks the last line of stderr that starts with prefix, or the
// last non-empty line.
func complaint(stderr, prefix string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0 && prefix != ""; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	if s := strings.TrimSpace(lines[len(lines)-1]); s != "" {
		return s
	}
	return "(no message)"
}

// jobPolicy is a job's policy with every path absolute and resolved.
type jobPolicy struct {
	dir      string
	writable []string
	hidden   []string // those that exist
	visible  []string // those that exist and lie inside a hidden path
	// disk, when set, is the size of a tmpfs that bwrap mounts in place
	// of dir; entries are what dir held at the start, bound read-only
	// into it (their names, "tmp" and the other folders empty instead).
	disk    int64
	entries []os.DirEntry
	scratch string // the job's temporary folder (a private tmpfs under bwrap)
}

// systemHidden are folders where other users' and other runs' files lie
// (copies of data included): no job reads them. What a job needs inside
// them (its folder, its scratch, the interpreter) is bound back.
var systemHidden = []string{"/tmp", "/var/tmp", "/home", "/root", "/mnt", "/media", "/srv"}

// resolvePolicy checks and resolves the paths of a job's policy. Paths are
// resolved through symbolic links because mounts and Landlock rules apply
// to what a path points to.
func resolvePolicy(job runner.Job, opts Options, mode Mode) (jobPolicy, error) {
	var p jobPolicy
	dir, err := filepath.Abs(job.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return p, fmt.Errorf("sandbox: run folder: %w", err)
	}
	p.dir = dir
	for _, w := range slices.Concat(job.Writable, opts.Writable) {
		if !filepath.IsAbs(w) {
			return p, fmt.Errorf("sandbox: writable path %q: want an absolute path", w)
		}
		r, err := filepath.EvalSymlinks(w)
		if err != nil {
			return p, fmt.Errorf("sandbox: writable path %q must exist before the run: %w", w, err)
		}
		if r != p.dir && !slices.Contains(p.writable, r) {
			p.writable = append(p.writable, r)
		}
	}
	if job.Scratch != "" {
		r, err := filepath.EvalSymlinks(job.Scratch)
		if err != nil || !filepath.IsAbs(r) {
			return p, fmt.Errorf("sandbox: scratch folder %q must exist and be absolute: %v", job.Scratch, err)
		}
		p.scratch = r
	}
	sys := systemHidden
	if opts.NoSystemHidden {
		sys = nil
	}
	for _, h := range slices.Concat(job.Hidden, opts.Hidden, sys) {
		if !filepath.IsAbs(h) {
			return p, fmt.Errorf("sandbox: hidden path %q: want an absolute path", h)
		}
		r, err := filepath.EvalSymlinks(h)
		if errors.Is(err, os.ErrNotExist) {
			continue // nothing to hide
		}
		if err != nil {
			return p, fmt.Errorf("sandbox: hidden path %q: %w", h, err)
		}
		fi, err := os.Stat(r)
		if err != nil {
			return p, fmt.Errorf("sandbox: hidden path %q: %w", h, err)
		}
		if n := hardLinks(fi); !fi.IsDir() && n > 1 {
			return p, fmt.Errorf("sandbox: hidden file %s has %d hard links, and the other names would stay readable; give it a single link (copy it)", h, n)
		}
		for _, w := range append([]string{p.dir}, p.writable...) {
			if r == w {
				return p, fmt.Errorf("sandbox: hidden path %s is the writable path %s", h, w)
			}
			if mode == ModeLandlock && within(r, w) {
				return p, fmt.Errorf("sandbox: hidden path %s is inside the writable path %s, which landlock cannot hide (move it out, or use bwrap)", h, w)
			}
		}
		if !slices.Contains(p.hidden, r) {
			p.hidden = append(p.hidden, r)
		}
	}
	// A hidden path inside another adds nothing, and under bwrap the outer
	// tmpfs would cover the inner one's mount.
	p.hidden = slices.DeleteFunc(p.hidden, func(h string) bool {
		return slices.ContainsFunc(p.hidden, func(o string) bool { return within(h, o) })
	})
	// Paths the job must still read (the Python installation) inside a
	// hidden one are bound back read-only (bwrap) or granted (landlock).
	for _, v := range slices.Concat(job.Visible, opts.Visible) {
		r, err := filepath.EvalSymlinks(v)
		if err != nil || !filepath.IsAbs(r) || slices.Contains(p.visible, r) {
			continue
		}
		if slices.ContainsFunc(p.hidden, func(h string) bool { return within(r, h) }) {
			p.visible = append(p.visible, r)
		}
	}
	if job.DiskBytes > 0 && mode == ModeBwrap {
		entries, err := os.ReadDir(p.dir)
		if err != nil {
			return p, fmt.Errorf("sandbox: run folder: %w", err)
		}
		p.disk, p.entries = job.DiskBytes, entries
	}
	return p, nil
}

// within reports whether path is strictly below dir.
func within(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
