package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Client runs the Slurm commands of one user. The zero value works with
// the commands on PATH and the cluster that SLURM_CONF (or the commands'
// default configuration) names.
type Client struct {
	// Bin is the folder of the Slurm commands; empty means PATH.
	Bin string
	// Env is the whole environment of the Slurm commands, and so of the
	// jobs they submit (see the package doc); nil means PATH, HOME, USER,
	// LOGNAME, LANG, TZ and SLURM_CONF of this process.
	Env []string
	// Poll is the longest wait between two looks at a job; the first look
	// comes a quarter of a second after the submission, and the wait grows
	// while nothing changes. Zero means 30 s.
	Poll time.Duration
	// Outage is how long slurmctld may leave the commands unanswered
	// before following a job gives up with an error; the job itself runs
	// on. Zero means 10 minutes.
	Outage time.Duration
	// CommandTimeout bounds one command (a Slurm command retries on its
	// own when slurmctld does not answer, for up to a minute); zero means
	// 2 minutes.
	CommandTimeout time.Duration
	// Log receives what Run does (submissions, resubmissions, cancels);
	// nil discards it.
	Log *slog.Logger
}

// Commands are the Slurm commands the package uses, as doctor lists them.
var Commands = []string{"sbatch", "squeue", "sacct", "scancel", "scontrol", "sinfo"}

// passedEnv is what the Slurm commands get of this process's environment
// when Client.Env is nil.
var passedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "SLURM_CONF"}

func (c *Client) env() []string {
	if c.Env != nil {
		return c.Env
	}
	var env []string
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (c *Client) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func (c *Client) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return 30 * time.Second
}

func (c *Client) outage() time.Duration {
	if c.Outage > 0 {
		return c.Outage
	}
	return 10 * time.Minute
}

// Path returns the path of a Slurm command, or an error that says it is
// missing and where it was looked for.
func (c *Client) Path(name string) (string, error) {
	if c.Bin != "" {
		p := filepath.Join(c.Bin, name)
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable in %s (slurm.bin): is this a Slurm login node?", name, c.Bin)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not on PATH: is this a Slurm login node? (slurm.bin in frontier.yaml names the commands' folder)", name)
	}
	return p, nil
}

// CommandError is a Slurm command that failed: it could not start, ran
// past its time, or exited non-zero. Stderr holds what it said.
type CommandError struct {
	Command string // the command line
	Stderr  string
	Err     error
}

func (e *CommandError) Error() string {
	// What the command said, on one line: its last lines say why it
	// failed, those before are often retries of the same.
	var said []string
	for _, l := range strings.Split(e.Stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			said = append(said, l)
		}
	}
	text := strings.Join(said[max(0, len(said)-4):], "; ")
	if text == "" {
		text = e.Err.Error()
	}
	return fmt.Sprintf("%s: %s", e.Command, text)
}

func (e *CommandError) Unwrap() error { return e.Err }

// unreachable are what the Slurm commands say when slurmctld does not
// answer: a restart, a failover, a controller too busy to reply in time.
// A command that says one of them may work when tried again.
var unreachable = []string{
	"Unable to contact slurm controller",
	"Socket timed out on send/recv",
	"Connection refused",
	"Connection timed out",
	"Zero Bytes were transmitted or received",
	"Resource temporarily unavailable",
	"Transport endpoint is not connected",
	"Slurm backup controller in standby mode",
	"slurmctld is busy",
	"Communication connection failure",
	"Too many pending RPCs",
}

// Transient reports whether err is a Slurm command that failed because
// slurmctld did not answer, or ran past its time: the same command may
// work later.
func Transient(err error) bool {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return false
	}
	if errors.Is(ce.Err, context.DeadlineExceeded) {
		return true
	}
	for _, s := range unreachable {
		if strings.Contains(ce.Stderr, s) {
			return true
		}
	}
	return false
}

// command runs one Slurm command with stdin and returns its stdout. It is
// a *CommandError when the command fails.
func (c *Client) command(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	path, err := c.Path(name)
	if err != nil {
		return nil, err
	}
	timeout := c.CommandTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout bytes.Buffer
	stderr := &capped{max: 8 << 10}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	err = cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cctx.Err() != nil {
			err = fmt.Errorf("no answer in %v: %w", timeout, cctx.Err())
		}
		return nil, &CommandError{Command: commandLine(name, args), Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// commandLine is the command as an error shows it: without the output
// formats, which say nothing of why it failed.
func commandLine(name string, args []string) string {
	line := name
	for _, a := range args {
		if !strings.HasPrefix(a, "--Format=") && !strings.HasPrefix(a, "--format=") {
			line += " " + a
		}
	}
	return line
}

// patiently calls f until it returns something else than a transient
// error (see Transient), for up to Client.Outage: slurmctld restarting or
// too busy to answer is waited for, with the wait between tries growing to
// Client.Poll.
func (c *Client) patiently(ctx context.Context, what string, f func() error) error {
	start := time.Now()
	wait := time.Second
	for {
		err := f()
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return err
		}
		if time.Since(start) > c.outage() {
			return fmt.Errorf("slurmctld has not answered for %v: %w", c.outage(), err)
		}
		c.log().Warn("slurm: no answer; trying again", "doing", what, "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, c.poll())
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

var _ io.Writer = (*capped)(nil)
