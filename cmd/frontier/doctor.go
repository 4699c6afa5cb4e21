package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/slurm"
)

func newDoctorCmd(g *globals) *cobra.Command {
	var asJSON, slurmProbe bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine: Python, PyTorch, threads, BLAS, GPUs, sandbox tools, Slurm",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runDoctor(cmd.Context(), g, cfg, asJSON, slurmProbe)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.Flags().BoolVar(&slurmProbe, "slurm-probe", false, "submit a tiny Slurm job to see whether runs_dir is visible from a node (waits up to 2 minutes for it to start)")
	return cmd
}

// doctorReport is what doctor found, as --json prints it.
type doctorReport struct {
	Frontier versionInfo `json:"frontier"`
	CPUs     int         `json:"cpus"`
	// Config is the file read; "" when there is none (the defaults).
	Config   string      `json:"config"`
	Home     string      `json:"home"`
	Database string      `json:"database"`
	Python   *pyenv.Info `json:"python,omitempty"`
	// PythonError says why training programs cannot run here; "" when
	// they can.
	PythonError string        `json:"python_error,omitempty"`
	Sandbox     sandboxReport `json:"sandbox"`
	Slurm       slurm.Check   `json:"slurm"`
	// Warnings are findings that need attention but stop nothing, like
	// state that other users can read.
	Warnings []string `json:"warnings,omitempty"`
	// OK says whether training programs can run here.
	OK bool `json:"ok"`
}

type sandboxReport struct {
	Configured string   `json:"configured"`
	Auto       string   `json:"auto"` // what auto resolves to; "" when nothing confines here
	Findings   []string `json:"findings"`
}

// runDoctor prints what frontier found. It fails only when training
// programs cannot run at all (no Python with PyTorch). Probing Python
// takes seconds: it says so first, on stderr.
func runDoctor(ctx context.Context, g *globals, cfg *config.Config, asJSON, slurmProbe bool) error {
	rep := doctorReport{
		Frontier: buildVersion(), CPUs: runtime.NumCPU(), Config: cfg.Path, Home: cfg.Home, Database: cfg.DBName(),
		Sandbox: sandboxReport{Configured: nonEmpty(cfg.Sandbox, "auto")},
	}
	w := g.stdout
	if !asJSON {
		cfgPath := nonEmpty(cfg.Path, "(none: defaults)")
		fmt.Fprintf(w, "frontier      %s, %s, %d CPUs, %s\n", rep.Frontier, rep.Frontier.Platform, rep.CPUs, rep.Frontier.Go)
		fmt.Fprintf(w, "config        %s\n", cfgPath)
		fmt.Fprintf(w, "home          %s\n", cfg.Home)
		fmt.Fprintf(w, "database      %s\n", cfg.DBName())
	}
	rep.Warnings = privacyWarnings(cfg)
	info, perr := pyenv.FindNotify(ctx, cfg.Python, func(python string) {
		g.log.Info("checking Python (importing torch takes a few seconds, more on a busy machine)", "python", python)
	})
	rep.Python = info
	if perr != nil {
		rep.PythonError = perr.Error()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	caps := sandbox.Detect(ctx)
	rep.Sandbox.Auto = string(caps.Auto())
	rep.Sandbox.Findings = caps.Lines()
	probeDir := ""
	if slurmProbe {
		probeDir = cfg.RunsDir
		if err := cfg.MakeDirs(); err != nil {
			return err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var base slurm.Spec
	cfg.Slurm.Apply(&base)
	sc := cfg.Slurm.Client()
	sc.CommandTimeout = 30 * time.Second // a login node whose slurmctld is away must not hold doctor up for long
	rep.Slurm = sc.Check(pctx, probeDir, base)
	rep.OK = perr == nil
	if asJSON {
		if err := writeJSON(w, rep); err != nil {
			return err
		}
	} else {
		printDoctor(w, rep, info, perr)
	}
	if perr != nil {
		return fmt.Errorf("training programs cannot run: %w", perr)
	}
	return nil
}

func printDoctor(w io.Writer, rep doctorReport, info *pyenv.Info, perr error) {
	if info != nil {
		fmt.Fprintf(w, "python        %s (Python %s)\n", info.Path, info.Python)
	}
	if perr != nil {
		fmt.Fprintf(w, "torch         MISSING: %v\n", perr)
	} else {
		fmt.Fprintf(w, "torch         %s (numpy %s)\n", info.Torch, nonEmpty(info.Numpy, "missing"))
		fmt.Fprintf(w, "threads       torch default %d; tracks set their own (tiny uses 2)\n", info.Threads)
		fmt.Fprintf(w, "blas          %s\n", nonEmpty(info.BLAS, "unknown"))
		if info.BLASCore != "" {
			fmt.Fprintf(w, "              programs run with %s's kernels\n", info.BLASName())
		}
		if info.BLASNote != "" {
			fmt.Fprintf(w, "              %s\n", info.BLASNote)
		}
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
	lines := rep.Sandbox.Findings
	fmt.Fprintf(w, "sandbox       %s\n", lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "              %s\n", l)
	}
	fmt.Fprintf(w, "              configured: sandbox: %s\n", rep.Sandbox.Configured)
	for i, l := range rep.Slurm.Lines() {
		label := ""
		if i == 0 {
			label = "slurm"
		}
		fmt.Fprintf(w, "%-14s%s\n", label, l)
	}
	for i, warn := range rep.Warnings {
		label := ""
		if i == 0 {
			label = "warning"
		}
		fmt.Fprintf(w, "%-14s%s\n", label, warn)
	}
}

// privacyWarnings names the state that other users of this machine can
// read: the database and the folders hold every program, prompt and
// answer. frontier creates them private; older ones may not be.
func privacyWarnings(cfg *config.Config) []string {
	var out []string
	for _, p := range []string{cfg.Home, cfg.DBFile(), cfg.RunsDir} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || err != nil {
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			fix := "chmod go-rwx " + p
			if fi.IsDir() {
				fix = "chmod -R go-rwx " + p
			}
			out = append(out, fmt.Sprintf("%s is readable by other users (%v): %s", p, fi.Mode().Perm(), fix))
		}
	}
	return out
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
