package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/importer"
)

type trackImportOptions struct {
	from      string
	name      string
	out       string
	target    float64
	gpus      int
	valTokens int64
	dataDir   string
	asJSON    bool
}

// newTrackImportCmd is `frontier track import`.
func newTrackImportCmd(g *globals) *cobra.Command {
	var o trackImportOptions
	cmd := &cobra.Command{
		Use:   "import --from PATH",
		Short: "Make a track from a NanoGPT speedrun record (its train_gpt.py or its log)",
		Long: `Make a track folder from a NanoGPT speedrun record: its training script, or a record
log (the script is everything before the first line of 100 '='). The folder holds the
record's code with protected regions marked (the injected data fields, the validation
code, the timing code), a track.yaml under the legacy log contract, and a README.

The record then runs unmodified: frontier injects the data paths and val_tokens and reads
the step:N/N val_loss:... train_time:...ms lines it prints (verification level "log").

  frontier track import --from records/.../c1fd8a38-....txt --out tracks/bosalign
  frontier track check tracks/bosalign
  frontier eval --track tracks/bosalign`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrackImport(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "the record's training script or log file (required)")
	f.StringVar(&o.name, "name", "", "track name (default: from the file or its folder, like 2025-07-12_bosalign)")
	f.StringVar(&o.out, "out", "", "track folder to create, which must not exist or be empty (default: ./NAME)")
	f.Float64Var(&o.target, "target", importer.DefaultTarget, "target validation loss (2.92 for GPT-2 Medium records)")
	f.IntVar(&o.gpus, "gpus", importer.DefaultGPUs, "GPUs the record runs on: processes launched, one per GPU")
	f.Int64Var(&o.valTokens, "val-tokens", importer.DefaultValTokens, "validation tokens injected")
	f.StringVar(&o.dataDir, "data-dir", importer.DefaultDataDir, "data folder, relative to the data root (or absolute)")
	f.BoolVar(&o.asJSON, "json", false, "print the imported track as JSON")
	// --from is required; runTrackImport says so as a usage error (a
	// cobra required flag would fail as text only, before it).
	return cmd
}

func runTrackImport(ctx context.Context, g *globals, o trackImportOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.from == "" {
		return usage(errors.New("--from is required: the record's train_gpt.py or its log"))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	src, err := readInput(ctx, g, o.from, "the record", int64(cfg.MaxProgramSize))
	if err != nil {
		return err
	}
	im, err := importer.Import(importer.Options{
		From: o.from, Source: src, Name: o.name, Out: o.out, Target: o.target,
		GPUs: o.gpus, ValTokens: o.valTokens, DataDir: o.dataDir,
	})
	if err != nil {
		return usage(err)
	}
	s := im.Spec
	kind := "script"
	if im.FromLog {
		kind = "log"
	}
	out := trackImportJSON{Track: s.Name, Dir: im.Dir, From: o.from, Kind: kind, Contract: s.Contract, GPUs: s.Hardware.GPUs,
		NProcPerNode: s.Launcher.NProcPerNode, TargetValLoss: s.TargetValLoss, DataDir: s.Data.Dir, Protected: []protectedJSON{}, Notes: im.Notes,
		Next: []string{"frontier track check " + im.Dir, "frontier eval --track " + trackArg(im.Dir)}}
	for _, p := range im.Protected {
		out.Protected = append(out.Protected, protectedJSON{Name: p.Name, FirstLine: p.Span.Start, LastLine: p.Span.End, What: p.What})
	}
	if r := im.Record; r != nil {
		out.Record = &recordLogJSON{Step: r.Step, Steps: r.Total, ValLoss: r.ValLoss, TrainTimeMs: r.TrainTimeMs, StepAvgMs: r.StepAvgMs}
	}
	if o.asJSON {
		return writeJSON(g.stdout, out)
	}
	w := g.stdout
	what := "training script"
	if im.FromLog {
		what = "record log"
	}
	fmt.Fprintf(w, "imported the %s %s as track %s in %s\n", what, o.from, s.Name, im.Dir)
	data := s.Data.Dir
	if !filepath.IsAbs(data) {
		data = filepath.Join("<data root>", data)
	}
	plural := "s"
	if s.Hardware.GPUs == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "  contract log, %d GPU%s (torchrun --nproc_per_node=%d), target %.4g, data %s\n",
		s.Hardware.GPUs, plural, s.Launcher.NProcPerNode, s.TargetValLoss, data)
	fmt.Fprintf(w, "  %d protected regions:", len(im.Protected))
	for _, p := range im.Protected {
		fmt.Fprintf(w, " %s", p.Name)
	}
	fmt.Fprintln(w)
	if r := im.Record; r != nil {
		fmt.Fprintf(w, "  the record's own log ends at step %d/%d with val loss %.4f in %.1fs of train time\n", r.Step, r.Total, r.ValLoss, r.TrainTimeMs/1000)
	}
	for _, n := range im.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "next: %s, then %s\n", out.Next[0], out.Next[1])
	return nil
}

// trackImportJSON is track import --json: the track made, where, from
// what, and what to run next.
type trackImportJSON struct {
	Track string `json:"track"`
	Dir   string `json:"dir"`
	From  string `json:"from"`
	// Kind is what From was: "script" (a training script) or "log" (a
	// record log, the script taken from its head).
	Kind          string          `json:"kind"`
	Contract      string          `json:"contract"`
	GPUs          int             `json:"gpus"`
	NProcPerNode  int             `json:"nproc_per_node"`
	TargetValLoss float64         `json:"target_val_loss"`
	DataDir       string          `json:"data_dir"`
	Protected     []protectedJSON `json:"protected_regions"`
	// Record is the final validation line of the record's own log.
	Record *recordLogJSON `json:"record,omitempty"`
	Notes  []string       `json:"notes,omitempty"`
	Next   []string       `json:"next"`
}

// protectedJSON is a protected region of the imported program: its
// lines, markers excluded.
type protectedJSON struct {
	Name      string `json:"name"`
	FirstLine int    `json:"first_line"`
	LastLine  int    `json:"last_line"`
	What      string `json:"what,omitempty"`
}

// recordLogJSON is what a record's own log says it reached.
type recordLogJSON struct {
	Step        int     `json:"step"`
	Steps       int     `json:"steps"`
	ValLoss     float64 `json:"val_loss"`
	TrainTimeMs float64 `json:"train_time_ms"`
	StepAvgMs   float64 `json:"step_avg_ms,omitempty"`
}

// trackArg is how to name a track folder to --track: a path with a
// separator, so it is not taken for a track name.
func trackArg(dir string) string {
	if filepath.IsAbs(dir) || filepath.Dir(dir) != "." {
		return dir
	}
	return "." + string(filepath.Separator) + dir
}
