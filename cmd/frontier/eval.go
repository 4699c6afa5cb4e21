package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

type evalOptions struct {
	limit      time.Duration
	track      string
	fast       bool
	asJSON     bool
	keep       string
	seed       int
	quiet      bool
	program    string
	repeats    int
	baseline   string
	interleave bool
}

func newEvalCmd(g *globals) *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval [PROGRAM]",
		Short: "Evaluate a training program on a track and print the verdict",
		Long: `Evaluate a training program on a track: a fast check (a few steps, seconds),
then the full run, verified and timed by frontier's harness. Without PROGRAM the
track's reference program is evaluated; "-" reads the program from stdin.

Exit codes: 0 acceptable (or fast_ok with --fast), 3 loss_too_high, 4 error,
5 timeout, 6 invalid, 7 no_result, 2 bad input, 1 any other failure
(docs/cli.md).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.program = args[0]
			}
			return runEval(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.track, "track", "tiny", "track to evaluate on (a name or a track folder)")
	f.BoolVar(&o.fast, "fast", false, "run only the fast check")
	limitFlag(cmd, &o.limit)
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON (schema frontier.eval/v1, docs/eval-json.md)")
	f.StringVar(&o.keep, "keep", "", "keep the run folder (program, config, telemetry, logs) in `DIR`")
	f.IntVar(&o.seed, "seed", 0, "seed injected into the program")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	f.IntVar(&o.repeats, "repeats", 1, "run the full evaluation `N` times with seeds seed..seed+N-1; the verdict then needs a one-sided t-test (mean val loss under the target at the track's alpha)")
	f.StringVar(&o.baseline, "baseline", "reference", "with --repeats, compare train times (Welch's t-test) with the stored runs of this program: reference, a program sha256, or none; with --interleave also a file")
	f.BoolVar(&o.interleave, "interleave", false, "with --repeats, run the baseline too, in alternation with the program (ABBA order, the same seeds), and compare with those runs only: a fair comparison on a machine whose speed drifts")
	return cmd
}

func runEval(ctx context.Context, g *globals, o evalOptions) error {
	// Flags first: a mistake should not cost a Python probe.
	if o.interleave && (o.repeats < 2 || o.fast || o.baseline == "none" || o.baseline == "") {
		return usage(errors.New("--interleave needs --repeats 2 or more and a --baseline, and no --fast"))
	}
	if o.repeats < 1 {
		return usage(fmt.Errorf("--repeats %d: run the program at least once", o.repeats))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	spec, err := lookupTrack(cfg, o.track)
	if err != nil {
		return err
	}
	// The program, and a baseline file, are read and checked before the
	// environment opens: a wrong file should not cost a Python probe.
	var src []byte
	var name string
	if o.program == "" {
		src, err = spec.ReferenceSource()
		if err != nil {
			return usage(fmt.Errorf("read program: %w", err))
		}
		name = spec.Name + "/" + spec.Reference
	} else if src, name, err = readProgram(ctx, g, cfg, o.program, "program"); err != nil {
		return err
	}
	var baselineFile []byte
	if o.interleave {
		if baselineFile, err = readBaselineFile(ctx, g, cfg, o.baseline); err != nil {
			return err
		}
	}
	if err := checkLimit(o.limit); err != nil {
		return err
	}
	env, err := openEnvironment(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	env.eval.FullLimit = o.limit
	if !o.quiet {
		env.eval.Progress = func(line string) { fmt.Fprintln(g.stderr, line) }
	}
	req := eval.Request{Track: spec, Program: src, Name: name, Seed: o.seed, FastOnly: o.fast, Keep: o.keep}
	var res *eval.Result
	if o.repeats > 1 && !o.fast {
		rr := eval.RepeatRequest{Request: req, N: o.repeats}
		switch {
		case o.interleave && baselineFile != nil:
			rr.Baseline = baselineFile
		case o.interleave:
			rr.Baseline, err = baselineSource(ctx, env.store, spec, o.baseline)
			if err != nil {
				return usage(err)
			}
		case o.baseline == "none" || o.baseline == "":
		case o.baseline == "reference":
			ref, err := spec.ReferenceSource()
			if err != nil {
				return err
			}
			rr.BaselineHash = store.Hash(ref)
		default:
			rr.BaselineHash = o.baseline
		}
		res, err = env.eval.EvaluateRepeats(ctx, rr)
	} else {
		res, err = env.eval.Evaluate(ctx, req)
	}
	if err != nil {
		if errors.Is(err, eval.ErrBadProgram) {
			return usage(err)
		}
		return err
	}
	if err := printResult(g.stdout, res, o.asJSON); err != nil {
		return err
	}
	return verdictResult(res.Verdict)
}

// printResult writes res as the text report, or as JSON.
func printResult(w io.Writer, res *eval.Result, asJSON bool) error {
	if !asJSON {
		return eval.WriteReport(w, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// readBaselineFile reads the baseline of an interleaved series when it
// names a file (bounded and checked as a program is); nil when it names
// the reference or a stored program.
func readBaselineFile(ctx context.Context, g *globals, cfg *config.Config, baseline string) ([]byte, error) {
	switch _, err := os.Lstat(baseline); {
	case baseline == "-":
		return nil, usage(errors.New("--baseline -: the baseline is a file, reference or a stored program's sha256, not stdin"))
	case baseline == "reference", errors.Is(err, fs.ErrNotExist):
		return nil, nil // looked up once the store is open
	}
	src, _, err := readProgram(ctx, g, cfg, baseline, "baseline")
	return src, err
}

// baselineSource is the program an interleaved series runs as its
// baseline when it is not a file: the track's reference, or a stored
// program by its sha256.
func baselineSource(ctx context.Context, st store.Store, spec *track.Spec, baseline string) ([]byte, error) {
	if baseline == "reference" {
		return spec.ReferenceSource()
	}
	src, err := st.Program(ctx, baseline)
	if err != nil {
		return nil, fmt.Errorf("baseline %q is neither a file nor a stored program's sha256: %w", baseline, err)
	}
	return src, nil
}
