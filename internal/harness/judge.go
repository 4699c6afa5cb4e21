package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Judge is the judge process of one run: started before the program, outside
// its sandbox, holding the validation text, the clock, the loss, the checks
// and the telemetry. The program's processes reach it only through the
// sockets of Clients.
type Judge struct {
	cmd     *exec.Cmd
	clients []*os.File
	scorers []*os.File
	stderr  *capBuffer

	mu      sync.Mutex
	raw     bytes.Buffer // telemetry lines, up to MaxRawBytes
	dropped int
	read    chan struct{} // closed when the telemetry pipe reached EOF
	exited  chan struct{} // closed when the process was waited for
	waitErr error
}

// JudgeFinishTimeout bounds how long Finish waits for the judge to write its
// last events once every process of the program is gone.
const JudgeFinishTimeout = 30 * time.Second

// StartJudge writes cfg and the judge's files into dir (a folder the
// program cannot see), makes one socket pair per process of the run
// (cfg.WorldSize, at least 1), as many again for the scorer when
// cfg.Scorer is set, and the telemetry pipe, and starts the judge with
// python. env is its whole environment. onLine, when set, receives
// each telemetry line as the judge writes it (for live progress); it must
// not keep the slice.
func StartJudge(ctx context.Context, python, dir string, cfg JudgeConfig, env []string, onLine func(line []byte)) (*Judge, error) {
	abs, err := MaterializeJudge(dir)
	if err != nil {
		return nil, err
	}
	n := max(cfg.WorldSize, 1)
	j := &Judge{stderr: &capBuffer{max: 64 << 10}, read: make(chan struct{}), exited: make(chan struct{})}
	var ours []*os.File // the judge's ends, closed here once it has them
	closeAll := func() {
		for _, f := range append(append(ours, j.clients...), j.scorers...) {
			f.Close()
		}
	}
	pairs := n
	if cfg.Scorer {
		pairs = 2 * n
	}
	for i := range pairs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("judge: socket pair: %w", err)
		}
		ours = append(ours, os.NewFile(uintptr(fds[0]), "judge-socket"))
		if i < n {
			j.clients = append(j.clients, os.NewFile(uintptr(fds[1]), "program-socket"))
		} else {
			j.scorers = append(j.scorers, os.NewFile(uintptr(fds[1]), "scorer-socket"))
		}
	}
	telR, telW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("judge: telemetry pipe: %w", err)
	}
	// The judge's descriptors: 3 the telemetry pipe, 4.. the program's
	// sockets, then the scorer's.
	cfg.TelemetryFD = 3
	cfg.ClientFDs, cfg.ScorerFDs = nil, nil
	for i := range pairs {
		if i < n {
			cfg.ClientFDs = append(cfg.ClientFDs, 4+i)
		} else {
			cfg.ScorerFDs = append(cfg.ScorerFDs, 4+i)
		}
	}
	if err := cfg.Validate(); err != nil {
		closeAll()
		telR.Close()
		telW.Close()
		return nil, err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err == nil {
		err = writeReadOnly(filepath.Join(abs, JudgeConfigFile), append(b, '\n'))
	}
	if err != nil {
		closeAll()
		telR.Close()
		telW.Close()
		return nil, fmt.Errorf("judge: write config: %w", err)
	}
	cmd := exec.CommandContext(ctx, python, "-u", filepath.Join(abs, JudgeFile), filepath.Join(abs, JudgeConfigFile))
	cmd.Dir = abs
	cmd.Env = env
	cmd.Stderr = j.stderr
	cmd.ExtraFiles = append([]*os.File{telW}, ours...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: a signal to the program's does not reach it
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		closeAll()
		telR.Close()
		telW.Close()
		return nil, fmt.Errorf("judge: start %s: %w", python, err)
	}
	j.cmd = cmd
	telW.Close()
	for _, f := range ours {
		f.Close()
	}
	go j.readTelemetry(telR, onLine)
	go func() {
		err := cmd.Wait()
		j.mu.Lock()
		j.waitErr = err
		j.mu.Unlock()
		close(j.exited)
	}()
	return j, nil
}

// Pid is the judge's process id, for reading its CPU time while it runs.
func (j *Judge) Pid() int { return j.cmd.Process.Pid }

// Clients returns the program's ends of the sockets, one per process: the
// runner passes them as descriptors 3, 4, ... (Config.JudgeFD).
func (j *Judge) Clients() []*os.File { return j.clients }

// ScorerClients returns the scorer's ends of its sockets, one per process
// (nil unless the config asked for a scorer).
func (j *Judge) ScorerClients() []*os.File { return j.scorers }

// CloseClients closes frontier's copies of the program's sockets. Call it
// once the program's processes are all gone: the judge then sees every
// connection close, and only then hands the state to the scorer.
func (j *Judge) CloseClients() {
	for _, f := range j.clients {
		f.Close()
	}
}

// Finish closes frontier's copies of every socket (call it once the
// program and the scorer ended: the judge then sees every connection
// close), waits at most timeout for the judge to write its last events and
// exit, and returns the telemetry with its raw lines. A judge that has to
// be killed, or that failed, is an error: the run has no trusted result.
func (j *Judge) Finish(timeout time.Duration) (*Telemetry, []byte, error) {
	for _, f := range append(j.clients, j.scorers...) {
		f.Close()
	}
	var err error
	select {
	case <-j.exited:
	case <-time.After(timeout):
		_ = j.cmd.Process.Signal(syscall.SIGKILL)
		<-j.exited
		err = fmt.Errorf("the judge did not finish within %s of the program's end and was killed", timeout)
	}
	select {
	case <-j.read:
	case <-time.After(5 * time.Second):
	}
	j.mu.Lock()
	raw := bytes.Clone(j.raw.Bytes())
	werr := j.waitErr
	j.mu.Unlock()
	tel, terr := ReadTelemetry(bytes.NewReader(raw))
	if terr != nil {
		return nil, nil, terr
	}
	tel.RawDropped += j.dropped
	if err == nil && werr != nil {
		err = fmt.Errorf("the judge failed (%v): %s", werr, lastStderrLine(j.stderr.String()))
	}
	return tel, raw, err
}

// Kill stops the judge at once (for a run that never started).
func (j *Judge) Kill() {
	for _, f := range append(j.clients, j.scorers...) {
		f.Close()
	}
	_ = j.cmd.Process.Signal(syscall.SIGKILL)
	<-j.exited
}

// Stderr is what the judge printed (its own failures), capped.
func (j *Judge) Stderr() string { return j.stderr.String() }

func (j *Judge) readTelemetry(r io.ReadCloser, onLine func([]byte)) {
	defer close(j.read)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// The judge writes no line this long; skip it whole.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if len(line) > 0 {
			if onLine != nil {
				onLine(line)
			}
			j.mu.Lock()
			if j.raw.Len()+len(line) <= MaxRawBytes {
				j.raw.Write(line)
			} else {
				j.dropped++
			}
			j.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func lastStderrLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(no message)"
	}
	return s
}
