package slurm

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Result is how a spec's job ended.
type Result struct {
	// Info is the last attempt's job as Slurm reported it at its end.
	Info
	// Attempts are the jobs submitted for the spec, first to last; the
	// last is Info. There are two when the node failed the first.
	Attempts []Info
	// Cancelled says that frontier cancelled the job because its context
	// ended.
	Cancelled bool
	// MemoryExceeded says that Slurm stopped the job for using more memory
	// than it asked for: state OUT_OF_MEMORY (cgroups), or a FAILED job
	// whose output has slurmstepd's note that it passed its limit
	// (clusters that enforce memory by sampling).
	MemoryExceeded bool
	// Said is the last line of the job's output that starts with
	// "slurmstepd", which is how Slurm's step daemon writes there ("...
	// CANCELLED AT ... DUE TO TIME LIMIT"); "" when none, or when the
	// output cannot be read from here. The command writes that file too,
	// so Said and MemoryExceeded explain an end to a person; they prove
	// nothing.
	Said string
	// Message says in words how the job ended, for a person.
	Message string
}

// OK reports whether the command ran and exited 0.
func (r Result) OK() bool { return r.State == Completed && r.ExitCode == 0 && r.Signal == 0 }

// describe says how the job of r ended.
func describe(r Result) string {
	if len(r.Attempts) == 0 {
		return "not submitted"
	}
	in := r.Info
	job := "job " + in.ID
	on := ""
	if in.Node != "" {
		on = " on node " + in.Node
	}
	took := ""
	if !in.Start.IsZero() && in.End.Sub(in.Start) >= time.Second {
		took = " after " + in.End.Sub(in.Start).Round(time.Second).String()
	}
	var msg string
	switch in.State {
	case Completed:
		msg = fmt.Sprintf("%s completed%s%s", job, on, took)
	case Failed:
		switch {
		case r.MemoryExceeded:
			msg = fmt.Sprintf("%s was killed%s%s for using more memory than it asked for", job, on, took)
		case in.Reason == "JobLaunchFailure" && in.ExitCode == 0 && in.Signal == 0:
			msg = fmt.Sprintf("%s failed%s: Slurm could not launch it (see the job's output and slurmd's log)", job, on)
		default:
			msg = fmt.Sprintf("%s failed%s%s: %s", job, on, took, exitText(in))
		}
	case Timeout:
		msg = fmt.Sprintf("%s ran past its time limit (%s)%s and was stopped", job, in.TimeLimit, on)
	case OutOfMemory:
		msg = fmt.Sprintf("%s was killed%s%s for using more memory than it asked for (its cgroup's limit)", job, on, took)
	case Cancelled:
		if r.Cancelled {
			msg = fmt.Sprintf("%s was cancelled by frontier%s%s", job, on, took)
		} else {
			msg = fmt.Sprintf("%s was cancelled%s%s by scancel of a user or an administrator", job, on, took)
		}
	case NodeFail:
		msg = fmt.Sprintf("%s ended because its node%s failed or was set down", job, strings.TrimPrefix(on, " on node"))
	case Preempted:
		msg = fmt.Sprintf("%s was preempted%s%s: a job of higher priority took its resources", job, on, took)
	case BootFail:
		msg = fmt.Sprintf("%s did not start: its node%s failed to boot", job, strings.TrimPrefix(on, " on node"))
	case Deadline:
		msg = fmt.Sprintf("%s was removed: it could not start early enough to end before its deadline", job)
	case Revoked:
		msg = fmt.Sprintf("%s was revoked: a sibling of it started on another cluster of the federation", job)
	case SpecialExit:
		msg = fmt.Sprintf("%s was requeued and held by the cluster (SPECIAL_EXIT, exit code %d): release or cancel it", job, in.ExitCode)
	default:
		msg = fmt.Sprintf("%s is %s%s", job, in.State, on)
	}
	switch {
	case r.Cancelled && !in.State.Ended():
		msg = fmt.Sprintf("frontier cancelled %s; Slurm has not confirmed its end yet", job)
	case r.Cancelled && in.State != Cancelled:
		msg += "; frontier cancelled it as it ended"
	}
	msg += fmt.Sprintf(" (Slurm %s", in.State)
	if in.Reason != "" && in.Reason != "None" {
		msg += ", reason " + in.Reason
	}
	msg += ")"
	if r.Said != "" && in.State != Completed {
		msg += "; Slurm wrote: " + r.Said
	}
	if len(r.Attempts) > 1 {
		first := r.Attempts[0]
		msg += fmt.Sprintf("; it is the second attempt: job %s before it ended %s", first.ID, first.State)
		if first.Node != "" {
			msg += " on node " + first.Node
		}
	}
	return msg
}

// exitText says how the batch script ended: its exit code, or the signal
// that killed it.
func exitText(in Info) string {
	if in.Signal != 0 {
		name := unix.SignalName(syscall.Signal(in.Signal))
		if name == "" {
			name = fmt.Sprintf("signal %d", in.Signal)
		}
		return fmt.Sprintf("killed by signal %d (%s)", in.Signal, name)
	}
	return fmt.Sprintf("exit code %d", in.ExitCode)
}

// slurmSaid returns the last line slurmstepd wrote into the job's output
// file, "" when there is none or the file cannot be read here.
func slurmSaid(s Spec, in Info) string {
	path := s.Output
	if path == "" {
		path = filepath.Join(s.Dir, "slurm-%j.out")
	}
	path = strings.NewReplacer("%j", in.ID, "%x", in.Name, "%%", "%").Replace(path)
	if strings.Contains(path, "%") {
		return "" // a pattern this side cannot fill in (%N, %u, ...)
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tail))
	if err != nil {
		return ""
	}
	said := ""
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "slurmstepd") {
			said = strings.TrimSpace(line)
		}
	}
	return said
}
