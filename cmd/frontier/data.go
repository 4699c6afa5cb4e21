package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/track"
)

func newDataCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Build and verify track data",
	}
	cmd.AddCommand(newDataBuildCmd(g), newDataVerifyCmd(g))
	return cmd
}

// dataBuildOptions are the flags of `frontier data build`.
type dataBuildOptions struct {
	out       string
	valTokens int64
	valSeqLen int
	yaml      bool
}

func newDataBuildCmd(g *globals) *cobra.Command {
	var o dataBuildOptions
	cmd := &cobra.Command{
		Use:   "build tiny",
		Short: "Write the tiny synthetic corpus and print its loss floor",
		Long: `Write the tiny track's synthetic corpus (one validation shard and eight
training shards in the speedrun's shard format) and print each shard's token
count and SHA-256, the loss floor of the validation slice (the Bayes-optimal
loss of a model that sees only its evaluation window), the full-context
entropy, and unigram and bigram references. The bytes are identical on every
machine; files that already hold them are left alone.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"tiny"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "tiny" {
				return withCode(exitUsage, fmt.Errorf("data build %q: frontier generates only the synthetic corpus \"tiny\"; other tracks' data is downloaded or prepared", args[0]))
			}
			if o.out == "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				o.out = filepath.Join(cfg.DataDir, "tiny")
			}
			return runDataBuildTiny(cmd.Context(), g.stdout, g.log, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "folder to write the shards to (default: <data_dir>/tiny)")
	f.Int64Var(&o.valTokens, "val-tokens", data.DefaultTinyValTokens, "validation tokens the floor is computed on (the track's val_tokens)")
	f.IntVar(&o.valSeqLen, "val-seq-len", data.DefaultTinyValSeqLen, "evaluation window length (the track's val_seq_len)")
	f.BoolVar(&o.yaml, "yaml", false, "also print the data section for a track.yaml, with the shard pins and the floor")
	return cmd
}

func runDataBuildTiny(ctx context.Context, w io.Writer, log *slog.Logger, o dataBuildOptions) error {
	p := data.DefaultTinyParams()
	if o.valSeqLen < 1 || o.valTokens < int64(o.valSeqLen) || o.valTokens%int64(o.valSeqLen) != 0 {
		return withCode(exitUsage, fmt.Errorf("--val-tokens %d must be a positive multiple of --val-seq-len %d", o.valTokens, o.valSeqLen))
	}
	if o.valTokens >= int64(p.ValShardTokens) {
		return withCode(exitUsage, fmt.Errorf("--val-tokens %d: the val shard holds %d tokens, and one more than val_tokens is needed", o.valTokens, p.ValShardTokens))
	}
	shards, fl, err := data.BuildTiny(ctx, o.out, data.TinyOptions{ValTokens: o.valTokens, ValSeqLen: o.valSeqLen, Log: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "tiny corpus in %s\n\n", o.out)
	printShards(w, shards)
	fmt.Fprintf(w, "\nloss on the first %d val tokens in windows of %d, nats per token:\n", fl.ValTokens, fl.SeqLen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  loss floor (Bayes-optimal, window context)\t%.4f\n", fl.Floor)
	fmt.Fprintf(tw, "  full-context entropy (whole slice in view)\t%.4f\n", fl.FullContext)
	fmt.Fprintf(tw, "  bigram reference (previous token only)\t%.4f\n", fl.Bigram)
	fmt.Fprintf(tw, "  unigram reference (no context)\t%.4f\n", fl.Unigram)
	fmt.Fprintf(tw, "  uniform over %d tokens\t%.4f\n", p.Vocab, math.Log(float64(p.Vocab)))
	tw.Flush()
	fmt.Fprintln(w, "\nby class of the target token:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\tshare\tfloor\tfull\tbigram\tunigram\t")
	for _, c := range fl.Classes {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.4f\t%.4f\t%.4f\t%.4f\t\n", c.Class, 100*float64(c.Targets)/float64(fl.ValTokens), c.Floor, c.FullContext, c.Bigram, c.Unigram)
	}
	tw.Flush()
	if o.yaml {
		fmt.Fprintln(w, "\n# data section for the track spec:")
		fmt.Fprintf(w, "data:\n  builtin: tiny\n  train: tiny_train_*.bin\n  val: %s\n  vocab_size: %d\n  bos_id: %d\n  val_tokens: %d\n  val_seq_len: %d\n  loss_floor: %.6f\n  shards:\n",
			data.TinyValFile, p.Vocab, p.Vocab-1, fl.ValTokens, fl.SeqLen, fl.Floor)
		for _, s := range shards {
			fmt.Fprintf(w, "    - {file: %s, tokens: %d, sha256: %q}\n", s.File, s.Tokens, s.SHA256)
		}
	}
	return nil
}

func printShards(w io.Writer, shards []track.Shard) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tTOKENS\tSHA256")
	for _, s := range shards {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", s.File, s.Tokens, s.SHA256)
	}
	tw.Flush()
}

// dataVerifyOptions are the flags of `frontier data verify`.
type dataVerifyOptions struct {
	track   string
	pattern string
	vocab   int
}

func newDataVerifyCmd(g *globals) *cobra.Command {
	var o dataVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check the shards in a folder: headers, sizes, hashes",
		Long: `Check every shard in DIR. Without --track, each file matching --pattern must
have a valid header and a size that matches it, and its token count and
SHA-256 are printed (pin them in a track spec). With --track, every shard the
track pins must be present with the pinned token count and SHA-256, and every
token id must be below the track's vocabulary size.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pinned []track.Shard
			vocab := o.vocab
			if o.track != "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				spec, err := registry(cfg).Get(o.track)
				if err != nil {
					return withCode(exitUsage, err)
				}
				pinned = spec.Data.Shards
				if len(pinned) == 0 {
					return withCode(exitUsage, fmt.Errorf("track %s pins no shards: there is nothing to verify against", spec.Name))
				}
				if vocab == 0 {
					vocab = spec.Data.VocabSize
				}
			}
			return runDataVerify(cmd.Context(), g.stdout, args[0], pinned, vocab, o.pattern)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.track, "track", "", "verify against the shards this track pins")
	f.StringVar(&o.pattern, "pattern", "*.bin", "file names to check without --track")
	f.IntVar(&o.vocab, "vocab", 0, "check that every token id is below this (default: the track's vocab_size with --track, else no check)")
	return cmd
}

// runDataVerify checks dir against pinned, or, with no pins, checks the
// files matching pattern and prints their manifest.
func runDataVerify(ctx context.Context, w io.Writer, dir string, pinned []track.Shard, vocab int, pattern string) error {
	if pinned != nil {
		rep, err := data.Verify(ctx, dir, pinned, vocab)
		fmt.Fprint(w, rep)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return withCode(exitFailure, fmt.Errorf("%d of %d pinned shards in %s failed verification", countFailed(rep), len(pinned), dir))
		}
		fmt.Fprintf(w, "all %d pinned shards in %s verified\n", len(pinned), dir)
		return nil
	}
	shards, err := data.Manifest(ctx, dir, pattern, vocab)
	if len(shards) > 0 {
		printShards(w, shards)
	}
	if err != nil {
		if ctx.Err() != nil || len(shards) == 0 && !hasShardError(err) {
			return err
		}
		return withCode(exitFailure, fmt.Errorf("shards in %s failed verification:\n%w", dir, err))
	}
	var tokens int64
	for _, s := range shards {
		tokens += s.Tokens
	}
	fmt.Fprintf(w, "%d shards, %d tokens: headers and sizes valid\n", len(shards), tokens)
	return nil
}

func countFailed(rep data.Report) int {
	n := 0
	for _, s := range rep.Shards {
		if s.Err != nil {
			n++
		}
	}
	return n
}

func hasShardError(err error) bool {
	var se *data.ShardError
	return errors.As(err, &se)
}
