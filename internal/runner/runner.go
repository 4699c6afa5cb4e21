// Package runner executes one training process and reports how it ended.
//
// A Runner knows nothing about tracks or verdicts: it runs argv in a folder
// with a given environment under a wall-clock limit, keeps a bounded head and
// tail of the output, and classifies the exit. The evaluator turns that into
// a verdict.
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

// Job is one process to run.
type Job struct {
	Dir     string        // working directory; must exist
	Argv    []string      // program and arguments; Argv[0] is looked up in PATH
	Env     []string      // the complete environment: nothing is inherited
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
}

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
	Status   Status        `json:"status"`
	ExitCode int           `json:"exit_code"`
	Signal   string        `json:"signal,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
	Stdout   Output        `json:"stdout"`
	Stderr   Output        `json:"stderr"`
	// Traceback is the last Python traceback found in stderr, and
	// ErrorLine its final line ("ValueError: ..."), when there is one.
	Traceback string `json:"traceback,omitempty"`
	ErrorLine string `json:"error_line,omitempty"`
	// MaxRSSKB is the peak resident set of the largest process in the
	// group that was waited for, from rusage.
	MaxRSSKB int64  `json:"max_rss_kb"`
	Message  string `json:"message,omitempty"` // why it ended, for humans
}
