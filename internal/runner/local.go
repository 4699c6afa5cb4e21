//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for the zero values of Job and Local fields.
const (
	defaultGrace        = 5 * time.Second
	defaultCapBytes     = 64 << 10
	defaultLineBytes    = 4 << 10
	maxCapBytes         = 256 << 20 // memory is reserved up front
	maxLineBytes        = 1 << 20
	defaultScanInterval = time.Second
	firstScanDelay      = 10 * time.Millisecond
	// limitInterval is how often the job's usage is checked against
	// Job.MemoryBytes and Job.MaxTasks: often enough that a runaway
	// allocation or fork loop is stopped within a fraction of a second,
	// cheap because only the job's own processes are read.
	limitInterval = 100 * time.Millisecond
	// cpuInterval is how often the CPU time of a job without a cgroup is
	// read from /proc: what a process runs after its last reading is
	// not counted, at most this much per thread.
	cpuInterval = 100 * time.Millisecond
)

// Local runs jobs as child processes of the current process, each in its
// own process group. It is safe for concurrent use; its fields must not be
// changed while jobs run.
type Local struct {
	// Log receives the runner's own events (start, kills, stragglers).
	// Nil discards them.
	Log *slog.Logger

	// ScanInterval bounds the time between two scans of /proc for the
	// job's descendants while it runs. Scans start 10ms after the start
	// and back off to this interval, so that processes created early are
	// seen quickly and a long run costs about one scan a second. Zero
	// means one second; a negative value disables the periodic scans
	// (the scans at kill time and after the exit still happen).
	ScanInterval time.Duration

	// CgroupParent, when set (Linux only), is a cgroup v2 directory in
	// which the runner creates one child cgroup per job: the job starts
	// inside it, none of its processes can leave it, and all are killed
	// through cgroup.kill when the job ends, which makes "no process
	// left" a guarantee. The directory must be writable by the runner
	// (root, or a subtree delegated to its user, as systemd does for
	// Delegate=yes units); Run fails if it cannot create the child. The
	// kernel must be 5.7 or later (clone3 into a cgroup).
	//
	// Job.MemoryBytes and Job.MaxTasks are then written to the job
	// cgroup's memory.max and pids.max (the runner enables the memory
	// and pids controllers in CgroupParent's cgroup.subtree_control when
	// it may), and the kernel enforces them exactly. A limit whose
	// controller is unavailable falls back to the runner's own
	// measurement, with a warning in the log.
	CgroupParent string
}

// NewLocal returns a Local runner that logs to log (nil discards).
func NewLocal(log *slog.Logger) *Local {
	return &Local{Log: log}
}

var _ Runner = (*Local)(nil)

// Run runs job and reports how it ended. See the package doc for the
// process lifecycle and the guarantees about leftover processes.
func (l *Local) Run(ctx context.Context, job Job) (Result, error) {
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	job, err := withDefaults(job)
	if err != nil {
		return Result{}, err
	}
	if job.MemoryBytes > 0 || job.MaxTasks > 0 {
		if err := limitsSupported(); err != nil {
			return Result{}, fmt.Errorf("run %q: %w", job.Argv[0], err)
		}
	}
	files, err := createOutputFiles(job)
	if err != nil {
		return Result{}, err
	}
	path, err := LookPath(job)
	if err != nil {
		res := Result{Status: StatusNoStart, ExitCode: -1, Message: "could not start: " + err.Error() + "."}
		files.write(res, log)
		return res, nil
	}
	if ctx.Err() != nil {
		res := Result{Status: StatusCanceled, ExitCode: -1, Message: "canceled before the process was started."}
		files.write(res, log)
		return res, nil
	}
	res, err := l.run(ctx, job, path, log.With("argv0", job.Argv[0], "dir", job.Dir))
	if err != nil {
		files.close()
		return Result{}, err
	}
	files.write(res, log)
	return res, nil
}

// withDefaults fills in zero fields and rejects jobs that cannot be run
// whatever the program does.
func withDefaults(job Job) (Job, error) {
	if len(job.Argv) == 0 || job.Argv[0] == "" {
		return job, errors.New("run job: empty command line (Job.Argv)")
	}
	if job.Dir == "" {
		return job, fmt.Errorf("run %q: no working directory (Job.Dir)", job.Argv[0])
	}
	fi, err := os.Stat(job.Dir)
	if err != nil {
		return job, fmt.Errorf("run %q: working directory: %w", job.Argv[0], err)
	}
	if !fi.IsDir() {
		return job, fmt.Errorf("run %q: working directory %s is not a directory", job.Argv[0], job.Dir)
	}
	for i, kv := range job.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return job, fmt.Errorf("run %q: Job.Env[%d] = %q: want KEY=value without NUL bytes", job.Argv[0], i, kv)
		}
	}
	if job.Timeout < 0 || job.Grace < 0 {
		return job, fmt.Errorf("run %q: negative Timeout (%v) or Grace (%v)", job.Argv[0], job.Timeout, job.Grace)
	}
	for _, x := range []struct {
		name     string
		val, max int
	}{{"HeadBytes", job.HeadBytes, maxCapBytes}, {"TailBytes", job.TailBytes, maxCapBytes}, {"LineBytes", job.LineBytes, maxLineBytes}} {
		if x.val < 0 || x.val > x.max {
			return job, fmt.Errorf("run %q: Job.%s = %d: want 0 (the default) to %d", job.Argv[0], x.name, x.val, x.max)
		}
	}
	if job.MemoryBytes < 0 || job.MaxTasks < 0 {
		return job, fmt.Errorf("run %q: negative MemoryBytes (%d) or MaxTasks (%d); 0 means no limit", job.Argv[0], job.MemoryBytes, job.MaxTasks)
	}
	if job.StdoutFile != "" && job.StdoutFile == job.StderrFile {
		return job, fmt.Errorf("run %q: StdoutFile and StderrFile are the same file %s", job.Argv[0], job.StdoutFile)
	}
	if job.Grace == 0 {
		job.Grace = defaultGrace
	}
	if job.HeadBytes == 0 {
		job.HeadBytes = defaultCapBytes
	}
	if job.TailBytes == 0 {
		job.TailBytes = defaultCapBytes
	}
	if job.LineBytes == 0 {
		job.LineBytes = defaultLineBytes
	}
	return job, nil
}

// exited is what the goroutine that started the process learned.
type exited struct {
	state *os.ProcessState
	err   error
	at    time.Time
}

// run starts the process and supervises it until it and every process of
// its group are gone and its output is drained.
func (l *Local) run(ctx context.Context, job Job, path string, log *slog.Logger) (Result, error) {
	scanMax := l.ScanInterval
	if scanMax == 0 {
		scanMax = defaultScanInterval
	}
	cg, err := newJobCgroup(l.CgroupParent)
	if err != nil {
		return Result{}, fmt.Errorf("run %q: %w", job.Argv[0], err)
	}
	defer func() {
		if err := cg.remove(); err != nil {
			log.Warn("runner: remove job cgroup", "err", err)
		}
	}()
	for _, err := range cg.setLimits(job.MemoryBytes, job.MaxTasks) {
		log.Warn("runner: cgroup limit unavailable; the runner measures the job instead", "err", err)
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("run %q: stdout pipe: %w", job.Argv[0], err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return Result{}, fmt.Errorf("run %q: stderr pipe: %w", job.Argv[0], err)
	}
	defer errR.Close()

	env := job.Env
	if env == nil {
		env = []string{} // nil would make exec inherit our environment
	}
	attr := sysProcAttr()
	cg.attach(attr)
	cmd := &exec.Cmd{
		Path:        path,
		Args:        job.Argv,
		Env:         env,
		Dir:         job.Dir,
		Stdout:      outW,
		Stderr:      errW,
		ExtraFiles:  job.ExtraFiles,
		SysProcAttr: attr,
	}

	// The process is started and waited for on one locked OS thread:
	// Pdeathsig fires when the thread that forked the child exits, not
	// when the process does (go.dev/issue/27505), so the thread must live
	// exactly as long as the child. The goroutine never unlocks, so the
	// runtime retires the thread once the child has been reaped.
	started := make(chan error, 1)
	done := make(chan exited, 1)
	begin := time.Now()
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		done <- exited{state: cmd.ProcessState, err: err, at: time.Now()}
	}()
	startErr := <-started
	cg.started()
	outW.Close()
	errW.Close()
	if startErr != nil {
		return Result{Status: StatusNoStart, ExitCode: -1, Message: startMessage(job.Argv[0], path, startErr)}, nil
	}
	pid := cmd.Process.Pid
	log = log.With("pid", pid)
	log.Debug("runner: started", "path", path, "argv", job.Argv, "timeout", job.Timeout)

	lines := newLineDispatcher(job.OnLine)
	stdout := newCapped(job.HeadBytes, job.TailBytes)
	stderr := newCapped(job.HeadBytes, job.TailBytes)
	var readers sync.WaitGroup
	readers.Go(func() { drain(outR, stdout, lines.splitter(StreamStdout, job.LineBytes)) })
	readers.Go(func() { drain(errR, stderr, lines.splitter(StreamStderr, job.LineBytes)) })

	oom := newOOMCounter(pid)
	if oom == (oomCounter{}) {
		// The child may already be gone; it started in our cgroup or,
		// with a job cgroup, below it, where v2 counts propagate.
		oom = newOOMCounter(os.Getpid())
	}
	tr := newTracker(pid, cg)
	s := supervisor{pid: pid, grace: job.Grace, log: log, tr: tr, oom: oom, lim: newLimiter(job, cg, tr), sampleCPU: cg == nil}
	job.CPU.attach(cg, pid)
	w := s.wait(ctx, job.Timeout, scanMax, done)
	job.CPU.detach()
	wall := w.at.Sub(begin)
	s.cleanUp(&readers, []*os.File{outR, errR})
	lines.close()
	if s.reason == "" {
		// A job that filled its folder and ended between two looks has
		// passed its disk limit all the same.
		if name, msg := s.lim.final(); name != "" {
			s.reason, s.limit, s.limitMsg = StatusLimit, name, msg+" when it ended"
		}
	}

	if w.state == nil {
		return Result{}, fmt.Errorf("run %q: wait for process %d: %w", job.Argv[0], pid, w.err)
	}
	res := Result{
		Wall:      wall,
		Stdout:    stdout.output(),
		Stderr:    stderr.output(),
		MaxRSSKB:  maxRSSKB(w.state),
		Leftover:  s.leftover,
		Survivors: s.survivors,
	}
	// Every process of the job is gone: its cgroup's count is final.
	// Without a cgroup, rusage counts the main process and the children
	// it waited for, and the readings of /proc count the processes it did
	// not wait for (a sandbox's init, whose wrapper exits without waiting
	// for it): the larger is the nearer.
	if d, ok := cg.cpuUsage(); ok {
		res.CPU, res.CPUSource = d, "cgroup"
	} else if d, ok := cpuTime(w.state); ok {
		res.CPU, res.CPUSource = d, "rusage"
		if procs := tr.cpuTotal(); procs > d {
			res.CPU, res.CPUSource = procs, "procs"
		}
	}
	s.classify(&res, w.state, job)
	log.Debug("runner: done", "status", res.Status, "exit_code", res.ExitCode, "signal", res.Signal, "wall", wall)
	return res, nil
}

// cpuTime is the user and system time of the process that was waited for
// and of the children it waited for.
func cpuTime(state *os.ProcessState) (time.Duration, bool) {
	if state == nil {
		return 0, false
	}
	return state.UserTime() + state.SystemTime(), true
}

// startMessage explains an exec failure; the common causes of ENOENT and
// EACCES on a file that exists deserve a hint.
func startMessage(name, path string, err error) string {
	var hint string
	switch {
	case errors.Is(err, syscall.ENOENT):
		hint = " (the file exists, so its interpreter named on the #! line is probably missing)"
	case errors.Is(err, syscall.EACCES):
		hint = " (check the file's execute permission and that its filesystem is not mounted noexec)"
	case errors.Is(err, syscall.ENOEXEC):
		hint = " (not a binary for this machine and no #! line)"
	}
	return fmt.Sprintf("could not start %q (%s): %v%s.", name, path, err, hint)
}

// drain copies a pipe into its capture until EOF, a read deadline or an
// error. It never stops early: a child blocked on a full pipe would hang.
func drain(r *os.File, c *capped, lines *lineSplitter) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.Write(buf[:n])
			if lines != nil {
				lines.Write(buf[:n])
			}
		}
		if err != nil {
			break
		}
	}
	if lines != nil {
		lines.close()
	}
}

// supervisor enforces the limits on one running process and its group.
type supervisor struct {
	pid   int // also the process group id (Setpgid)
	grace time.Duration
	log   *slog.Logger
	tr    *tracker
	oom   oomCounter
	lim   *limiter // nil when the job has no limits
	// sampleCPU says the job's CPU time is read from /proc every
	// cpuInterval (no cgroup counts it).
	sampleCPU bool

	ooms     int64 // OOM kills recorded during the run
	oomKnown bool  // whether ooms could be read

	reason    Status // StatusTimeout, StatusCanceled or StatusLimit once we decided to stop it
	cause     error  // context.Cause when canceled
	limit     string // the limit passed, with StatusLimit
	limitMsg  string // what was measured, with StatusLimit
	killed    bool   // we sent SIGKILL because the grace period ran out
	leftover  int
	survivors []int
}

// wait returns when the main process has exited, stopping it at the
// deadline or on cancellation: SIGTERM to the group, SIGKILL after grace.
func (s *supervisor) wait(ctx context.Context, timeout, scanMax time.Duration, done <-chan exited) exited {
	var timeoutC, graceC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	interval := firstScanDelay
	scanT := time.NewTimer(interval)
	defer scanT.Stop()
	scanC := scanT.C
	if scanMax < 0 {
		scanC = nil
	}
	var cpuC <-chan time.Time
	if s.sampleCPU {
		t := time.NewTicker(cpuInterval)
		defer t.Stop()
		cpuC = t.C
	}
	var limitC <-chan time.Time
	if s.lim != nil {
		t := time.NewTicker(limitInterval)
		defer t.Stop()
		limitC = t.C
	}
	ctxDone := ctx.Done()
	stop := func(reason Status) {
		s.reason = reason
		if reason == StatusCanceled {
			s.cause = context.Cause(ctx)
		}
		timeoutC, ctxDone = nil, nil
		s.log.Debug("runner: stopping", "reason", reason, "grace", s.grace)
		s.tr.scan()
		s.signal(syscall.SIGTERM)
		t := time.NewTimer(s.grace)
		graceC = t.C
	}
	for {
		select {
		case w := <-done:
			return w
		case <-timeoutC:
			if w, ok := exitedAlready(done); ok {
				return w
			}
			stop(StatusTimeout)
		case <-ctxDone:
			if w, ok := exitedAlready(done); ok {
				return w
			}
			stop(StatusCanceled)
		case <-graceC:
			graceC = nil
			s.killed = true
			s.log.Debug("runner: grace period over, sending SIGKILL")
			s.tr.scan()
			s.signal(syscall.SIGKILL)
		case <-cpuC:
			s.tr.sampleCPU()
		case <-scanC:
			s.tr.scan()
			interval = min(2*interval, scanMax)
			scanT.Reset(interval)
		case <-limitC:
			name, msg := s.lim.check()
			if name == "" {
				continue
			}
			if w, ok := exitedAlready(done); ok {
				return w
			}
			// No grace period: a process filling memory or forking
			// would use it to do more of the same.
			s.reason, s.limit, s.limitMsg = StatusLimit, name, msg
			timeoutC, ctxDone, graceC, limitC = nil, nil, nil, nil
			s.killed = true
			s.log.Info("runner: limit passed, killing the job", "limit", name, "detail", msg)
			s.tr.scan()
			s.signal(syscall.SIGKILL)
		}
	}
}

// exitedAlready gives the exit priority over a limit that fired at the
// same moment: select picks among ready cases at random.
func exitedAlready(done <-chan exited) (exited, bool) {
	select {
	case w := <-done:
		return w, true
	default:
		return exited{}, false
	}
}

// signal sends sig to the process group and to every known descendant
// that left it.
func (s *supervisor) signal(sig syscall.Signal) {
	if err := syscall.Kill(-s.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Warn("runner: signal process group", "signal", unix.SignalName(sig), "err", err)
	}
	s.tr.signal(sig)
}

// cleanUp runs after the main process has been reaped: it kills what is
// left of the job, waits for the output pipes to close and for the killed
// processes to be gone.
func (s *supervisor) cleanUp(readers *sync.WaitGroup, pipes []*os.File) {
	// Read the OOM counter before the job's cgroup, if any, goes away.
	s.readOOM()
	s.tr.scan()
	s.leftover = len(s.tr.alive())
	if s.leftover > 0 {
		s.log.Debug("runner: killing processes left behind", "count", s.leftover)
	}
	s.signal(syscall.SIGKILL)

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(200 * time.Millisecond):
		// Someone outside the group still holds a write end: a process
		// that daemonized before any scan saw it. Find it by the pipe.
		holders := s.tr.adoptPipeHolders(pipes)
		if len(holders) > 0 {
			s.log.Info("runner: killing processes holding the output pipes", "pids", holders)
			s.leftover += len(holders)
			s.tr.signal(syscall.SIGKILL)
		}
		select {
		case <-drained:
		case <-time.After(time.Second):
			s.log.Warn("runner: output pipes still open after the process exited; closing them")
			for _, p := range pipes {
				_ = p.SetReadDeadline(time.Now())
			}
			<-drained
		}
	}

	// SIGKILL is asynchronous: wait until the processes are gone (zombies
	// count as gone) so that "no process left" holds when Run returns.
	deadline := time.Now().Add(time.Second)
	for {
		alive := s.tr.alive()
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.survivors = alive
			s.log.Warn("runner: processes survived SIGKILL", "pids", alive)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readOOM records the OOM kills since the start; the main process has
// exited, so any OOM kill that ended it has been counted.
func (s *supervisor) readOOM() { s.ooms, s.oomKnown = s.oom.delta() }

// classify fills Status, ExitCode, Signal, the Python error and Message.
func (s *supervisor) classify(res *Result, state *os.ProcessState, job Job) {
	ws, _ := state.Sys().(syscall.WaitStatus)
	res.ExitCode = state.ExitCode()
	var sig syscall.Signal
	if ws.Signaled() {
		sig = ws.Signal()
		res.Signal = unix.SignalName(sig)
	}
	ooms, oomKnown := s.ooms, s.oomKnown

	var msg string
	switch {
	case s.reason == StatusLimit:
		res.Status, res.Limit = StatusLimit, s.limit
		msg = "stopped after " + fmtDuration(res.Wall) + ": " + s.limitMsg + "; all its processes were killed"
	case sig == syscall.SIGKILL && oomKnown && ooms > 0 && s.lim.kernelMemory():
		res.Status, res.Limit = StatusLimit, LimitMemory
		msg = "killed by the kernel after " + fmtDuration(res.Wall) + " at the memory limit of " + fmtBytes(s.lim.memory) + " (memory.max of the job's cgroup)"
	case s.reason != "":
		res.Status = s.reason
		what := "stopped at the wall-clock limit of " + fmtDuration(job.Timeout)
		if s.reason == StatusCanceled {
			what = "canceled after " + fmtDuration(res.Wall)
			if s.cause != nil && !errors.Is(s.cause, context.Canceled) {
				what += " (" + s.cause.Error() + ")"
			}
		}
		if s.killed {
			msg = what + ": SIGTERM to its process group, then SIGKILL after the " + fmtDuration(job.Grace) + " grace period"
		} else {
			msg = what + ": it exited within the " + fmtDuration(job.Grace) + " grace period after SIGTERM"
		}
	case ws.Exited() && res.ExitCode == 0:
		res.Status = StatusOK
		msg = "exited normally after " + fmtDuration(res.Wall)
	case ws.Exited():
		res.Status = StatusError
		msg = "exited with code " + strconv.Itoa(res.ExitCode) + " after " + fmtDuration(res.Wall)
		if c := res.ExitCode - 128; c > 0 && c < 65 {
			if name := unix.SignalName(syscall.Signal(c)); name != "" {
				msg += " (128+" + strconv.Itoa(c) + ": a process it ran was probably killed by " + name + ")"
			}
		}
	case sig == syscall.SIGKILL && oomKnown && ooms > 0:
		res.Status = StatusOOM
		msg = "killed by the kernel's out-of-memory killer after " + fmtDuration(res.Wall) + " (the memory cgroup's oom_kill count rose by " + strconv.FormatInt(ooms, 10) + ")"
	case sig == syscall.SIGKILL && oomKnown:
		res.Status = StatusSignaled
		msg = "killed by SIGKILL after " + fmtDuration(res.Wall) + ", which the runner did not send; the memory cgroup recorded no OOM kill, so another process probably sent it"
	case sig == syscall.SIGKILL:
		res.Status = StatusSignaled
		msg = "killed by SIGKILL after " + fmtDuration(res.Wall) + ", which the runner did not send: possibly out of memory (the kernel's OOM killer sends SIGKILL; no OOM counter was readable to confirm)"
	default:
		res.Status = StatusSignaled
		msg = "killed by " + res.Signal + " (" + sig.String() + ") after " + fmtDuration(res.Wall)
	}

	if res.Status != StatusOK {
		res.Traceback, res.ErrorLine = pythonError(res.Stderr)
		if res.ErrorLine != "" && res.Status != StatusTimeout && res.Status != StatusCanceled {
			msg += ": " + bound(res.ErrorLine, 200)
		}
	}
	if res.Status != StatusOOM && res.Status != StatusLimit && oomKnown && ooms > 0 {
		msg += "; the memory cgroup recorded " + plural(ooms, "OOM kill") + " during the run"
	}
	if s.leftover > 0 && s.reason != StatusLimit { // already said: all were killed
		msg += "; " + plural(int64(s.leftover), "leftover process") + " killed after it ended"
	}
	if len(s.survivors) > 0 {
		msg += "; " + plural(int64(len(s.survivors)), "process") + " could not be killed"
	}
	res.Message = msg + "."
}

// outputFiles are created before the run, so that a bad path is an error
// up front rather than a lost log afterwards, and filled after it.
type outputFiles struct{ stdout, stderr *os.File }

func createOutputFiles(job Job) (outputFiles, error) {
	var f outputFiles
	var err error
	if job.StdoutFile != "" {
		if f.stdout, err = os.Create(job.StdoutFile); err != nil {
			return f, fmt.Errorf("run %q: stdout file: %w", job.Argv[0], err)
		}
	}
	if job.StderrFile != "" {
		if f.stderr, err = os.Create(job.StderrFile); err != nil {
			f.close()
			return f, fmt.Errorf("run %q: stderr file: %w", job.Argv[0], err)
		}
	}
	return f, nil
}

// write stores the captured streams. A failure here (a full disk) loses a
// log but not the verdict, so it is logged rather than returned.
func (f outputFiles) write(res Result, log *slog.Logger) {
	for _, x := range []struct {
		f   *os.File
		out Output
	}{{f.stdout, res.Stdout}, {f.stderr, res.Stderr}} {
		if x.f == nil {
			continue
		}
		_, err := io.WriteString(x.f, x.out.String())
		if cerr := x.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			log.Warn("runner: write output file", "file", x.f.Name(), "err", err)
		}
	}
}

func (f outputFiles) close() {
	for _, x := range []*os.File{f.stdout, f.stderr} {
		if x != nil {
			x.Close()
		}
	}
}
