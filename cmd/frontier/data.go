package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/track"
)

func newDataCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Build, download, prepare and verify track data",
	}
	cmd.AddCommand(newDataBuildCmd(g), newDataFetchCmd(g), newDataPrepareCmd(g), newDataVerifyCmd(g))
	return cmd
}

// dataBuildOptions are the flags of `frontier data build`.
type dataBuildOptions struct {
	out       string
	valTokens int64
	valSeqLen int
	json      bool
	reseed    bool
}

func newDataBuildCmd(g *globals) *cobra.Command {
	var o dataBuildOptions
	cmd := &cobra.Command{
		Use:   "build tiny",
		Short: "Write the tiny synthetic corpus and print its loss floor and n-gram baseline",
		Long: `Write the tiny track's synthetic corpus (one validation shard and eight
training shards in the speedrun's shard format) and its manifest, and print
each shard's token count and SHA-256, the loss floor of the validation slice
(the Bayes-optimal loss of a model that sees only its evaluation window), the
full-context entropy, unigram and bigram references, and the n-gram baseline
(the best Kneser-Ney model counted from the training shards).

The generator's structure and parameters are public; its tables and sample
are drawn from a secret of 32 random bytes, made on first use and kept in
DIR/secret (readable only by you), so every installation has its own corpus
and nobody can regenerate the validation shard without that file. The same
secret gives the same bytes on every machine; files that already hold them
are left alone. --reseed draws a new secret and rebuilds: results measured
on the old corpus are then not comparable with new ones.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"tiny"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "tiny" {
				return usage(fmt.Errorf("data build %q: frontier generates only the synthetic corpus \"tiny\"; other tracks' data is downloaded or prepared", args[0]))
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
	f.BoolVar(&o.json, "json", false, "print the shards and the losses as JSON")
	f.BoolVar(&o.reseed, "reseed", false, "draw a new secret and rebuild the corpus from it (a different corpus)")
	return cmd
}

func runDataBuildTiny(ctx context.Context, w io.Writer, log *slog.Logger, o dataBuildOptions) error {
	p := data.DefaultTinyParams()
	if o.valSeqLen < 1 || o.valTokens < int64(o.valSeqLen) || o.valTokens%int64(o.valSeqLen) != 0 {
		return usage(fmt.Errorf("--val-tokens %d must be a positive multiple of --val-seq-len %d", o.valTokens, o.valSeqLen))
	}
	if o.valTokens >= int64(p.ValShardTokens) {
		return usage(fmt.Errorf("--val-tokens %d: the val shard holds %d tokens, and one more than val_tokens is needed", o.valTokens, p.ValShardTokens))
	}
	man, err := data.BuildTiny(ctx, o.out, data.TinyOptions{ValTokens: o.valTokens, ValSeqLen: o.valSeqLen, Reseed: o.reseed, Log: log})
	if err != nil {
		return err
	}
	if o.json {
		fl := man.Tiny.Floor
		out := dataBuildJSON{Dir: o.out, Fingerprint: man.Tiny.SecretFingerprint, Shards: shardsJSON(man.Pins()), Loss: lossJSON{
			ValTokens: fl.ValTokens, SeqLen: fl.SeqLen, Floor: fl.Floor, FullContext: fl.FullContext,
			Bigram: fl.Bigram, Unigram: fl.Unigram, Uniform: math.Log(float64(p.Vocab)), Classes: []classLossJSON{},
		}, NGram: man.Tiny.NGram}
		for _, c := range fl.Classes {
			out.Loss.Classes = append(out.Loss.Classes, classLossJSON{Class: c.Class, Targets: c.Targets,
				Floor: c.Floor, FullContext: c.FullContext, Bigram: c.Bigram, Unigram: c.Unigram})
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "tiny corpus in %s (secret %s, fingerprint %s)\n\n", o.out, filepath.Join(o.out, data.TinySecretFile), man.Tiny.SecretFingerprint)
	printShards(w, man.Pins())
	printTinyFigures(w, man.Tiny)
	return nil
}

// printTinyFigures prints what a tiny corpus allows: its floor, the
// references, the n-gram baseline, and the floor by class of target.
func printTinyFigures(w io.Writer, t *data.TinyManifest) {
	fl := t.Floor
	fmt.Fprintf(w, "\nloss on the first %d val tokens in windows of %d, nats per token:\n", fl.ValTokens, fl.SeqLen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  loss floor (Bayes-optimal, window context)\t%.4f\n", fl.Floor)
	fmt.Fprintf(tw, "  full-context entropy (whole slice in view)\t%.4f\n", fl.FullContext)
	if ng := t.NGram; ng != nil {
		fmt.Fprintf(tw, "  n-gram baseline (Kneser-Ney, order %d, counted from %d training tokens)\t%.4f\n", ng.Best.Order, ng.TrainTokens, ng.Best.Loss)
		fmt.Fprintf(tw, "  n-gram baseline with a cache of the window (lambda %.2f)\t%.4f\n", ng.WithCache.Lambda, ng.WithCache.Loss)
	}
	fmt.Fprintf(tw, "  bigram reference (previous token only)\t%.4f\n", fl.Bigram)
	fmt.Fprintf(tw, "  unigram reference (no context)\t%.4f\n", fl.Unigram)
	fmt.Fprintf(tw, "  uniform over %d tokens\t%.4f\n", t.Params.Vocab, math.Log(float64(t.Params.Vocab)))
	tw.Flush()
	fmt.Fprintln(w, "\nby class of the target token:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\tshare\tfloor\tfull\tbigram\tunigram\t")
	for _, c := range fl.Classes {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.4f\t%.4f\t%.4f\t%.4f\t\n", c.Class, 100*float64(c.Targets)/float64(fl.ValTokens), c.Floor, c.FullContext, c.Bigram, c.Unigram)
	}
	tw.Flush()
}

// The JSON of the data commands: snake_case, as every --json.
type (
	shardJSON struct {
		File   string `json:"file"`
		Tokens int64  `json:"tokens"`
		SHA256 string `json:"sha256"`
		// Error says what is wrong with the shard; "" when nothing is.
		Error string `json:"error,omitempty"`
	}
	dataBuildJSON struct {
		Dir string `json:"dir"`
		// Fingerprint names the corpus's secret in public (never the secret).
		Fingerprint string      `json:"fingerprint"`
		Shards      []shardJSON `json:"shards"`
		Loss        lossJSON    `json:"loss"`
		// NGram is the n-gram baseline counted from the training shards.
		NGram *data.NGramResult `json:"ngram,omitempty"`
	}
	lossJSON struct {
		ValTokens   int64           `json:"val_tokens"`
		SeqLen      int             `json:"val_seq_len"`
		Floor       float64         `json:"floor"`
		FullContext float64         `json:"full_context"`
		Bigram      float64         `json:"bigram"`
		Unigram     float64         `json:"unigram"`
		Uniform     float64         `json:"uniform"`
		Classes     []classLossJSON `json:"classes"`
	}
	classLossJSON struct {
		Class       string  `json:"class"`
		Targets     int64   `json:"targets"`
		Floor       float64 `json:"floor"`
		FullContext float64 `json:"full_context"`
		Bigram      float64 `json:"bigram"`
		Unigram     float64 `json:"unigram"`
	}
	dataVerifyJSON struct {
		Dir string `json:"dir"`
		// Pinned says whether the shards were checked against pins (a
		// track's, a manifest's), or only their headers and sizes.
		Pinned bool        `json:"pinned"`
		OK     bool        `json:"ok"`
		Shards []shardJSON `json:"shards"`
		Tokens int64       `json:"tokens"`
		Error  string      `json:"error,omitempty"`
	}
	dataFetchJSON struct {
		Dataset      string             `json:"dataset"`
		Dir          string             `json:"dir"`
		Downloaded   int                `json:"downloaded"`
		Present      int                `json:"present"`
		Bytes        int64              `json:"bytes"`
		ElapsedS     float64            `json:"elapsed_s"`
		ManifestPath string             `json:"manifest_path"`
		Manifest     *data.DataManifest `json:"manifest"`
	}
	dataPrepareJSON struct {
		Dir          string             `json:"dir"`
		Docs         int64              `json:"docs"`
		EmptyDocs    int64              `json:"empty_docs"`
		TextBytes    int64              `json:"text_bytes"`
		InputBytes   int64              `json:"input_bytes"`
		Tokens       int64              `json:"tokens"`
		InvalidUTF8  int64              `json:"invalid_utf8"`
		ForcedCuts   int64              `json:"forced_cuts"`
		ElapsedS     float64            `json:"elapsed_s"`
		ManifestPath string             `json:"manifest_path"`
		Manifest     *data.DataManifest `json:"manifest"`
	}
)

func shardsJSON(shards []track.Shard) []shardJSON {
	out := []shardJSON{}
	for _, s := range shards {
		out = append(out, shardJSON{File: s.File, Tokens: s.Tokens, SHA256: s.SHA256})
	}
	return out
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
	track    string
	manifest string
	pattern  string
	vocab    int
	json     bool
}

func newDataVerifyCmd(g *globals) *cobra.Command {
	var o dataVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check the shards in a folder: headers, sizes, hashes",
		Long: `Check every shard in DIR. Without --track, each file matching --pattern must
have a valid header and a size that matches it, and its token count and
SHA-256 are printed (pin them in a track spec). With --track NAME, every shard
the track pins must be present with the pinned token count and SHA-256, and
every token id must be below the track's vocabulary size; DIR defaults to the
track's data folder (data: in frontier.yaml, the spec's data.dir, or
<data_dir>/NAME). A track with built-in data, such as tiny, pins no shards:
its corpus is drawn per installation, and the manifest written with it pins
it. With --manifest, the same against the pins of a manifest.json that fetch,
prepare or data build wrote.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pinned []track.Shard
			vocab := o.vocab
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			}
			if o.track != "" && o.manifest != "" {
				return usage(errors.New("use --track or --manifest, not both"))
			}
			if dir == "" && o.track == "" {
				return usage(errors.New("name the folder to verify, or a track with --track"))
			}
			if o.manifest != "" {
				m, err := data.ReadManifest(o.manifest)
				if err != nil {
					return usage(err)
				}
				pinned = m.Pins()
				if vocab == 0 {
					vocab = m.VocabSize
				}
			}
			if o.track != "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				spec, err := lookupTrack(cfg, o.track)
				if err != nil {
					return err
				}
				if dir == "" {
					dir = (&eval.LocalData{Root: cfg.DataDir, Dirs: cfg.Data}).Dir(spec)
				}
				pinned = spec.Data.Shards
				if len(pinned) == 0 {
					// As an evaluation does: a track that pins nothing (built-in
					// data is drawn per installation) is checked against the
					// manifest its data came with.
					if m, err := data.ReadManifest(dir); err == nil {
						pinned = m.Pins()
					}
				}
				if len(pinned) == 0 {
					return usage(fmt.Errorf("track %s pins no shards, and %s has no manifest.json: there is nothing to verify against (without --track, the headers and sizes are checked)", spec.Name, dir))
				}
				if vocab == 0 {
					vocab = spec.Data.VocabSize
				}
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return usage(fmt.Errorf("%s is not a folder of shards (%v)", dir, nonNil(err, "not a folder")))
			}
			return runDataVerify(cmd.Context(), g.stdout, dir, pinned, vocab, o.pattern, o.json)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.track, "track", "", "verify against the shards this track pins (a name or a track folder)")
	f.StringVar(&o.manifest, "manifest", "", "verify against the shards a manifest.json pins (the file, or the folder that holds it)")
	f.StringVar(&o.pattern, "pattern", "*.bin", "file names to check without --track")
	f.IntVar(&o.vocab, "vocab", 0, "check that every token id is below this (default: the track's vocab_size with --track, else no check)")
	f.BoolVar(&o.json, "json", false, "print each shard and the outcome as JSON")
	return cmd
}

func nonNil(err error, def string) string {
	if err != nil {
		return err.Error()
	}
	return def
}

// runDataVerify checks dir against pinned, or, with no pins, checks the
// files matching pattern and prints their manifest.
func runDataVerify(ctx context.Context, w io.Writer, dir string, pinned []track.Shard, vocab int, pattern string, asJSON bool) error {
	if pinned != nil {
		rep, err := data.Verify(ctx, dir, pinned, vocab)
		if asJSON {
			out := dataVerifyJSON{Dir: dir, Pinned: true, OK: err == nil, Shards: []shardJSON{}}
			for _, s := range rep.Shards {
				sj := shardJSON{File: s.File, Tokens: s.Tokens, SHA256: s.SHA256}
				if s.Err != nil {
					sj.Error = s.Err.Error()
				}
				out.Shards = append(out.Shards, sj)
				out.Tokens += s.Tokens
			}
			if err != nil {
				out.Error = err.Error()
			}
			if jerr := writeJSON(w, out); jerr != nil {
				return jerr
			}
		} else {
			fmt.Fprint(w, rep)
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("%d of %d pinned shards in %s failed verification", countFailed(rep), len(pinned), dir)
		}
		if !asJSON {
			fmt.Fprintf(w, "all %d pinned shards in %s verified\n", len(pinned), dir)
		}
		return nil
	}
	shards, err := data.Manifest(ctx, dir, pattern, vocab)
	var tokens int64
	for _, s := range shards {
		tokens += s.Tokens
	}
	if asJSON {
		out := dataVerifyJSON{Dir: dir, OK: err == nil, Shards: shardsJSON(shards), Tokens: tokens}
		if err != nil {
			out.Error = err.Error()
		}
		if jerr := writeJSON(w, out); jerr != nil {
			return jerr
		}
	} else if len(shards) > 0 {
		printShards(w, shards)
	}
	if err != nil {
		if ctx.Err() != nil || len(shards) == 0 && !hasShardError(err) {
			return err
		}
		return fmt.Errorf("shards in %s failed verification:\n%w", dir, err)
	}
	if !asJSON {
		fmt.Fprintf(w, "%d shards, %d tokens: headers and sizes valid\n", len(shards), tokens)
	}
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

// dataFetchOptions are the flags of `frontier data fetch`.
type dataFetchOptions struct {
	trainShards int
	dir         string
	jobs        int
	revision    string
	json        bool
}

func newDataFetchCmd(g *globals) *cobra.Command {
	var o dataFetchOptions
	var names []string
	for _, d := range data.Datasets() {
		names = append(names, d.Name)
	}
	cmd := &cobra.Command{
		Use:   "fetch DATASET",
		Short: "Download the speedrun's GPT-2-tokenized FineWeb shards from the Hugging Face hub",
		Long: `Download the validation shard and the first --train-shards training shards
(100M tokens each) of a pre-tokenized dataset, as the speedrun's
data/cached_fineweb10B.py does: fineweb10B (kjj0/fineweb10B-gpt2, 103 training
shards), finewebedu10B (kjj0/finewebedu10B-gpt2, 99) or fineweb100B
(kjj0/fineweb100B-gpt2, 1030).

Files download to <file>.partial and are resumed where they stopped, so an
interrupted fetch (Ctrl-C, a dropped connection) continues when run again.
Failed requests are retried with backoff. Every shard's header and size, and its
SHA-256 when the hub gives one, are checked before it is put in place. The
SHA-256 of every file is written to manifest.json, and the data section a track
spec pins is printed.

Environment: HF_ENDPOINT replaces https://huggingface.co (a mirror); HF_TOKEN
is sent as a bearer token (it is never printed).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			ds, err := data.LookupDataset(args[0])
			if err != nil {
				return usage(err)
			}
			if o.trainShards < 0 || o.trainShards > ds.TrainShards {
				return usage(fmt.Errorf("--train-shards %d: %s has 0 to %d training shards", o.trainShards, ds.Name, ds.TrainShards))
			}
			if o.dir == "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				o.dir = filepath.Join(cfg.DataDir, ds.Name)
			}
			return runDataFetch(cmd.Context(), g, ds, o, os.Getenv)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.trainShards, "train-shards", 9, "training shards to download, 100M tokens each (0: the validation shard alone)")
	f.StringVar(&o.dir, "dir", "", "folder to download to (default: <data_dir>/DATASET)")
	f.IntVar(&o.jobs, "jobs", 4, "files to download at once")
	f.StringVar(&o.revision, "revision", "main", "branch, tag or commit of the dataset repository")
	f.BoolVar(&o.json, "json", false, "print the outcome and the manifest as JSON")
	return cmd
}

func runDataFetch(ctx context.Context, g *globals, ds data.Dataset, o dataFetchOptions, getenv func(string) string) error {
	if o.jobs < 1 {
		return usage(fmt.Errorf("--jobs %d: use 1 or more", o.jobs))
	}
	prog := newProgressPrinter(g.stderr, g.log)
	g.log.Info("fetching "+ds.Name, "repo", ds.Repo, "train_shards", o.trainShards, "dir", o.dir)
	res, err := data.Fetch(ctx, data.FetchOptions{
		Dataset:     ds,
		TrainShards: o.trainShards,
		Dir:         o.dir,
		Endpoint:    getenv("HF_ENDPOINT"),
		Token:       getenv("HF_TOKEN"),
		Revision:    o.revision,
		Jobs:        o.jobs,
		Log:         g.log,
		Progress:    prog.show,
	})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(g.stdout, dataFetchJSON{Dataset: ds.Name, Dir: o.dir, Downloaded: res.Downloaded, Present: res.Present,
			Bytes: res.Bytes, ElapsedS: res.Elapsed.Seconds(), ManifestPath: res.ManifestPath, Manifest: res.Manifest})
	}
	fmt.Fprintf(g.stdout, "# %s: %d files in %s (%d downloaded, %d already there), %s received in %s\n# manifest: %s\n",
		ds.Name, len(res.Manifest.Shards), o.dir, res.Downloaded, res.Present, humanBytes(res.Bytes), res.Elapsed.Round(time.Second), res.ManifestPath)
	fmt.Fprint(g.stdout, res.Manifest.YAML())
	return nil
}

// dataPrepareOptions are the flags of `frontier data prepare`.
type dataPrepareOptions struct {
	inputs      []string
	tokenizer   string
	out         string
	prefix      string
	valTokens   int64
	shardTokens int64
	workers     int
	split       string
	textField   string
	strictUTF8  bool
	force       bool
	json        bool
}

func newDataPrepareCmd(g *globals) *cobra.Command {
	var o dataPrepareOptions
	cmd := &cobra.Command{
		Use:   "prepare --input FILES... [--tokenizer gpt2|byte] [--out DIR]",
		Short: "Tokenize your own text into speedrun shards",
		Long: `Tokenize text into shards in the speedrun's format: every document is BOS
followed by its tokens, the first --val-tokens tokens form the validation shard
(<prefix>_val_000000.bin) and the rest fill training shards of --shard-tokens
(<prefix>_train_000001.bin, ...). Inputs are .txt files, .jsonl files with one
JSON object per line whose "text" field is a document, and .gz of either;
folders and quoted patterns stand for the files in them.

A .txt file is one document (--txt-split file), or documents are separated by
blank lines (blank) or are single lines (line). Tokenizers: gpt2 (GPT-2's BPE
exactly as tiktoken's gpt2 encoding, offline, BOS 50256, vocab 50257; the text
"<|endoftext|>" in a document is encoded as ordinary text), or byte (ids 0-255
are the bytes, BOS 256, vocab 257). The output does not depend on --workers.
The SHA-256 of every shard is written to manifest.json and the data section a
track spec pins is printed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.inputs = append(o.inputs, args...)
			if len(o.inputs) == 0 {
				return usage(errors.New("no input: name files, folders or patterns with --input"))
			}
			if o.out == "" {
				cfg, err := g.loadConfig()
				if err != nil {
					return err
				}
				o.out = filepath.Join(cfg.DataDir, o.prefix)
			}
			return runDataPrepare(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.inputs, "input", "i", nil, "input files, folders or patterns (.txt, .jsonl, .txt.gz, .jsonl.gz); repeat or separate with commas")
	f.StringVar(&o.tokenizer, "tokenizer", data.TokenizerGPT2, "gpt2 or byte")
	f.StringVar(&o.out, "out", "", "folder to write the shards to (default: <data_dir>/PREFIX)")
	f.StringVar(&o.prefix, "prefix", data.DefaultPrefix, "start of the shards' file names")
	f.Int64Var(&o.valTokens, "val-tokens", 0, "tokens in the validation shard (default: --shard-tokens, as in the speedrun; a track needs at least its val_tokens + 1)")
	f.Int64Var(&o.shardTokens, "shard-tokens", data.DefaultShardTokens, "tokens in each training shard")
	f.IntVar(&o.workers, "workers", 0, "tokenizing goroutines (default: the number of CPUs)")
	f.StringVar(&o.split, "txt-split", string(data.SplitFile), "documents of a .txt file: file (the whole file), blank (separated by blank lines), line (one per line)")
	f.StringVar(&o.textField, "text-field", data.DefaultTextField, "the JSONL field that holds the text")
	f.BoolVar(&o.strictUTF8, "strict-utf8", false, "fail on invalid UTF-8 in .txt input instead of replacing it with U+FFFD")
	f.BoolVar(&o.force, "force", false, "replace shards with the same prefix already in the output folder")
	f.BoolVar(&o.json, "json", false, "print the counts and the manifest as JSON")
	return cmd
}

func runDataPrepare(ctx context.Context, g *globals, o dataPrepareOptions) error {
	split, err := data.ParseTextSplit(o.split)
	if err != nil {
		return usage(err)
	}
	if o.valTokens < 0 || o.shardTokens < 1 {
		return usage(fmt.Errorf("--val-tokens %d and --shard-tokens %d must be positive", o.valTokens, o.shardTokens))
	}
	inputs, err := data.ExpandInputs(o.inputs)
	if err != nil {
		return usage(err)
	}
	tok, err := data.NewTokenizer(o.tokenizer)
	if err != nil {
		return usage(err)
	}
	prog := newProgressPrinter(g.stderr, g.log)
	res, err := data.Prepare(ctx, data.PrepareOptions{
		Inputs:      inputs,
		Out:         o.out,
		Prefix:      o.prefix,
		Tokenizer:   tok,
		ValTokens:   o.valTokens,
		ShardTokens: o.shardTokens,
		Workers:     o.workers,
		Split:       split,
		TextField:   o.textField,
		StrictUTF8:  o.strictUTF8,
		Force:       o.force,
		Log:         g.log,
		Progress:    prog.show,
	})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(g.stdout, dataPrepareJSON{Dir: o.out, Docs: res.Docs, EmptyDocs: res.EmptyDocs, TextBytes: res.TextBytes,
			InputBytes: res.InputBytes, Tokens: res.Tokens, InvalidUTF8: res.InvalidUTF8, ForcedCuts: res.ForcedCuts,
			ElapsedS: res.Elapsed.Seconds(), ManifestPath: res.ManifestPath, Manifest: res.Manifest})
	}
	secs := max(res.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(g.stdout, "# %d documents (%d empty skipped), %s of text, %d tokens (%s), %d shards in %s\n",
		res.Docs, res.EmptyDocs, humanBytes(res.TextBytes), res.Tokens, tok.Name(), len(res.Manifest.Shards), o.out)
	fmt.Fprintf(g.stdout, "# %s in %s: %.1f MB/s of text, %.2fM tokens/s\n", humanBytes(res.InputBytes), res.Elapsed.Round(time.Millisecond), float64(res.TextBytes)/1e6/secs, float64(res.Tokens)/1e6/secs)
	if res.InvalidUTF8 > 0 {
		fmt.Fprintf(g.stdout, "# %d runs of invalid UTF-8 were replaced by U+FFFD\n", res.InvalidUTF8)
	}
	fmt.Fprintf(g.stdout, "# manifest: %s\n", res.ManifestPath)
	fmt.Fprint(g.stdout, res.Manifest.YAML())
	return nil
}

// progressPrinter shows progress on a terminal as one line rewritten in
// place, and elsewhere (a log file, CI) as a log line every logEvery.
type progressPrinter struct {
	w        io.Writer
	live     bool
	log      *slog.Logger
	logEvery time.Duration
	last     time.Time
}

func newProgressPrinter(w io.Writer, log *slog.Logger) *progressPrinter {
	live := false
	if f, ok := w.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd()))
	}
	return &progressPrinter{w: w, live: live, log: log, logEvery: 10 * time.Second}
}

func (p *progressPrinter) show(pr data.Progress) {
	if p.live {
		fmt.Fprintf(p.w, "\r%s\x1b[K", progressLine(pr))
		if pr.Final {
			fmt.Fprintln(p.w)
		}
		return
	}
	now := time.Now()
	if !pr.Final && now.Sub(p.last) < p.logEvery {
		return
	}
	p.last = now
	attrs := []any{"op", pr.Op, "done", humanBytes(pr.Done), "rate", humanBytes(int64(pr.Rate)) + "/s", "files", fmt.Sprintf("%d/%d", pr.FilesDone, pr.Files)}
	if pr.Total > 0 {
		attrs = append(attrs, "total", humanBytes(pr.Total), "percent", fmt.Sprintf("%.1f", 100*float64(pr.Done)/float64(pr.Total)))
	}
	if pr.ETA > 0 {
		attrs = append(attrs, "eta", pr.ETA.String())
	}
	if pr.Tokens > 0 {
		attrs = append(attrs, "tokens", pr.Tokens)
	}
	if pr.Final {
		attrs = append(attrs, "elapsed", pr.Elapsed.Round(time.Millisecond).String())
	}
	p.log.Info("progress", attrs...)
}

// progressLine is the one-line summary a terminal shows.
func progressLine(pr data.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s", pr.Op, humanBytes(pr.Done))
	if pr.Total > 0 {
		fmt.Fprintf(&b, " of %s (%.0f%%)", humanBytes(pr.Total), 100*float64(pr.Done)/float64(pr.Total))
	}
	fmt.Fprintf(&b, "  %s/s", humanBytes(int64(pr.Rate)))
	if pr.ETA > 0 && !pr.Final {
		fmt.Fprintf(&b, "  ETA %s", pr.ETA)
	}
	if pr.Tokens > 0 {
		fmt.Fprintf(&b, "  %.1fM tokens", float64(pr.Tokens)/1e6)
	}
	fmt.Fprintf(&b, "  %d/%d files", pr.FilesDone, pr.Files)
	if pr.Final {
		fmt.Fprintf(&b, "  in %s", pr.Elapsed.Round(time.Millisecond))
	}
	return b.String()
}

// humanBytes writes n in decimal units, as download tools do.
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTP"[exp])
}
