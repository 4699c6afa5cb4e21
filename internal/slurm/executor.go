package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runner"
)

// Executor runs each phase of an evaluation as a Slurm job that runs
// frontier itself on the node (its hidden phase-exec command): the judge,
// the sandbox, the GPUs and Python are all the node's. The phase's folder
// lies under Dir, which every node sees at the same path; the node-side
// frontier writes its result there as a report authenticated with a key
// the program never sees (the folder is hidden from it), and Execute reads
// it back. A phase is named for what it runs (PhaseJob.Key), so that a
// frontier killed with jobs in flight finds them again instead of
// submitting twice.
type Executor struct {
	Client *Client
	// Frontier is the frontier binary as the nodes see it.
	Frontier string
	// NodeArgs are the global flags of the node-side command (--config,
	// --home), so that it reads the same configuration.
	NodeArgs []string
	// Dir holds the phases' folders; every node must see it at this path.
	Dir string
	// Apply sets what the configuration decides of every job: partition,
	// account, QoS, constraint, GPU type, extra directives.
	Apply func(*Spec)
	// Workers, when N > 0, runs phases in long-lived worker jobs instead
	// of a job each (see worker.go).
	Workers Workers
	Log     *slog.Logger

	workers workerPool
}

// Names of the files of a phase's folder.
const (
	jobFile    = "phase.json"
	keyFile    = "key"
	reportName = "report.json"
)

// nodeJob is what the node-side frontier reads: the phase and the flags
// that find its configuration.
type nodeJob struct {
	Phase eval.PhaseJob `json:"phase"`
	Label string        `json:"label"`
}

// Execute submits the phase as a job (or follows the one an earlier
// process submitted), waits for it, and returns what the node measured.
// With workers, the phase goes to the queue of a worker job instead (see
// Workers).
func (x *Executor) Execute(ctx context.Context, job eval.PhaseJob) (*eval.PhaseRun, error) {
	ph, err := x.prepare(job)
	if err != nil {
		return nil, err
	}
	spec := x.phaseSpec(job, ph)
	if x.Workers.N > 0 && phaseTime(job) <= x.Workers.time()-workerMargin {
		return x.executeByWorker(ctx, job, ph, spec)
	}
	say := func(format string, args ...any) {
		if job.Progress != nil {
			job.Progress(fmt.Sprintf(format, args...))
		}
	}
	last := State("")
	res, err := x.Client.Run(ctx, spec, func(in Info) {
		if in.State != last {
			last = in.State
			where := ""
			if in.Node != "" {
				where = " on " + in.Node
			}
			say("%s: %s run: Slurm job %s %s%s", job.Track.Name, job.Mode, in.ID, strings.ToLower(string(in.State)), where)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("slurm job %s: %w", ph.name, err)
	}
	run, rerr := readRun(ph, res.ID)
	if rerr == nil || !errors.Is(rerr, errNoReport) {
		return run, rerr
	}
	// No report: the node-side frontier did not get to the end. What
	// Slurm says of the job is all there is.
	return x.noReport(job, res, rerr)
}

// phase is a phase's folder and what authenticates its report.
type phase struct {
	name, dir, label string
	key              Key
	// submitted is when the phase was first handed to Slurm: when its
	// key was written.
	submitted time.Time
}

// prepare makes the phase's folder, with its key and its job, and
// returns them; a folder an earlier process made keeps its key.
func (x *Executor) prepare(job eval.PhaseJob) (phase, error) {
	name := x.jobName(job)
	ph := phase{name: name, dir: filepath.Join(x.Dir, name), label: name}
	if err := os.MkdirAll(ph.dir, 0o700); err != nil {
		return ph, fmt.Errorf("slurm: the phase's folder: %w", err)
	}
	var err error
	if ph.key, ph.submitted, err = x.key(ph.dir); err != nil {
		return ph, err
	}
	// The phase's folders lie in the job's own, which a later process
	// finds by the job's name.
	job.RunDir = ph.dir
	job.Progress = nil
	b, err := json.Marshal(nodeJob{Phase: job, Label: ph.label})
	if err != nil {
		return ph, fmt.Errorf("slurm: encode the phase: %w", err)
	}
	if err := writeAtomic(filepath.Join(ph.dir, jobFile), b); err != nil {
		return ph, fmt.Errorf("slurm: write the phase: %w", err)
	}
	return ph, nil
}

// phaseSpec is the job that runs the phase: the track's resources, the
// configuration's partition and account.
func (x *Executor) phaseSpec(job eval.PhaseJob, ph phase) Spec {
	spec := Spec{
		Name:      ph.name,
		Comment:   comment(job),
		Argv:      append(append([]string{x.Frontier}, x.NodeArgs...), "phase-exec", ph.dir),
		Dir:       ph.dir,
		Output:    filepath.Join(ph.dir, "slurm-%j.out"),
		CPUs:      max(1, job.Track.Hardware.Threads) * max(1, job.Track.Launcher.NProcPerNode),
		Memory:    jobMemory(job),
		TimeLimit: phaseTime(job),
	}
	if job.Track.Hardware.Device == "cuda" {
		spec.GPUs = max(1, job.Track.Hardware.GPUs) * max(1, job.Track.Launcher.NProcPerNode)
	}
	if x.Apply != nil {
		x.Apply(&spec)
	}
	return spec
}

// phaseTime bounds how long a phase's node-side frontier runs: the
// phase's own limits (the program's, then the scorer's setup and answers)
// come first, and Slurm's is a backstop.
func phaseTime(job eval.PhaseJob) time.Duration {
	return 2*job.Limit + 2*job.Track.Limits.CompileBudget.D() + 5*time.Minute
}

// errNoReport: the phase's folder holds no report.
var errNoReport = errors.New("no report")

// readRun reads the phase's report, written by job: what the node
// measured, or the node's error. errNoReport when there is none.
func readRun(ph phase, job string) (*eval.PhaseRun, error) {
	path := filepath.Join(ph.dir, reportName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoReport
	}
	rep, err := ReadReport(path, ph.key, job, ph.label)
	if err != nil {
		if errors.Is(err, ErrForged) {
			return nil, fmt.Errorf("slurm job %s: its report does not carry the job's key: %w", job, err)
		}
		return nil, fmt.Errorf("slurm job %s: %w", job, err)
	}
	var out nodeReport
	if err := json.Unmarshal(rep.Payload, &out); err != nil {
		return nil, fmt.Errorf("slurm job %s: its report: %w", rep.Job, err)
	}
	if out.Error != "" {
		return nil, fmt.Errorf("slurm job %s on %s: %s", rep.Job, rep.Node, out.Error)
	}
	if out.Run == nil {
		return nil, fmt.Errorf("slurm job %s on %s: a report without a result", rep.Job, rep.Node)
	}
	out.Run.Node = rep.Node
	if !out.Started.IsZero() && !ph.submitted.IsZero() {
		out.Run.Waited = max(0, out.Started.Sub(ph.submitted))
	}
	return out.Run, nil
}

// noReport is the phase of a job that left no report: a program verdict
// where Slurm's end state is one (its time or memory limit), an error
// otherwise (the node, or frontier on it, failed).
func (x *Executor) noReport(job eval.PhaseJob, res Result, rerr error) (*eval.PhaseRun, error) {
	run := &eval.PhaseRun{Mode: job.Mode, Limit: job.Limit, Node: res.Node}
	rr := runner.Result{ExitCode: res.ExitCode, Message: "Slurm: " + res.Message}
	switch {
	case res.State == Timeout || res.State == Deadline:
		rr.Status = runner.StatusTimeout
	case res.MemoryExceeded:
		rr.Status, rr.Limit = runner.StatusLimit, runner.LimitMemory
	default:
		return nil, fmt.Errorf("slurm job %s ended without a result (%v): %s", res.ID, rerr, res.Message)
	}
	run.Program = rr
	return run, nil
}

// jobName names a phase's job for what it runs: the evaluation's stable key
// (or, without one, its run folder) and the phase, under the folder of
// all jobs (two frontiers with different folders never share a name).
func (x *Executor) jobName(job eval.PhaseJob) string {
	id := job.Key
	if id == "" {
		id = job.RunDir
	}
	h := sha256.Sum256([]byte(x.Dir + "\x00" + id))
	return "frontier-" + hex.EncodeToString(h[:8]) + "-" + job.Mode
}

// comment says, for a person reading squeue, which evaluation a job is.
func comment(job eval.PhaseJob) string {
	c := fmt.Sprintf("frontier %s %s %s", job.Track.Name, job.Mode, job.Name)
	if job.Key != "" {
		c += " " + job.Key
	}
	var b strings.Builder
	for _, r := range c {
		if r >= ' ' && r <= '~' && r != '"' && r != '\'' && r != '\\' {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 250 {
		s = s[:250]
	}
	return s
}

// jobMemory is what a phase's job asks for: the program's memory limit
// (the program and its scorer run one after the other), and a GiB for the
// judge and frontier; 0 leaves it to the partition.
func jobMemory(job eval.PhaseJob) int64 {
	m := int64(job.Track.Limits.Memory)
	if m <= 0 {
		return 0
	}
	return m + 1<<30
}

// key returns the phase's key and when it was made: the one an earlier
// process wrote when it submitted the phase, else a new one.
func (x *Executor) key(dir string) (Key, time.Time, error) {
	path := filepath.Join(dir, keyFile)
	k, err := ReadKey(path)
	if err == nil {
		var made time.Time
		if fi, err := os.Stat(path); err == nil {
			made = fi.ModTime()
		}
		return k, made, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Key{}, time.Time{}, fmt.Errorf("slurm: the phase's key: %w", err)
	}
	if k, err = NewKey(); err != nil {
		return Key{}, time.Time{}, err
	}
	if err := WriteKey(path, k); err != nil {
		return Key{}, time.Time{}, fmt.Errorf("slurm: the phase's key: %w", err)
	}
	return k, time.Now(), nil
}

// nodeReport is the payload of a phase's report.
type nodeReport struct {
	Run   *eval.PhaseRun `json:"run,omitempty"`
	Error string         `json:"error,omitempty"`
	// Started is when the node began the phase (by the node's clock).
	Started time.Time `json:"started"`
}

// ServePhase is the node side of a phase's job: it reads the phase from
// dir, runs it with exec (the node's own executor: its judge, sandbox, GPUs
// and Python), and writes the report. The key is read before anything
// runs; the program never sees the folder. It returns an error only when
// no report could be written.
func ServePhase(ctx context.Context, dir string, exec eval.Executor) error {
	started := time.Now()
	key, err := ReadKey(filepath.Join(dir, keyFile))
	if err != nil {
		return fmt.Errorf("the phase's key: %w", err)
	}
	jobID := os.Getenv("SLURM_JOB_ID")
	if jobID == "" {
		return errors.New("SLURM_JOB_ID is not set: phase-exec runs inside a Slurm job frontier submitted")
	}
	node, _ := os.Hostname()
	var nj nodeJob
	b, err := os.ReadFile(filepath.Join(dir, jobFile))
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&nj)
	}
	rep := nodeReport{Started: started}
	switch {
	case err != nil:
		rep.Error = fmt.Sprintf("read the phase: %v", err)
	case nj.Phase.Track == nil || nj.Phase.Data == nil:
		rep.Error = "the phase names no track or no data"
	default:
		run, err := exec.Execute(ctx, nj.Phase)
		if ctx.Err() != nil {
			// Stopped (Slurm cancelled the job, or the frontier that
			// waits gave up): what ran is no result. The frontier that
			// waits reads Slurm's word on the job instead.
			return fmt.Errorf("%w: %w", ErrStopped, context.Cause(ctx))
		}
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Run = run
		}
	}
	payload, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	return WriteReport(filepath.Join(dir, reportName), key, Report{Job: jobID, Node: node, Label: nj.Label, Payload: payload})
}

// ErrStopped is ServePhase's error for a phase stopped before its end: it
// wrote no report.
var ErrStopped = errors.New("the phase was stopped before its end")

// writeAtomic writes b to path through a temporary file and a rename.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
