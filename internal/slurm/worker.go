package slurm

import (
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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runner"
)

// Worker mode: instead of a job per phase, a few long-lived jobs per kind
// of node (the same GPUs, CPUs, memory, partition and account: a class)
// run phases one after another from a queue on the shared file system. A
// phase then starts as soon as a worker is free, without waiting for
// Slurm to schedule a job, and on a node whose frontier has already found
// its Python and sandbox and whose page cache holds the track's data.
//
// What workers do not share between phases is anything a program can
// write: each phase runs in its own folder, under its own sandbox, with a
// fresh compile cache, as a job of its own would. A compile cache shared
// by the programs of a search would be state that one candidate leaves
// for the next.
//
// The queue is a folder per class under the executor's Dir:
//
//	workers/<class>/queue/<phase>           a ticket: the phase waits
//	workers/<class>/claimed/<job>/<phase>   worker <job> runs it
//	workers/<class>/done/<phase>            its report is written (holds <job>)
//
// A worker claims a ticket by renaming it, which one worker alone can do
// (rename is atomic on the file systems clusters share). Every state is a
// file, so a frontier that was killed finds its phases again where they
// stand.

// Workers configures worker mode.
type Workers struct {
	// N is how many workers of a class may run at once; 0 runs a job per
	// phase.
	N int
	// Time is each worker job's time limit; 0 means 4h. A phase that
	// would not fit in it runs as a job of its own.
	Time time.Duration
	// Idle is how long a worker waits for a phase before it ends; 0
	// means 5m.
	Idle time.Duration
}

func (w Workers) time() time.Duration {
	if w.Time > 0 {
		return w.Time
	}
	return 4 * time.Hour
}

func (w Workers) idle() time.Duration {
	if w.Idle > 0 {
		return w.Idle
	}
	return 5 * time.Minute
}

// workerMargin is the time a worker keeps at the end of its job: it takes
// no phase that could run into it.
const workerMargin = 2 * time.Minute

// workerPool is the executor's own view of its workers.
type workerPool struct {
	mu sync.Mutex
	// ensured is when each class's workers were last counted.
	ensured map[string]time.Time
	// infos caches what Slurm said of a worker job, and when.
	infos map[string]cachedInfo
	// bg is the context the workers' jobs are followed in; Close ends it.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	seq    int
	// failed counts, per class, the workers in a row that failed without
	// taking a phase; broken holds why, once there were maxWorkerFailures
	// of them, and no worker of the class is started again.
	failed map[string]int
	broken map[string]error
	// running counts, per class, the workers this executor started whose
	// end it has not yet taken in: Slurm may list a worker as ended before
	// its failure is counted, and no other must start in between.
	running map[string]int
}

// maxWorkerFailures is how many workers in a row may fail before running
// a phase before the class's phases fail with the last one's message: a
// worker that cannot start (a binary the nodes cannot run, a Python
// without torch) would otherwise be submitted again every few seconds.
const maxWorkerFailures = 3

type cachedInfo struct {
	in Info
	at time.Time
}

// Close cancels the worker jobs this executor started and waits until
// Slurm confirms it (a worker running a phase stops it).
func (x *Executor) Close() error {
	p := &x.workers
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.wg.Wait()
	return nil
}

// classOf names the kind of node a phase's job asks for: everything of its
// spec but its name, command, folder and time.
func classOf(spec Spec) string {
	c := spec
	c.Name, c.Comment, c.Argv, c.Dir, c.Output, c.TimeLimit = "", "", nil, "", "", 0
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// workerPrefix starts the job names of a class's workers.
func workerPrefix(class string) string { return "frontier-worker-" + class + "-" }

// The folders of a class's queue.
func queueDir(cdir string) string          { return filepath.Join(cdir, "queue") }
func claimedDir(cdir, job string) string   { return filepath.Join(cdir, "claimed", job) }
func doneFile(cdir, name string) string    { return filepath.Join(cdir, "done", name) }
func cancelFile(phaseDir string) string    { return filepath.Join(phaseDir, "cancel") }
func ticketFile(cdir, name string) string  { return filepath.Join(queueDir(cdir), name) }
func workerOutput(cdir, job string) string { return filepath.Join(cdir, "worker-"+job+".out") }

// executeByWorker queues the phase for a worker of its class, makes sure
// workers run, and waits for the phase's report. A worker that ends
// without one (its node failed, it was cancelled) gives the phase back to
// the queue once; then the phase's error says what Slurm said.
func (x *Executor) executeByWorker(ctx context.Context, job eval.PhaseJob, ph phase, spec Spec) (*eval.PhaseRun, error) {
	class := classOf(spec)
	cdir := filepath.Join(x.Dir, "workers", class)
	for _, d := range []string{queueDir(cdir), filepath.Join(cdir, "claimed"), filepath.Join(cdir, "done")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("slurm: the workers' queue: %w", err)
		}
	}
	say := func(format string, args ...any) {
		if job.Progress != nil {
			job.Progress(fmt.Sprintf(format, args...))
		}
	}
	// A phase is in one place at a time: done, claimed by a worker, or in
	// the queue. A resumed frontier finds it there.
	where := func() (state, worker string) {
		if b, err := os.ReadFile(doneFile(cdir, ph.name)); err == nil {
			return "done", strings.TrimSpace(string(b))
		}
		if m, _ := filepath.Glob(filepath.Join(cdir, "claimed", "*", ph.name)); len(m) > 0 {
			return "claimed", filepath.Base(filepath.Dir(m[0]))
		}
		if _, err := os.Stat(ticketFile(cdir, ph.name)); err == nil {
			return "queued", ""
		}
		return "", ""
	}
	if st, _ := where(); st == "" {
		os.Remove(cancelFile(ph.dir))
		if err := x.enqueue(cdir, ph.name); err != nil {
			return nil, err
		}
	}
	gaveBack := 0
	lastSaid := ""
	wait := 250 * time.Millisecond
	for {
		st, worker := where()
		switch st {
		case "done":
			run, err := readRun(ph, worker)
			if errors.Is(err, errNoReport) {
				err = fmt.Errorf("slurm worker %s: it marked the phase done without a report", worker)
			}
			os.Remove(doneFile(cdir, ph.name))
			return run, err
		case "queued":
			if err := x.ensureWorkers(ctx, class, cdir, spec); err != nil {
				x.withdraw(cdir, ph)
				return nil, err
			}
			if lastSaid != "queued" {
				lastSaid = "queued"
				say("%s: %s run: waiting for a Slurm worker", job.Track.Name, job.Mode)
			}
		case "claimed":
			in, err := x.workerInfo(ctx, worker)
			if err == nil && in.State.Ended() {
				// The worker is gone. Its report may have come just
				// before: look once more.
				if st, _ := where(); st != "claimed" {
					continue
				}
				os.Remove(filepath.Join(claimedDir(cdir, worker), ph.name))
				if gaveBack == 0 && (in.State.nodeFault() || in.State == Cancelled || in.State == Timeout) {
					gaveBack++
					x.log().Warn("slurm: a worker ended while it ran a phase; queueing it again", "job", worker, "state", in.State, "phase", ph.name)
					if err := x.enqueue(cdir, ph.name); err != nil {
						return nil, err
					}
					continue
				}
				return workerLost(job, result(ctx, Spec{Output: workerOutput(cdir, "%j")}, []Info{in}))
			}
			if msg := "running on " + in.Node; err == nil && lastSaid != msg {
				lastSaid = msg
				say("%s: %s run: Slurm worker %s on %s", job.Track.Name, job.Mode, worker, in.Node)
			}
		default:
			// Taken out of the queue by someone else: put it back.
			if err := x.enqueue(cdir, ph.name); err != nil {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, x.cancelPhase(cdir, ph, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// workerLost is the phase whose worker ended while it ran it, without a
// report: a memory verdict when Slurm killed the worker for the memory the
// program took, an error otherwise (the worker's time limit is its own,
// not the program's).
func workerLost(job eval.PhaseJob, res Result) (*eval.PhaseRun, error) {
	if res.MemoryExceeded {
		return &eval.PhaseRun{Mode: job.Mode, Limit: job.Limit, Node: res.Node, Program: runner.Result{
			Status: runner.StatusLimit, Limit: runner.LimitMemory, ExitCode: res.ExitCode, Message: "Slurm: " + res.Message,
		}}, nil
	}
	return nil, fmt.Errorf("slurm worker %s ended while it ran the phase, without a result: %s", res.ID, res.Message)
}

// enqueue puts the phase's ticket into its class's queue.
func (x *Executor) enqueue(cdir, name string) error {
	tmp := filepath.Join(cdir, "."+name+".ticket")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return fmt.Errorf("slurm: queue the phase: %w", err)
	}
	if err := os.Rename(tmp, ticketFile(cdir, name)); err != nil {
		return fmt.Errorf("slurm: queue the phase: %w", err)
	}
	return nil
}

// withdraw takes a phase out of the queue, if no worker took it yet.
func (x *Executor) withdraw(cdir string, ph phase) bool {
	return os.Remove(ticketFile(cdir, ph.name)) == nil
}

// cancelPhase stops a phase whose caller gave up: out of the queue, or
// its worker told to stop it (the worker then writes its report, which
// nobody reads).
func (x *Executor) cancelPhase(cdir string, ph phase, cause error) error {
	if x.withdraw(cdir, ph) {
		return cause
	}
	if err := os.WriteFile(cancelFile(ph.dir), nil, 0o600); err != nil {
		return fmt.Errorf("%w; the phase may still run: %w", cause, err)
	}
	return cause
}

// ensureWorkers starts workers for a class whose queue holds phases, up to
// Workers.N jobs (pending or running), at most once every two seconds.
func (x *Executor) ensureWorkers(ctx context.Context, class, cdir string, spec Spec) error {
	p := &x.workers
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ensured == nil {
		p.ensured = map[string]time.Time{}
		p.infos = map[string]cachedInfo{}
		p.failed = map[string]int{}
		p.broken = map[string]error{}
		p.running = map[string]int{}
		p.bg, p.cancel = context.WithCancel(context.Background())
	}
	if err := p.broken[class]; err != nil {
		return err
	}
	if time.Since(p.ensured[class]) < 2*time.Second {
		return nil
	}
	p.ensured[class] = time.Now()
	live, err := x.Client.List(ctx, workerPrefix(class))
	if err != nil {
		x.log().Warn("slurm: could not count the workers; trying again", "err", err)
		return nil
	}
	live = slices.DeleteFunc(live, func(in Info) bool { return in.State.Ended() })
	queued := countEntries(queueDir(cdir))
	busy := 0
	if ws, err := os.ReadDir(filepath.Join(cdir, "claimed")); err == nil {
		for _, w := range ws {
			busy += countEntries(filepath.Join(cdir, "claimed", w.Name()))
		}
	}
	for n := max(len(live), p.running[class]); n < min(x.Workers.N, queued+busy); n++ {
		if err := x.startWorker(ctx, class, cdir, spec); err != nil {
			return err
		}
	}
	return nil
}

// startWorker submits one worker job and follows it in the background
// until it ends (or Close cancels it).
func (x *Executor) startWorker(ctx context.Context, class, cdir string, spec Spec) error {
	p := &x.workers
	p.seq++
	w := spec
	// The process and the time make the name new: Run follows the job by
	// it, and must not find an older worker of the same name.
	w.Name = fmt.Sprintf("%s%d-%d-%d", workerPrefix(class), os.Getpid(), time.Now().UnixMilli()%1e9, p.seq)
	w.Comment = "frontier worker " + class + ": runs evaluation phases from " + cdir
	w.Argv = append(append([]string{x.Frontier}, x.NodeArgs...), "phase-worker",
		"--limit", x.Workers.time().String(), "--idle", x.Workers.idle().String(), cdir)
	w.Dir = cdir
	w.Output = workerOutput(cdir, "%j")
	w.TimeLimit = x.Workers.time()
	first := w
	first.Name = attemptName(w.Name, 1)
	id, err := x.Client.Submit(ctx, first)
	if err != nil {
		return fmt.Errorf("slurm: start a worker: %w", err)
	}
	x.log().Info("slurm: started a worker", "job", id, "class", class)
	p.running[class]++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// Run finds the job just submitted by its name and follows it;
		// ending p.bg cancels it.
		res, err := x.Client.Run(p.bg, w, nil)
		if err != nil && p.bg.Err() == nil {
			x.log().Warn("slurm: lost sight of a worker", "job", id, "err", err)
			x.workerEnded(class, cdir, id, nil)
			return
		}
		x.log().Info("slurm: a worker ended", "job", id, "end", res.Message)
		if p.bg.Err() != nil {
			x.workerEnded(class, cdir, id, nil) // cancelled by Close: not a failure
			return
		}
		x.workerEnded(class, cdir, id, &res)
	}()
	return nil
}

// workerEnded takes in a worker's end (res nil: not known, or cancelled
// by Close) and counts a worker that failed before it took a phase; after
// maxWorkerFailures in a row the class is broken.
func (x *Executor) workerEnded(class, cdir, id string, res *Result) {
	took := false
	if _, err := os.Stat(claimedDir(cdir, id)); err == nil {
		took = true
	}
	p := &x.workers
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[class]--
	if res == nil {
		return
	}
	if res.OK() || took {
		p.failed[class] = 0
		return
	}
	p.failed[class]++
	if p.failed[class] >= maxWorkerFailures && p.broken[class] == nil {
		msg := res.Message
		if line := lastOutputLine(workerOutput(cdir, id)); line != "" {
			msg += "; it wrote: " + line
		}
		p.broken[class] = fmt.Errorf("slurm: %d worker jobs in a row ended before running a phase (is the frontier binary the nodes run, its configuration and its Python usable there? frontier doctor on a node says); the last: %s", p.failed[class], msg)
		x.log().Error("slurm: workers fail at start; their phases fail", "class", class, "err", p.broken[class])
	}
}

// lastOutputLine is the last line a job wrote to its output file, at most
// 500 bytes of it: what a failed worker said about why.
func lastOutputLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var buf [4096]byte
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-int64(len(buf)), 0)
	n, _ := f.ReadAt(buf[:], off)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 500 {
		line = line[:500]
	}
	return line
}

// workerInfo is what Slurm says of a worker job, asked at most every five
// seconds whatever the number of phases that wait on it.
func (x *Executor) workerInfo(ctx context.Context, id string) (Info, error) {
	p := &x.workers
	p.mu.Lock()
	if p.infos == nil {
		p.infos = map[string]cachedInfo{}
	}
	c, ok := p.infos[id]
	p.mu.Unlock()
	if ok && (c.in.State.Ended() || time.Since(c.at) < 5*time.Second) {
		return c.in, nil
	}
	in, err := x.Client.Info(ctx, id)
	if err != nil {
		if ok {
			return c.in, nil
		}
		return Info{}, err
	}
	p.mu.Lock()
	p.infos[id] = cachedInfo{in: in, at: time.Now()}
	p.mu.Unlock()
	return in, nil
}

func (x *Executor) log() *slog.Logger {
	if x.Log != nil {
		return x.Log
	}
	return x.Client.log()
}

func countEntries(dir string) int {
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// WorkerOptions are a worker's own limits, given on its command line.
type WorkerOptions struct {
	// Limit is its job's time limit; Idle how long it waits for a phase
	// before it ends.
	Limit, Idle time.Duration
}

// ServeWorker is the node side of a worker job: it runs the phases of the
// class folder cdir's queue one after another with exec (the node's own
// executor, built once), each as ServePhase would in a job of its own,
// until the queue stays empty for Idle or no queued phase fits in the
// time its job has left.
func ServeWorker(ctx context.Context, cdir string, exec eval.Executor, opt WorkerOptions, log *slog.Logger) error {
	start := time.Now()
	jobID := os.Getenv("SLURM_JOB_ID")
	if jobID == "" {
		return errors.New("SLURM_JOB_ID is not set: phase-worker runs inside a Slurm job frontier submitted")
	}
	if opt.Idle <= 0 {
		opt.Idle = 5 * time.Minute
	}
	deadline := time.Time{}
	if opt.Limit > 0 {
		deadline = start.Add(opt.Limit - workerMargin)
	}
	mine := claimedDir(cdir, jobID)
	if err := os.MkdirAll(mine, 0o700); err != nil {
		return err
	}
	idleSince := time.Now()
	for ctx.Err() == nil {
		name, ok, err := claim(cdir, mine, deadline)
		if err != nil {
			return err
		}
		if !ok {
			if time.Since(idleSince) > opt.Idle || (!deadline.IsZero() && time.Now().After(deadline)) {
				log.Info("worker: nothing to run; ending", "idle", time.Since(idleSince).Round(time.Second))
				return nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		dir := filepath.Join(filepath.Dir(filepath.Dir(cdir)), name)
		log.Info("worker: running a phase", "phase", name)
		err = serveQueued(ctx, dir, exec)
		switch {
		case ctx.Err() != nil:
			// The worker itself is stopped: the phase stays claimed,
			// and the frontier that waits queues it again once Slurm
			// says this job ended.
			log.Info("worker: stopped while running a phase", "phase", name)
			return nil
		case errors.Is(err, ErrStopped):
			// The frontier that waited gave up on it: nobody reads a
			// result, and a later request runs it again.
			log.Info("worker: the phase was cancelled", "phase", name)
			os.Remove(cancelFile(dir))
		default:
			if err != nil {
				log.Error("worker: the phase left no report", "phase", name, "err", err)
			}
			if err := os.WriteFile(doneFile(cdir, name)+".tmp", []byte(jobID+"\n"), 0o600); err == nil {
				os.Rename(doneFile(cdir, name)+".tmp", doneFile(cdir, name))
			}
		}
		os.Remove(filepath.Join(mine, name))
		idleSince = time.Now()
	}
	return nil
}

// serveQueued runs one phase of the queue, stopped early when the frontier
// that waits on it gives up (the phase's cancel file).
func serveQueued(ctx context.Context, dir string, exec eval.Executor) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(cancelFile(dir)); err == nil {
				cancel(errors.New("the frontier waiting on the phase cancelled it"))
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return ServePhase(ctx, dir, exec)
}

// claim takes the oldest ticket of the queue that fits before deadline:
// renamed into the worker's own folder, so no other worker takes it. ok is
// false when there is none.
func claim(cdir, mine string, deadline time.Time) (name string, ok bool, err error) {
	es, err := os.ReadDir(queueDir(cdir))
	if err != nil {
		return "", false, fmt.Errorf("read the queue: %w", err)
	}
	type ticket struct {
		name string
		at   time.Time
	}
	var ts []ticket
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			ts = append(ts, ticket{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(ts, func(a, b ticket) int { return a.at.Compare(b.at) })
	for _, t := range ts {
		dir := filepath.Join(filepath.Dir(filepath.Dir(cdir)), t.name)
		if !deadline.IsZero() {
			need, err := phaseNeeds(dir)
			if err != nil || time.Now().Add(need).After(deadline) {
				continue // a job of its own, or a fresh worker, runs it
			}
		}
		if err := os.Rename(ticketFile(cdir, t.name), filepath.Join(mine, t.name)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // another worker took it
			}
			return "", false, fmt.Errorf("claim %s: %w", t.name, err)
		}
		return t.name, true, nil
	}
	return "", false, nil
}

// phaseNeeds reads how long a queued phase may take.
func phaseNeeds(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, jobFile))
	if err != nil {
		return 0, err
	}
	var nj nodeJob
	if err := json.Unmarshal(b, &nj); err != nil {
		return 0, err
	}
	if nj.Phase.Track == nil {
		return 0, errors.New("no track")
	}
	return phaseTime(nj.Phase), nil
}
