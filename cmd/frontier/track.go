package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// registry returns the built-in tracks plus the user's track folders.
func registry(cfg *config.Config) *track.Registry {
	return track.NewRegistry(tracks.FS, cfg.TracksDirs...)
}

func newTrackCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "track",
		Short: "List, show and check tracks",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in and user tracks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runTrackList(g.stdout, registry(cfg))
		},
	})
	var showProgram, showYAML bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a track's specification",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			local := &eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data}
			return runTrackShow(g.stdout, registry(cfg), args[0], showProgram, showYAML, local.Dir)
		},
	}
	show.Flags().BoolVar(&showProgram, "program", false, "print the reference program")
	show.Flags().BoolVar(&showYAML, "yaml", false, "print the specification as YAML, defaults filled in")
	cmd.AddCommand(show)
	cmd.AddCommand(newTrackImportCmd(g))
	cmd.AddCommand(&cobra.Command{
		Use:   "check PATH",
		Short: "Validate a track folder (or its track.yaml)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrackCheck(cmd.Context(), g.stdout, args[0])
		},
	})
	return cmd
}

func runTrackList(w io.Writer, reg *track.Registry) error {
	specs, err := reg.List()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDEVICE\tTARGET\tFLOOR\tLOCATION\tDESCRIPTION")
	for _, s := range specs {
		dev := s.Hardware.Device
		if s.Hardware.GPUs > 0 {
			dev = fmt.Sprintf("%dx %s", s.Hardware.GPUs, dev)
		}
		floor := "-"
		if s.Data.LossFloor > 0 {
			floor = fmt.Sprintf("%.4f", s.Data.LossFloor)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%s\t%s\t%s\n", s.Name, dev, s.TargetValLoss, floor, s.Location(), firstLine(s.Description))
	}
	tw.Flush()
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("some tracks could not be loaded:\n%w", err))
	}
	return nil
}

// runTrackShow prints a track; dataDir says where its data lives, for the
// figures of a corpus built on this installation.
func runTrackShow(w io.Writer, reg *track.Registry, name string, program, asYAML bool, dataDir func(*track.Spec) string) error {
	s, err := reg.Get(name)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if program {
		src, err := s.ReferenceSource()
		if err != nil {
			return err
		}
		_, err = w.Write(src)
		return err
	}
	if asYAML {
		b, err := yaml.Marshal(s)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	d := s.Data
	fmt.Fprintf(w, "%s (%s)\n%s\n\n", s.Name, s.Location(), strings.TrimSpace(s.Description))
	fmt.Fprintf(w, "target val loss  %.4g", s.TargetValLoss)
	var tiny *data.TinyManifest
	if d.Builtin == "tiny" {
		if m, err := data.ReadManifest(dataDir(s)); err == nil && m.Tiny != nil {
			tiny = m.Tiny
		}
	}
	switch {
	case tiny != nil:
		fmt.Fprintf(w, "  (loss floor %.4f on this installation's corpus: the best any program can do on its validation slice", tiny.Floor.Floor)
		if tiny.Floor.ValTokens != d.ValTokens || tiny.Floor.SeqLen != d.ValSeqLen {
			fmt.Fprintf(w, " of %d tokens in windows of %d", tiny.Floor.ValTokens, tiny.Floor.SeqLen)
		}
		if ng := tiny.NGram; ng != nil {
			fmt.Fprintf(w, "; n-gram baseline %.4f", ng.Best.Loss)
		}
		fmt.Fprint(w, ")")
	case d.Builtin != "":
		fmt.Fprintf(w, "  (loss floor: computed when the corpus is built, by the first evaluation or `frontier data build %s`)", d.Builtin)
	case d.LossFloor > 0:
		fmt.Fprintf(w, "  (loss floor %.4f: the best any program can do on this validation slice)", d.LossFloor)
	}
	fmt.Fprintf(w, "\nreference        %s (contract %s)\n", s.Reference, s.Contract)
	launch := "python"
	if s.Launcher.Kind == "torchrun" {
		launch = fmt.Sprintf("torchrun --standalone --nproc_per_node=%d", s.Launcher.NProcPerNode)
	}
	fmt.Fprintf(w, "launcher         %s\n", launch)
	fmt.Fprintf(w, "hardware         %s", s.Hardware.Device)
	if s.Hardware.GPUs > 0 {
		fmt.Fprintf(w, ", %d GPUs", s.Hardware.GPUs)
	}
	if s.Hardware.Threads > 0 {
		fmt.Fprintf(w, ", %d threads", s.Hardware.Threads)
	}
	fmt.Fprintf(w, "\ndata             train %s, val %s (vocab %d, BOS %d)", d.Train, d.Val, d.VocabSize, d.BOSID)
	if d.Builtin != "" {
		fmt.Fprintf(w, ", generated by frontier (%s) in %s", d.Builtin, dataDir(s))
		if tiny != nil {
			fmt.Fprintf(w, " from secret %s", tiny.SecretFingerprint)
		}
	}
	fmt.Fprintf(w, "\nvalidation       %d tokens as %d windows of %d, %d windows per batch\n", d.ValTokens, d.ValTokens/int64(d.ValSeqLen), d.ValSeqLen, d.ValBatchSeqs)
	fmt.Fprintf(w, "limits           fast check %s (%d steps), full run %s, compile budget %s\n",
		s.Limits.FastCheck.D(), s.Limits.FastSteps, s.Limits.FullRun.D(), s.Limits.CompileBudget.D())
	fmt.Fprintf(w, "telemetry        every %d steps, profiled steps %v, top %d ops\n", s.Telemetry.LogEvery, s.Telemetry.ProfileSteps, s.Telemetry.TopK)
	fmt.Fprintf(w, "verification     repeats %d, alpha %g, causality probe %v, protected regions %v\n",
		s.Verification.Repeats, s.Verification.Alpha, s.Verification.Probe.Enabled, s.Verification.ProtectedRegions)
	initial := "not checked"
	if m := eval.MinInitialLoss(s); m > 0 {
		initial = fmt.Sprintf("scores at least %.4f (an untrained model: ln %d = %.4f)", m, d.VocabSize, math.Log(float64(d.VocabSize)))
	}
	noise := fmt.Sprintf("at most %g of the logit scale", cmp.Or(s.Verification.MaxNoise, harness.DefaultMaxNoise))
	if s.Verification.AllowNondeterministic {
		noise = "any (allow_nondeterministic)"
	}
	fmt.Fprintf(w, "                 the model that starts the clock %s; logit noise %s\n", initial, noise)
	for _, n := range s.Notes() {
		fmt.Fprintf(w, "note             %s\n", n)
	}
	if len(d.Shards) > 0 && d.Builtin == "" {
		fmt.Fprintf(w, "\npinned shards\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, sh := range d.Shards {
			fmt.Fprintf(tw, "  %s\t%d tokens\t%s\n", sh.File, sh.Tokens, sh.SHA256)
		}
		tw.Flush()
	}
	return nil
}

func runTrackCheck(ctx context.Context, w io.Writer, path string) error {
	dir := path
	if strings.HasSuffix(path, ".yaml") {
		dir = strings.TrimSuffix(path, track.SpecFile)
		if dir == "" {
			dir = "."
		}
	}
	s, err := track.LoadDir(dir)
	if err != nil {
		return withCode(exitUsage, err)
	}
	fmt.Fprintf(w, "track %s in %s is valid (target %.4g, reference %s)\n", s.Name, dir, s.TargetValLoss, s.Reference)
	for _, n := range s.Notes() {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
