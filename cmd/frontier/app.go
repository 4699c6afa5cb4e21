package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/verify"
)

// environment is what evaluating programs needs: the store, the Python
// interpreter and the evaluator wired to them.
type environment struct {
	cfg   *config.Config
	store *store.Store
	eval  *eval.Evaluator
}

func (e *environment) Close() error {
	if e.store != nil {
		return e.store.Close()
	}
	return nil
}

// openEnvironment finds Python, opens the store and builds the evaluator.
func openEnvironment(ctx context.Context, g *globals, cfg *config.Config) (*environment, error) {
	py, err := pyenv.Find(ctx, cfg.Python)
	if err != nil {
		if errors.Is(err, pyenv.ErrNoTorch) {
			return nil, usage(err)
		}
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open the database (set db: in frontier.yaml or --db): %w", err)
	}
	mode, err := sandbox.ParseMode(cfg.Sandbox)
	if err != nil {
		st.Close()
		return nil, usage(err)
	}
	sb, err := sandbox.Wrap(ctx, runner.NewLocal(g.log), mode, sandbox.Options{Log: g.log})
	if err != nil {
		st.Close()
		return nil, usage(fmt.Errorf("sandbox: %w", err))
	}
	gpus, err := eval.NewNodeGPUPool(cfg.GPUs, len(py.GPUs))
	if err != nil {
		st.Close()
		return nil, usage(fmt.Errorf("gpus: %w", err))
	}
	ev := &eval.Evaluator{
		GPUs:    gpus,
		Runner:  sb,
		Sandbox: string(sb.Mode()),
		Hidden:  hiddenPaths(cfg),
		Visible: py.Paths,
		Store:   st,
		Python:  py.Path,
		Torch:   py.Torch,
		RunsDir: cfg.RunsDir,
		Data:    &eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data},
		// Protected regions are restored first; the track's static rules
		// then judge the program that will run.
		Checks: verify.Checks(),
		Log:    g.log,
	}
	return &environment{cfg: cfg, store: st, eval: ev}, nil
}

// hiddenPaths are what no program may read: frontier's home, database,
// data and runs (a run's own folder is bound back), and the user's home,
// where keys and other secrets live. The interpreter's folders stay
// readable where they lie inside them (a Python under the home).
func hiddenPaths(cfg *config.Config) []string {
	h := []string{cfg.Home, cfg.DataDir, cfg.RunsDir, cfg.DB, cfg.DB + "-wal", cfg.DB + "-shm"}
	for _, d := range cfg.Data {
		h = append(h, d)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		h = append(h, home)
	}
	return h
}
