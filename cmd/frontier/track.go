package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/internal/yamlfile"
	"github.com/frontier-bench/frontier/tracks"
)

// registry returns the built-in tracks plus the user's track folders.
func registry(cfg *config.Config) *track.Registry {
	return track.NewRegistry(tracks.FS, cfg.TracksDirs...)
}

// lookupTrack finds the track a command line names (see
// catalog.Registry.Find); an error is the user's to fix.
func lookupTrack(cfg *config.Config, arg string) (*track.Spec, error) {
	s, err := registry(cfg).Find(arg)
	if err != nil {
		return nil, usage(err)
	}
	return s, nil
}

func newTrackCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "track",
		Short: "List, show and check tracks",
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in and user tracks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			local := &eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data}
			return runTrackList(g.stdout, registry(cfg), local.Dir, listJSON)
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the list as JSON")
	cmd.AddCommand(list)
	var showProgram, showYAML, showJSON bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a track's specification",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if showProgram && (showYAML || showJSON) || showYAML && showJSON {
				return usage(errors.New("use one of --program, --yaml and --json"))
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			local := &eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data}
			return runTrackShow(g.stdout, registry(cfg), args[0], trackShowOptions{program: showProgram, yaml: showYAML, json: showJSON, dataDir: local.Dir})
		},
	}
	show.Flags().BoolVar(&showProgram, "program", false, "print the reference program")
	show.Flags().BoolVar(&showYAML, "yaml", false, "print the specification as YAML, every default filled in with the value that applies")
	show.Flags().BoolVar(&showJSON, "json", false, "print the specification as JSON, every default filled in")
	cmd.AddCommand(show)
	cmd.AddCommand(newTrackImportCmd(g))
	var checkJSON bool
	check := &cobra.Command{
		Use:   "check TRACK",
		Short: "Validate a track: a folder, its track.yaml, or a track's name",
		Long: `Validate a track: every error of its track.yaml with file:line:col, and its
reference program (a regular file inside the folder). TRACK is a track folder,
its track.yaml, or the name of a built-in or configured track.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runTrackCheck(cmd.Context(), g.stdout, registry(cfg), args[0], checkJSON)
		},
	}
	check.Flags().BoolVar(&checkJSON, "json", false, "print the outcome as JSON, each error located")
	cmd.AddCommand(check)
	return cmd
}

// trackInfo is one track of track list --json.
type trackInfo struct {
	Name          string  `json:"name"`
	Description   string  `json:"description"`
	Device        string  `json:"device"`
	GPUs          int     `json:"gpus"`
	TargetValLoss float64 `json:"target_val_loss"`
	// LossFloor is the spec's, or the built corpus's; left out while
	// unknown (a generated corpus not built yet, FineWeb).
	LossFloor float64 `json:"loss_floor,omitempty"`
	Builtin   bool    `json:"builtin"`
	Location  string  `json:"location"`
}

// trackList is track list --json: the tracks that load, and an error for
// each that does not.
type trackList struct {
	Tracks []trackInfo `json:"tracks"`
	Errors []string    `json:"errors"`
}

// lossFloor is a track's loss floor: the spec's, or for a corpus frontier
// generates, the one computed when this installation built it (0 before
// it is built, or when nobody knows it).
func lossFloor(s *track.Spec, dataDir func(*track.Spec) string) float64 {
	if s.Data.Builtin == "" {
		return s.Data.LossFloor
	}
	if m, err := data.ReadManifest(dataDir(s)); err == nil && m.Tiny != nil {
		return m.Tiny.Floor.Floor
	}
	return 0
}

// runTrackList lists the tracks; dataDir says where a track's data lives,
// for the loss floor of a corpus built on this installation.
func runTrackList(w io.Writer, reg *track.Registry, dataDir func(*track.Spec) string, asJSON bool) error {
	specs, err := reg.List()
	if asJSON {
		out := trackList{Tracks: []trackInfo{}, Errors: errorLines(err)}
		for _, s := range specs {
			out.Tracks = append(out.Tracks, trackInfo{Name: s.Name, Description: firstLine(s.Description), Device: s.Hardware.Device,
				GPUs: s.Hardware.GPUs, TargetValLoss: s.TargetValLoss, LossFloor: lossFloor(s, dataDir), Builtin: s.Builtin, Location: s.Location()})
		}
		if jerr := writeJSON(w, out); jerr != nil {
			return jerr
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tDEVICE\tTARGET\tFLOOR\tLOCATION\tDESCRIPTION")
		for _, s := range specs {
			dev := s.Hardware.Device
			if s.Hardware.GPUs > 0 {
				dev = fmt.Sprintf("%dx %s", s.Hardware.GPUs, dev)
			}
			floor := "-"
			switch f := lossFloor(s, dataDir); {
			case f > 0:
				floor = fmt.Sprintf("%.4f", f)
			case s.Data.Builtin != "":
				floor = "on build" // computed with the corpus, by the first evaluation or data build
			}
			fmt.Fprintf(tw, "%s\t%s\t%.4g\t%s\t%s\t%s\n", s.Name, dev, s.TargetValLoss, floor, printable(s.Location()), printable(firstLine(s.Description)))
		}
		tw.Flush()
	}
	if err != nil {
		return usage(fmt.Errorf("some tracks could not be loaded:\n%w", err))
	}
	return nil
}

// errorLines splits a joined error into its lines; never nil.
func errorLines(err error) []string {
	out := []string{}
	if err == nil {
		return out
	}
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// trackShowOptions are track show's flags; dataDir says where a track's
// data lives, for the figures of a corpus built on this installation.
type trackShowOptions struct {
	program, yaml, json bool
	dataDir             func(*track.Spec) string
}

func runTrackShow(w io.Writer, reg *track.Registry, name string, o trackShowOptions) error {
	s, err := reg.Find(name)
	if err != nil {
		return usage(err)
	}
	switch {
	case o.program:
		src, err := s.ReferenceSource()
		if err != nil {
			return err
		}
		_, err = w.Write(src)
		return err
	case o.yaml:
		b, err := yaml.Marshal(effectiveSpec(s))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case o.json:
		// Through YAML, so that the keys are the spec's own (snake_case)
		// and durations and sizes read as they are written.
		b, err := yaml.Marshal(effectiveSpec(s))
		if err != nil {
			return err
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return err
		}
		return writeJSON(w, v)
	}
	d := s.Data
	fmt.Fprintf(w, "%s (%s)\n%s\n\n", s.Name, s.Location(), strings.TrimSpace(s.Description))
	fmt.Fprintf(w, "target val loss  %.4g", s.TargetValLoss)
	var tiny *data.TinyManifest
	if d.Builtin == "tiny" {
		if m, err := data.ReadManifest(o.dataDir(s)); err == nil && m.Tiny != nil {
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
	if s.Hardware.Clock == track.ClockCPU {
		fmt.Fprint(w, "; timed by CPU time (the program's processes over the train window), wall time beside it")
	}
	fmt.Fprintf(w, "\ndata             train %s, val %s (vocab %d, BOS %d)", d.Train, d.Val, d.VocabSize, d.BOSID)
	if d.Builtin != "" {
		fmt.Fprintf(w, ", generated by frontier (%s) in %s", d.Builtin, o.dataDir(s))
		if tiny != nil {
			fmt.Fprintf(w, " from secret %s", tiny.SecretFingerprint)
		}
	}
	fmt.Fprintf(w, "\nvalidation       %d tokens as %d windows of %d, %d windows per batch\n", d.ValTokens, d.ValTokens/int64(d.ValSeqLen), d.ValSeqLen, d.ValBatchSeqs)
	fmt.Fprintf(w, "limits           fast check %s (%d steps), full run %s (up to %s when this machine is slower), compile budget %s\n",
		s.Limits.FastCheck.D(), s.Limits.FastSteps, s.Limits.FullRun.D(), s.Limits.FullRunMax.D(), s.Limits.CompileBudget.D())
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

// effectiveSpec is s with the values that apply where the spec leaves a
// zero to mean "the default": the static rules its contract runs, the
// logit noise the judge allows, the lowest initial loss, the fast check's
// validation tokens. Parse filled in the other defaults.
func effectiveSpec(s *track.Spec) *track.Spec {
	e := *s
	e.Verification.StaticRules = s.StaticRules()
	if len(e.Verification.StaticRules) == 0 {
		e.Verification.StaticRules = []string{"none"}
	}
	if e.Verification.MaxNoise == 0 {
		e.Verification.MaxNoise = harness.DefaultMaxNoise
	}
	if e.Verification.MinInitialLoss == 0 {
		e.Verification.MinInitialLoss = eval.MinInitialLoss(s)
	}
	if e.Limits.FastValTokens == 0 {
		e.Limits.FastValTokens = min(int64(e.Data.ValSeqLen*e.Data.ValBatchSeqs), e.Data.ValTokens)
	}
	return &e
}

// trackCheck is track check --json.
type trackCheck struct {
	Valid         bool         `json:"valid"`
	Name          string       `json:"name,omitempty"`
	Location      string       `json:"location,omitempty"`
	TargetValLoss float64      `json:"target_val_loss,omitempty"`
	Reference     string       `json:"reference,omitempty"`
	Errors        []checkError `json:"errors"`
}

// checkError is one problem of a track, located where it can be.
type checkError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

// runTrackCheck validates a track: a folder, its track.yaml, or the name
// of a track the registry knows (see catalog.Registry.Find).
func runTrackCheck(ctx context.Context, w io.Writer, reg *track.Registry, arg string, asJSON bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := reg.Find(arg)
	if asJSON {
		out := trackCheck{Valid: err == nil, Errors: checkErrors(err)}
		if s != nil {
			out.Name, out.Location, out.TargetValLoss, out.Reference = s.Name, s.Location(), s.TargetValLoss, s.Reference
		}
		if jerr := writeJSON(w, out); jerr != nil {
			return jerr
		}
		return usage(err)
	}
	if err != nil {
		return usage(err)
	}
	fmt.Fprintf(w, "track %s in %s is valid (target %.4g, reference %s)\n", s.Name, s.Location(), s.TargetValLoss, s.Reference)
	for _, n := range s.Notes() {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// checkErrors lists the problems in err, each located where it is a
// located YAML error; never nil.
func checkErrors(err error) []checkError {
	out := []checkError{}
	var walk func(err error)
	walk = func(err error) {
		var ye *yamlfile.Error
		switch {
		case err == nil:
		case errors.As(err, &ye) && ye.Error() == err.Error():
			out = append(out, checkError{File: ye.File, Line: ye.Line, Column: ye.Column, Key: ye.Path, Message: ye.Msg})
		default:
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
				return
			}
			out = append(out, checkError{Message: err.Error()})
		}
	}
	walk(err)
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// printable escapes what would break a table or a terminal (control
// characters, escape sequences) in text that comes from a file.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
