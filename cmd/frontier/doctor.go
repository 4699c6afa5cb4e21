package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/sandbox"
)

func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine: Python, PyTorch, threads, BLAS, GPUs, sandbox tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runDoctor(cmd.Context(), g.stdout, cfg)
		},
	}
}

// runDoctor prints what frontier found. It fails only when training
// programs cannot run at all (no Python with PyTorch).
func runDoctor(ctx context.Context, w io.Writer, cfg *config.Config) error {
	fmt.Fprintf(w, "frontier      %s/%s, %d CPUs, Go %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	cfgPath := cfg.Path
	if cfgPath == "" {
		cfgPath = "(none: defaults)"
	}
	fmt.Fprintf(w, "config        %s\n", cfgPath)
	fmt.Fprintf(w, "home          %s\n", cfg.Home)
	fmt.Fprintf(w, "database      %s\n", cfg.DB)

	info, perr := pyenv.Find(ctx, cfg.Python)
	if info != nil {
		fmt.Fprintf(w, "python        %s (Python %s)\n", info.Path, info.Python)
	}
	if perr != nil {
		fmt.Fprintf(w, "torch         MISSING: %v\n", perr)
	} else {
		fmt.Fprintf(w, "torch         %s (numpy %s)\n", info.Torch, nonEmpty(info.Numpy, "missing"))
		fmt.Fprintf(w, "threads       torch default %d; tracks set their own (tiny uses 2)\n", info.Threads)
		fmt.Fprintf(w, "blas          %s\n", nonEmpty(info.BLAS, "unknown"))
		switch {
		case len(info.GPUs) > 0:
			fmt.Fprintf(w, "cuda          %s, %d devices:\n", info.CUDA, len(info.GPUs))
			for i, gname := range info.GPUs {
				fmt.Fprintf(w, "                %d: %s\n", i, gname)
			}
		case info.CUDA != "":
			fmt.Fprintf(w, "cuda          built with CUDA %s, but no device is visible\n", info.CUDA)
		default:
			fmt.Fprintf(w, "cuda          none (CPU-only PyTorch): the tiny track works, GPU tracks do not\n")
		}
		fmt.Fprintf(w, "torchrun      %v\n", yesNo(info.Distributed, "available", "torch.distributed missing"))
	}
	lines := sandbox.Detect(ctx).Lines()
	fmt.Fprintf(w, "sandbox       %s\n", lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "              %s\n", l)
	}
	fmt.Fprintf(w, "              configured: sandbox: %s\n", nonEmpty(cfg.Sandbox, "auto"))
	if perr != nil {
		return fmt.Errorf("training programs cannot run: %w", perr)
	}
	return nil
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
