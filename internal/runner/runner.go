package runner

import (
	"context"
	"os"
	"strconv"
	"time"
)

// Runner runs one job to completion. Run returns an error only when the job
// could not be judged at all (for example, the folder is missing); a program
// that crashes, hangs or is killed is a Result with the matching Status.
type Runner interface {
	Run(ctx context.Context, job Job) (Result, error)
}

// Func adapts a function to the Runner interface, which makes wrappers
// short: a sandbox rewrites the job and calls the runner it wraps.
//
//	sandboxed := runner.Func(func(ctx context.Context, j runner.Job) (runner.Result, error) {
//		j.Argv = append([]string{"bwrap", "--die-with-parent", ...}, j.Argv...)
//		return inner.Run(ctx, j)
//	})
type Func func(ctx context.Context, job Job) (Result, error)

// Run calls f.
func (f Func) Run(ctx context.Context, job Job) (Result, error) { return f(ctx, job) }

// Job is one process to run.
type Job struct {
	Dir string // working directory; must exist

	// Argv is the program and its arguments. An Argv[0] without a slash
	// is looked up in the PATH of Env (in the runner's own PATH only when
	// Env has no PATH at all); one with a slash is used as is, relative
	// to Dir when relative.
	Argv []string

	// Env is the complete environment: nothing is inherited, and an empty
	// Env is an empty environment. Secrets of the runner's process (API
	// keys) therefore never reach the program unless put here.
	Env []string

	Timeout time.Duration // wall-clock limit; 0 means none
	Grace   time.Duration // SIGTERM to SIGKILL delay; 0 means 5s

	// Bytes of stdout and of stderr kept: the first HeadBytes and the last
	// TailBytes of each stream. Zero means 64 KiB each.
	HeadBytes int
	TailBytes int

	// StdoutFile and StderrFile, when set, receive the capped streams
	// (head, a marker with the dropped byte count, tail) after the run.
	StdoutFile string
	StderrFile string

	// OnLine, when set, receives each line of output as it is printed,
	// for live progress. Stream is StreamStdout or StreamStderr. Lines
	// end at '\n' or '\r' and are cut to LineBytes (zero means 4 KiB).
	// OnLine is called from a single goroutine, never after Run returns;
	// a slow OnLine never slows the program: lines it cannot keep up with
	// are skipped and a line saying how many is delivered instead.
	OnLine    func(stream, line string)
	LineBytes int

	// CPU, when set, reads the job's CPU time while it runs (see
	// CPUMeter); it stops reading when the main process has exited.
	CPU *CPUMeter

	// ExtraFiles are open files the program inherits as file descriptors
	// 3, 4, ... in this order, as with exec.Cmd.ExtraFiles (a nil entry
	// leaves its descriptor closed). They let a program read a file it
	// cannot open by path, such as one listed in Hidden. The runner does
	// not close them.
	ExtraFiles []*os.File

	// Resource limits, counted over all the processes of the job. When one
	// is passed, every process of the job is killed at once and the
	// Result has StatusLimit and names the limit. Zero means no limit.
	// The local runner enforces them through the job's cgroup when
	// Local.CgroupParent is set and the controllers are available, and
	// otherwise by measuring the job's processes every 100ms, so a fast
	// allocation can overshoot briefly; see the package doc.
	//
	// MemoryBytes bounds resident memory that the kernel cannot simply
	// drop: anonymous and shared memory (RssAnon+RssShmem), not pages of
	// mapped files such as libraries and memory-mapped data. It is not a
	// limit on virtual address space, which CUDA reserves by the
	// terabyte. MaxTasks bounds processes and threads together, as the
	// kernel's pids controller counts them; a PyTorch process has tens of
	// threads, so values in the thousands are usual.
	MemoryBytes int64
	MaxTasks    int
	// DiskBytes bounds what the job may write into Dir. A sandbox that can
	// (bubblewrap) gives the job a tmpfs of that size in place of Dir,
	// holding read-only copies of what Dir held at the start, and what
	// the job writes there is gone when it ends; the local runner
	// otherwise measures Dir and stops the job past the limit (StatusLimit,
	// LimitDisk). Zero means no limit.
	DiskBytes int64
	// DiskFull, when set, lists the paths at which the job sees file
	// systems of its own bounded to DiskBytes (a sandbox's tmpfs, which
	// the host cannot measure as a folder): the runner looks at them
	// through the mount namespace of one of the job's processes and stops
	// the job (StatusLimit, LimitDisk) once one is full, instead of
	// measuring Dir and Scratch.
	DiskFull []string

	// Scratch, when set, is a folder (it must exist, and should have a
	// short path: Unix socket addresses are at most 107 bytes) the job
	// writes temporary files to, its TMPDIR. A sandbox that can
	// (bubblewrap) gives the job a private tmpfs of DiskBytes there and
	// never touches the host folder; otherwise the job writes it, and the
	// local runner counts it against DiskBytes with Dir.
	Scratch string

	// Sandbox policy. The local runner itself confines nothing and
	// ignores these fields; a sandboxing wrapper (package sandbox)
	// enforces them, and documents how far each of its modes does.
	//
	// The program may write only in Dir and in the Writable paths; it
	// reads the rest of the file system. Hidden paths (files or
	// directories) cannot be read at all, except Dir, the Writable paths
	// and the Visible paths (read-only) inside them: hide the folder of
	// all runs, and the job still sees its own. Pass a hidden file through
	// ExtraFiles when the program's harness needs it. LoopbackTCP says the job's processes talk to each other
	// over TCP on 127.0.0.1 (a multi-process run: rendezvous, NCCL and
	// Gloo bootstrap), which sandboxes that cannot tell loopback from
	// other addresses must then allow.
	Writable    []string
	Hidden      []string
	Visible     []string
	LoopbackTCP bool

	// IsolateIPC asks that the job share no inter-process state with
	// processes that ran before it: no host memory file system (/dev/shm),
	// no System V IPC objects and no kernel keyrings. A sandbox that runs
	// each job in namespaces of its own (bubblewrap) does so always; the
	// local runner itself ignores it.
	IsolateIPC bool
}

// The streams named to Job.OnLine.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// Status classifies how a job ended.
type Status string

const (
	StatusOK       Status = "ok"        // exit code 0
	StatusError    Status = "error"     // non-zero exit code
	StatusTimeout  Status = "timeout"   // killed at the wall-clock limit
	StatusSignaled Status = "signaled"  // killed by a signal we did not send
	StatusOOM      Status = "oom"       // killed by the kernel's OOM killer (best guess)
	StatusCanceled Status = "canceled"  // the context was canceled
	StatusNoStart  Status = "not_start" // the process could not be started
	StatusLimit    Status = "limit"     // killed for passing a resource limit (Result.Limit says which)
)

// The limits named in Result.Limit.
const (
	LimitMemory = "memory" // Job.MemoryBytes
	LimitTasks  = "tasks"  // Job.MaxTasks
	LimitDisk   = "disk"   // Job.DiskBytes
)

// Output is a capped capture of one stream.
type Output struct {
	Head    string `json:"head"`
	Tail    string `json:"tail,omitempty"`
	Dropped int64  `json:"dropped"` // bytes between head and tail not kept
	Total   int64  `json:"total"`   // bytes written in all
}

// String joins head and tail with a marker naming the dropped bytes.
func (o Output) String() string {
	if o.Dropped == 0 {
		return o.Head + o.Tail
	}
	return o.Head + "\n[... " + strconv.FormatInt(o.Dropped, 10) + " bytes dropped ...]\n" + o.Tail
}

// Result is how a job ended.
type Result struct {
	Status Status `json:"status"`
	// ExitCode is the exit status, or -1 when the process did not exit
	// by itself (killed by a signal, or never started).
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the process ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	// Wall is the process lifetime measured by the runner, from just
	// before the fork to the moment its exit was collected.
	Wall   time.Duration `json:"wall_ns"`
	Stdout Output        `json:"stdout"`
	Stderr Output        `json:"stderr"`
	// Traceback is the last Python traceback found in stderr, and
	// ErrorLine its final line ("ValueError: ..."), when there is one.
	Traceback string `json:"traceback,omitempty"`
	ErrorLine string `json:"error_line,omitempty"`
	// MaxRSSKB is the peak resident set of the largest process in the
	// group that was waited for, from rusage.
	MaxRSSKB int64 `json:"max_rss_kb"`
	// CPU is the CPU time (user and system) the job took, beside Wall.
	// CPUSource says where it was read: "cgroup" is the job cgroup's
	// cpu.stat, every process of the job counted; "rusage" is the main
	// process's with the children it waited for; "procs" (larger than
	// rusage: the main process did not wait for them all, as a sandbox's
	// wrapper does not) is the sum of the job's processes' own times, read
	// from /proc every 100ms and at the end, short of at most 100ms a
	// thread; "" when unknown.
	CPU       time.Duration `json:"cpu_ns,omitempty"`
	CPUSource string        `json:"cpu_source,omitempty"`
	// Message is one sentence saying what happened, for humans.
	Message string `json:"message,omitempty"`
	// Leftover counts the job's processes that were still running after
	// the main process ended and that the runner then killed (background
	// children, workers that outlived their parent).
	Leftover int `json:"leftover,omitempty"`
	// Survivors lists processes of the job that the runner knew of and
	// sent SIGKILL but that were still alive when Run returned (stuck in
	// uninterruptible sleep, or running as another user). Processes that
	// escaped unseen cannot be listed; see the package doc for what is
	// and is not guaranteed.
	Survivors []int `json:"survivors,omitempty"`
	// Limit names the resource limit that stopped the job (LimitMemory,
	// LimitTasks) when Status is StatusLimit.
	Limit string `json:"limit,omitempty"`
	// Sandbox says how the program was confined ("bwrap", "landlock",
	// "none"), as set by a sandboxing wrapper; empty when no wrapper
	// was involved.
	Sandbox string `json:"sandbox,omitempty"`
}
