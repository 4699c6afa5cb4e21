package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/slurm"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/verify"
)

// environment is what evaluating programs needs: the store, the Python
// interpreter and the evaluator wired to them.
type environment struct {
	cfg   *config.Config
	store store.Store
	eval  *eval.Evaluator
	// gpus is this machine's pool (nil without GPUs): the engine sizes
	// its slots by it.
	gpus *runner.GPUPool
	// slots is how many phases the executor runs at once (0: the engine
	// decides from the machine): a cluster's jobs in flight.
	slots int
}

func (e *environment) Close() error {
	// The executor's own jobs (a cluster's workers) end before the store
	// that records what they ran.
	if e.eval != nil {
		if c, ok := e.eval.Executor.(io.Closer); ok {
			c.Close()
		}
	}
	if e.store != nil {
		return e.store.Close()
	}
	return nil
}

// limitFlag adds --limit, the full runs' wall-clock limit, to a command
// that runs full evaluations.
func limitFlag(cmd *cobra.Command, d *time.Duration) {
	cmd.Flags().DurationVar(d, "limit", 0, "every full run's wall-clock limit, fixed, e.g. 10m (default: sized from the fast check, and extended while the run keeps stepping, up to the track's limits.full_run_max)")
}

// checkLimit refuses a --limit that is not a positive duration (0 is the
// default: sized).
func checkLimit(d time.Duration) error {
	if d < 0 {
		return usage(fmt.Errorf("--limit %s: want a positive duration such as 10m, or leave it out to size the limit from the fast check", d))
	}
	return nil
}

// openEnvironment opens the store, finds Python and builds the evaluator.
// It makes the state folders private where it creates them, and cleans up
// after evaluations that a process which ended left running.
func openEnvironment(ctx context.Context, g *globals, cfg *config.Config) (*environment, error) {
	// The store first: it is quick, and a database that cannot record
	// an evaluation is said before seconds go to probing Python.
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return withEvaluator(ctx, g, cfg, st)
}

// openStore makes the state folders and opens the database for writing.
func openStore(ctx context.Context, cfg *config.Config) (store.Store, error) {
	if err := cfg.MakeDirs(); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open the database (set db: in frontier.yaml or --db): %w", err)
	}
	if st.ReadOnly() {
		st.Close()
		return nil, fmt.Errorf("the database %s is read-only for this user, and an evaluation is recorded before it starts: use a home where you may write (--home, FRONTIER_HOME) or --db: %w", cfg.DBName(), store.ErrReadOnly)
	}
	return st, nil
}

// withEvaluator completes the environment around an open store: it cleans
// up after evaluations a process that ended left running, builds the
// executor (this machine's, or the Slurm cluster's) and the evaluator. It
// owns st from then on, and closes it on error.
func withEvaluator(ctx context.Context, g *globals, cfg *config.Config, st store.Store) (*environment, error) {
	cleanOrphans(ctx, g, st, cfg.RunsDir)
	ev := &eval.Evaluator{
		Store:   st,
		Version: buildVersion().String(),
		RunsDir: cfg.RunsDir,
		Data:    &eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data},
		// Protected regions are restored first; the track's static rules
		// then judge the program that will run.
		Checks: verify.Checks(),
		Log:    g.log,
	}
	env := &environment{cfg: cfg, store: st, eval: ev}
	if cfg.Executor == config.ExecutorSlurm {
		x, err := slurmExecutor(cfg, g)
		if err != nil {
			st.Close()
			return nil, err
		}
		// Python, the sandbox and the GPUs are each node's: the results
		// say which.
		ev.Executor, ev.Sandbox, ev.Python = x, "node", "node"
		env.slots = cfg.Slurm.MaxJobs()
		return env, nil
	}
	node, err := localNode(ctx, g, cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	ev.Executor, ev.Sandbox, ev.Python, ev.Torch = node.exec, node.local.Sandbox, node.local.Python, node.torch
	env.gpus = node.local.GPUs
	return env, nil
}

// machine is this machine's executor and what it found.
type machine struct {
	local *eval.Local
	exec  eval.Executor
	torch string
}

// localNode finds Python, the sandbox and the GPUs of this machine and
// builds its executor: on the machine that runs frontier, or on a node of
// a cluster for phase-exec.
func localNode(ctx context.Context, g *globals, cfg *config.Config) (*machine, error) {
	py, err := pyenv.FindNotify(ctx, cfg.Python, func(python string) {
		g.log.Info("checking the Python that runs training programs (importing torch takes a few seconds, more on a busy machine)", "python", python)
	})
	if err != nil {
		if errors.Is(err, pyenv.ErrNoTorch) {
			return nil, usage(err)
		}
		return nil, err
	}
	mode, err := sandbox.ParseMode(cfg.Sandbox)
	if err != nil {
		return nil, usage(err)
	}
	sb, err := sandbox.Wrap(ctx, runner.NewLocal(g.log), mode, sandbox.Options{Log: g.log})
	if err != nil {
		return nil, usage(fmt.Errorf("sandbox: %w", err))
	}
	gpus, err := eval.NewNodeGPUPool(cfg.GPUs, len(py.GPUs))
	if err != nil {
		return nil, usage(fmt.Errorf("gpus: %w", err))
	}
	l := &eval.Local{
		Runner: sb, Python: py.Path, GPUs: gpus, Sandbox: string(sb.Mode()),
		Hidden: hiddenPaths(cfg), Visible: py.Paths,
		Env: py.ProgramEnv(), BLAS: py.BLASName(),
	}
	return &machine{local: l, exec: eval.NewNode(l), torch: py.Torch}, nil
}

// slurmExecutor runs evaluations as jobs of the cluster the configuration
// describes, with this frontier binary (or slurm.frontier) on the nodes.
func slurmExecutor(cfg *config.Config, g *globals) (*slurm.Executor, error) {
	bin := cfg.Slurm.Frontier
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("slurm: the frontier binary the nodes run: %w; set slurm.frontier", err)
		}
		bin = exe
	}
	var args []string
	if cfg.Path != "" {
		p, err := filepath.Abs(cfg.Path)
		if err != nil {
			return nil, err
		}
		args = append(args, "--config", p)
	}
	if cfg.Home != "" {
		h, err := filepath.Abs(cfg.Home)
		if err != nil {
			return nil, err
		}
		args = append(args, "--home", h)
	}
	return &slurm.Executor{
		Client: cfg.Slurm.Client(), Frontier: bin, NodeArgs: args,
		Dir: filepath.Join(cfg.RunsDir, "slurm"), Apply: cfg.Slurm.Apply, Log: g.log,
		Workers: cfg.Slurm.WorkerMode(),
	}, nil
}

// cleanOrphans marks interrupted the evaluations that a process of this
// machine left running when it ended (a kill -9, a crash, a failure
// before it recorded the outcome), removes their run folders, and says
// so. A failure here costs nothing but the cleanup: it is logged.
func cleanOrphans(ctx context.Context, g *globals, st store.Store, runsDir string) {
	orphans, err := st.InterruptOrphans(ctx)
	if err != nil {
		g.log.Warn("could not look for evaluations left running by a process that ended", "err", err)
		return
	}
	for _, e := range orphans {
		removed := removeRunDirs(runsDir, e)
		g.log.Warn("an earlier evaluation was left running by a process that ended: marked interrupted",
			"evaluation", e.ID, "program", shortHash(e.ProgramHash), "track", e.Track,
			"started", e.StartedAt.Format("2006-01-02 15:04:05"), "run_folders_removed", removed)
	}
}

// removeRunDirs removes the run folders of evaluation e and returns how
// many there were: the folder the row names, or, for rows written before
// the evaluator named it there, the folder found by its name:
// <time>-<program hash>-s<seed>-<random>, made within seconds of the row.
func removeRunDirs(runsDir string, e *store.Evaluation) int {
	if e.RunDir != "" && filepath.Dir(e.RunDir) == filepath.Clean(runsDir) {
		// Rows written since the evaluator names its folder before it
		// records the row.
		if _, err := os.Lstat(e.RunDir); err != nil {
			return 0
		}
		if os.RemoveAll(e.RunDir) == nil {
			return 1
		}
		return 0
	}
	if runsDir == "" || len(e.ProgramHash) < 12 {
		return 0
	}
	entries, err := os.ReadDir(runsDir)
	if err != nil {
		return 0
	}
	mid := fmt.Sprintf("-%s-s%d-", e.ProgramHash[:12], e.Seed)
	n := 0
	for _, de := range entries {
		name := de.Name()
		stamp, rest, ok := strings.Cut(name, mid)
		if !de.IsDir() || !ok || rest == "" || len(stamp) != len("20060102-150405") {
			continue
		}
		at, err := time.ParseInLocation("20060102-150405", stamp, time.Local)
		if err != nil || at.Before(e.StartedAt.Truncate(time.Second).Add(-time.Second)) || at.After(e.StartedAt.Add(time.Minute)) {
			continue
		}
		if os.RemoveAll(filepath.Join(runsDir, name)) == nil {
			n++
		}
	}
	return n
}

// noDatabase says whether the database is a file of this machine that
// does not exist yet (a command that only reads has nothing to read; a
// server's database gets its schema on first use).
func noDatabase(cfg *config.Config) bool {
	f := cfg.DBFile()
	if f == "" {
		return false
	}
	_, err := os.Stat(f)
	return errors.Is(err, fs.ErrNotExist)
}

func shortHash(h string) string { return h[:min(12, len(h))] }

// hiddenPaths are what no program may read: frontier's home, database,
// data and runs (a run's own folder is bound back), and the user's home,
// where keys and other secrets live. The interpreter's folders stay
// readable where they lie inside them (a Python under the home).
func hiddenPaths(cfg *config.Config) []string {
	h := []string{cfg.Home, cfg.DataDir, cfg.RunsDir}
	if f := cfg.DBFile(); f != "" {
		h = append(h, f, f+"-wal", f+"-shm")
	}
	for _, d := range cfg.Data {
		h = append(h, d)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		h = append(h, home)
	}
	return h
}
