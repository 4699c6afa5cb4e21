package runner

import (
	"context"
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
}
