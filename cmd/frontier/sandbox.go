package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/slurm"
)

// newSandboxCmd is the hidden helper the sandbox re-executes this binary
// as: it applies a policy to its own process (Landlock, signal settings)
// and then executes the program in its place. Its command line is written
// by package sandbox, not by people.
func newSandboxCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    sandbox.HelperCommand + " --policy JSON -- PROGRAM [ARGS...]",
		Short:  "Confine this process with a sandbox policy, then execute PROGRAM (used internally)",
		Hidden: true,
		// The program's own arguments follow "--" and must reach it
		// untouched, so cobra parses nothing.
		DisableFlagParsing: true,
		// Helper has said why on stderr; cobra's usage text would only
		// bury that in the program's output.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Helper returns only when it could not execute the program,
			// having said why on stderr.
			return exitStatus(sandbox.Helper(args, g.stderr))
		},
	}
}

// newPhaseExecCmd is the node side of a phase that runs as a Slurm job:
// it runs the phase in DIR with this node's executor (its judge, sandbox,
// GPUs and Python) and writes the report the submitting frontier reads.
// Its command line is written by package slurm, not by people.
func newPhaseExecCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "phase-exec DIR",
		Short:  "Run one evaluation phase on this node (used internally by the Slurm executor)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, err := nodeExecutor(cmd.Context(), g)
			if err != nil {
				return err
			}
			return slurm.ServePhase(cmd.Context(), args[0], node)
		},
	}
}

// nodeExecutor is this node's executor, as the configuration describes
// it: its Python, sandbox and GPUs.
func nodeExecutor(ctx context.Context, g *globals) (eval.Executor, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	m, err := localNode(ctx, g, cfg)
	if err != nil {
		return nil, err
	}
	return m.exec, nil
}

// newPhaseWorkerCmd is the node side of a Slurm worker job: it runs the
// phases of one class's queue one after another on this node (see
// slurm.ServeWorker). Its command line is written by package slurm.
func newPhaseWorkerCmd(g *globals) *cobra.Command {
	var opt slurm.WorkerOptions
	cmd := &cobra.Command{
		Use:    "phase-worker DIR",
		Short:  "Run evaluation phases from a queue on this node (used internally by the Slurm executor)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, err := nodeExecutor(cmd.Context(), g)
			if err != nil {
				return err
			}
			return slurm.ServeWorker(cmd.Context(), args[0], node, opt, g.log)
		},
	}
	cmd.Flags().DurationVar(&opt.Limit, "limit", 0, "the worker job's time limit")
	cmd.Flags().DurationVar(&opt.Idle, "idle", 0, "how long to wait for a phase before ending")
	return cmd
}
