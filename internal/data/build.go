package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/frontier-bench/frontier/internal/track"
)

// TinyOptions configure BuildTiny and EnsureTiny. The zero value builds the
// tiny track's corpus from the folder's secret (drawn on first use) and
// computes its floor at the track's default evaluation.
type TinyOptions struct {
	// Params of the corpus; the zero value means DefaultTinyParams().
	Params TinyParams
	// Secret, when set, is the secret to draw the corpus from instead of
	// the folder's (tests use fixed ones). The folder's secret file must
	// then be absent or equal, unless Reseed is set.
	Secret *TinySecret
	// Reseed replaces the folder's secret with a new one (Secret, or a
	// fresh random one) and rebuilds the corpus.
	Reseed bool
	// ValTokens and ValSeqLen say how the floor is evaluated; zero means
	// 65536 and 128.
	ValTokens int64
	ValSeqLen int
	// Cache, when set, remembers shards verified before, so that
	// EnsureTiny hashes a shard again only when its size or modification
	// time changed.
	Cache *ShardCache
	// Log receives what was built or repaired; nil discards it.
	Log *slog.Logger
}

// Defaults of the tiny track's evaluation.
const (
	DefaultTinyValTokens = 65536
	DefaultTinyValSeqLen = 128
)

// tinyNGramOrder is the highest order of the n-gram baseline the manifest
// records.
const tinyNGramOrder = 6

func (o TinyOptions) withDefaults() TinyOptions {
	if o.Params == (TinyParams{}) {
		o.Params = DefaultTinyParams()
	}
	if o.ValTokens == 0 {
		o.ValTokens = DefaultTinyValTokens
	}
	if o.ValSeqLen == 0 {
		o.ValSeqLen = DefaultTinyValSeqLen
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// TinyManifest is the tiny section of a tiny folder's manifest.json: what
// the shards were drawn from and what the corpus allows, computed when it
// was built. The secret itself is never in it.
type TinyManifest struct {
	// Generator names the generator's version; a binary with another
	// generator rebuilds the corpus from the same secret.
	Generator string `json:"generator"`
	// SecretFingerprint names the secret the shards were drawn from.
	SecretFingerprint string     `json:"secret_fingerprint"`
	Params            TinyParams `json:"params"`
	// Floor is the exact loss floor of the validation slice and its
	// references, at Floor.ValTokens and Floor.SeqLen.
	Floor Floor `json:"floor"`
	// NGram is the n-gram baseline counted from every training shard; nil
	// when the corpus was built on first use, where counting it would
	// delay an evaluation by seconds (`frontier data build tiny` adds it).
	NGram *NGramResult `json:"ngram,omitempty"`
}

// BuildTiny writes the tiny corpus into dir (created if needed) and its
// manifest, and returns the manifest: the shards with their hashes
// (validation shard first), the loss floor and the n-gram baseline
// (seconds of counting). The corpus is drawn from the folder's secret,
// which is created if missing (see TinyOptions for a given or new one).
// Each file is written atomically; a file that already holds the right
// bytes is left alone, so building twice is cheap and a corrupt file is
// repaired.
func BuildTiny(ctx context.Context, dir string, opt TinyOptions) (*DataManifest, error) {
	opt = opt.withDefaults()
	secret, err := tinySecret(dir, opt)
	if err != nil {
		return nil, err
	}
	return buildTiny(ctx, dir, secret, opt, true)
}

// tinySecret returns the secret a build or check of dir uses, creating or
// replacing the folder's secret file as opt says.
func tinySecret(dir string, opt TinyOptions) (TinySecret, error) {
	if opt.Reseed {
		s := TinySecret{}
		if opt.Secret != nil {
			s = *opt.Secret
		} else {
			var err error
			if s, err = NewTinySecret(); err != nil {
				return s, err
			}
		}
		if err := writeTinySecret(dir, s, true); err != nil {
			return s, err
		}
		opt.Log.Info("drew a new secret for the tiny corpus", "dir", dir, "fingerprint", s.Fingerprint())
		return s, nil
	}
	s, err := ReadTinySecret(dir)
	if errors.Is(err, ErrTinySecretExposed) {
		// A copy of the folder (cp, os.CopyFS) often loses the mode: close
		// it again rather than refuse the data. Whoever could read it may
		// have; --reseed is the cure for that.
		path := filepath.Join(dir, TinySecretFile)
		if cerr := os.Chmod(path, 0o600); cerr != nil {
			return s, fmt.Errorf("%w; making it private failed: %w", err, cerr)
		}
		opt.Log.Warn("the tiny corpus secret was readable by others; it is now readable by its owner only (draw a new corpus with frontier data build tiny --reseed if others may have read it)", "file", path)
		s, err = ReadTinySecret(dir)
	}
	switch {
	case err == nil:
		if opt.Secret != nil && *opt.Secret != s {
			return s, fmt.Errorf("tiny corpus in %s: the folder holds the corpus of secret %s, not of the one given (%s); rebuild it with --reseed to replace it", dir, s.Fingerprint(), opt.Secret.Fingerprint())
		}
		return s, nil
	case !errors.Is(err, fs.ErrNotExist):
		return s, err
	}
	if opt.Secret != nil {
		s = *opt.Secret
	} else if s, err = NewTinySecret(); err != nil {
		return s, err
	}
	if err := writeTinySecret(dir, s, false); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return s, err
		}
		// Another process created it first: use that one.
		return tinySecret(dir, TinyOptions{Secret: opt.Secret, Log: opt.Log})
	}
	opt.Log.Info("drew the secret of the tiny corpus", "dir", dir, "fingerprint", s.Fingerprint())
	return s, nil
}

// buildTiny writes the corpus of secret and its manifest; with ngram, the
// manifest records the n-gram baseline, which takes seconds to count.
func buildTiny(ctx context.Context, dir string, secret TinySecret, opt TinyOptions, ngram bool) (*DataManifest, error) {
	m, err := NewTinyModel(opt.Params, secret)
	if err != nil {
		return nil, err
	}
	if opt.ValTokens >= int64(opt.Params.ValShardTokens) {
		return nil, fmt.Errorf("build tiny corpus: val_tokens = %d, but the val shard holds %d tokens and one more than val_tokens is needed", opt.ValTokens, opt.Params.ValShardTokens)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("build tiny corpus: %w", err)
	}
	p := m.Params()
	man := &DataManifest{
		Format: ManifestFormat, Source: "frontier data build tiny", Tokenizer: "tiny",
		VocabSize: p.Vocab, BOS: p.Vocab - 1, Train: tinyPrefix + "train_*.bin", Val: TinyValFile,
	}
	var val []uint16
	var train [][]uint16
	for i := 0; i <= p.TrainShards; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tokens, s, err := writeTinyShard(ctx, dir, m, i, opt.Log)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			val = tokens
		} else {
			train = append(train, tokens)
		}
		man.Shards = append(man.Shards, s)
	}
	f, err := m.Floor(val, opt.ValTokens, opt.ValSeqLen)
	if err != nil {
		return nil, err
	}
	man.Tiny = &TinyManifest{Generator: tinyVersion, SecretFingerprint: secret.Fingerprint(), Params: p, Floor: f}
	if ngram {
		lm, err := CountNGrams(ctx, train, p.Vocab, tinyNGramOrder)
		if err != nil {
			return nil, err
		}
		ng, err := lm.Evaluate(ctx, val, opt.ValTokens, opt.ValSeqLen)
		if err != nil {
			return nil, err
		}
		for _, t := range train {
			ng.TrainTokens += int64(len(t))
		}
		man.Tiny.NGram = &ng
	}
	if _, err := WriteManifest(dir, man); err != nil {
		return nil, fmt.Errorf("build tiny corpus: %w", err)
	}
	return man, nil
}

// tinyShardName returns the file name of shard i and its token count.
func tinyShardName(p TinyParams, i int) (string, int) {
	if i == 0 {
		return TinyValFile, p.ValShardTokens
	}
	return TinyTrainFile(i), p.TrainShardTokens
}

// writeTinyShard generates shard i and writes it unless the file already
// holds its bytes. It returns the tokens and the shard's pin.
func writeTinyShard(ctx context.Context, dir string, m *TinyModel, i int, log *slog.Logger) ([]uint16, ManifestShard, error) {
	name, n := tinyShardName(m.Params(), i)
	tokens := m.Generate(i, n)
	b, err := EncodeShard(tokens)
	if err != nil {
		return nil, ManifestShard{}, fmt.Errorf("build tiny corpus: %s: %w", name, err)
	}
	sum := sha256.Sum256(b)
	s := ManifestShard{File: name, Tokens: int64(n), SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(b))}
	path := filepath.Join(dir, name)
	old, err := HashFile(ctx, path)
	switch {
	case err == nil && old == s.SHA256:
		log.Debug("tiny shard already up to date", "file", path)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		if err := writeFileAtomic(path, func(w io.Writer) error {
			_, err := io.Copy(w, bytes.NewReader(b))
			return err
		}); err != nil {
			return nil, s, fmt.Errorf("build tiny corpus: %w", err)
		}
		log.Debug("wrote tiny shard", "file", path, "tokens", n, "sha256", s.SHA256)
	default:
		return nil, s, fmt.Errorf("build tiny corpus: %w", err)
	}
	return tokens, s, nil
}

// EnsureTiny makes dir hold a verified tiny corpus and returns its
// manifest, with the floor at opt's evaluation settings. On first use it
// draws the folder's secret and builds the corpus; a manifest that is
// missing, or that another secret, generator or parameters wrote, is
// rebuilt from the folder's secret. Then every shard is checked against
// the manifest's SHA-256 (only those whose size or modification time
// changed since opt.Cache last saw them). A shard that fails is
// regenerated from the same secret, which gives the same bytes, and put
// back only if it then matches; otherwise it is an error. A run never
// goes ahead on other data than the manifest pins.
func EnsureTiny(ctx context.Context, dir string, opt TinyOptions) (*DataManifest, error) {
	opt = opt.withDefaults()
	secret, err := tinySecret(dir, opt)
	if err != nil {
		return nil, err
	}
	man, why := currentTinyManifest(dir, secret, opt.Params)
	if why != "" {
		opt.Log.Info("building the tiny corpus", "dir", dir, "why", why)
		return buildTiny(ctx, dir, secret, opt, false)
	}
	if err := verifyTiny(ctx, dir, secret, man, opt); err != nil {
		return nil, err
	}
	if man.Tiny.Floor.ValTokens != opt.ValTokens || man.Tiny.Floor.SeqLen != opt.ValSeqLen {
		// Another evaluation than the manifest's: the floor is cheap.
		m, err := NewTinyModel(opt.Params, secret)
		if err != nil {
			return nil, err
		}
		val, err := ReadShardPrefix(filepath.Join(dir, TinyValFile), min(opt.ValTokens+1, int64(opt.Params.ValShardTokens)), opt.Params.Vocab)
		if err != nil {
			return nil, err
		}
		if man.Tiny.Floor, err = m.Floor(val, opt.ValTokens, opt.ValSeqLen); err != nil {
			return nil, err
		}
		// The baseline was scored at the manifest's settings; counting it
		// again is not cheap, and only `frontier data build` shows it.
		man.Tiny.NGram = nil
	}
	return man, nil
}

// currentTinyManifest returns dir's manifest if it describes the corpus
// of secret and params by this generator, or says why not.
func currentTinyManifest(dir string, secret TinySecret, params TinyParams) (*DataManifest, string) {
	man, err := ReadManifest(filepath.Join(dir, ManifestFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "no manifest"
	case err != nil:
		return nil, err.Error()
	case man.Tiny == nil:
		return nil, "the manifest is not a tiny corpus's"
	case man.Tiny.SecretFingerprint != secret.Fingerprint():
		return nil, "the manifest is another secret's"
	case man.Tiny.Generator != tinyVersion:
		return nil, fmt.Sprintf("the manifest is of generator %q, this is %q", man.Tiny.Generator, tinyVersion)
	case man.Tiny.Params != params:
		return nil, "the manifest is of other parameters"
	case len(man.Shards) != params.TrainShards+1:
		return nil, fmt.Sprintf("the manifest lists %d shards, not %d", len(man.Shards), params.TrainShards+1)
	}
	for i, s := range man.Shards {
		if name, n := tinyShardName(params, i); s.File != name || s.Tokens != int64(n) {
			return nil, fmt.Sprintf("the manifest's shard %d is %s with %d tokens, not %s with %d", i, s.File, s.Tokens, name, n)
		}
	}
	return man, ""
}

// verifyTiny checks every shard of man, repairing those that fail from
// the secret when the regenerated bytes match the manifest.
func verifyTiny(ctx context.Context, dir string, secret TinySecret, man *DataManifest, opt TinyOptions) error {
	var todo []int
	for i, s := range man.Shards {
		if !opt.Cache.fresh(filepath.Join(dir, s.File), s.SHA256) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var m *TinyModel
	var errs []error
	for _, i := range todo {
		s := man.Shards[i]
		pin := track.Shard{File: s.File, SHA256: s.SHA256, Tokens: s.Tokens}
		sr := verifyOne(ctx, dir, pin, opt.Params.Vocab)
		if err := ctx.Err(); err != nil {
			return err
		}
		if sr.Err == nil {
			opt.Cache.remember(sr.Path, s.SHA256)
			continue
		}
		if m == nil {
			var err error
			if m, err = NewTinyModel(opt.Params, secret); err != nil {
				return err
			}
		}
		_, got, err := writeTinyShardIfMatches(ctx, dir, m, i, s.SHA256)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w; regenerating it failed: %w", sr.Err, err))
			continue
		}
		opt.Log.Warn("repaired a tiny shard from the folder's secret", "file", sr.Path, "problem", sr.Err, "sha256", got)
		opt.Cache.remember(sr.Path, s.SHA256)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tiny data in %s does not match its manifest, and regenerating from the folder's secret does not give the manifest's bytes (the manifest was edited, or this binary's generator differs from the one that built it): rebuild with `frontier data build tiny --out %s`: %w", dir, dir, err)
	}
	return nil
}

// writeTinyShardIfMatches regenerates shard i and writes it only if its
// SHA-256 is want, so a repair never puts other data in place.
func writeTinyShardIfMatches(ctx context.Context, dir string, m *TinyModel, i int, want string) ([]uint16, string, error) {
	name, n := tinyShardName(m.Params(), i)
	tokens := m.Generate(i, n)
	b, err := EncodeShard(tokens)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	if got != want {
		return nil, got, fmt.Errorf("%s regenerates with sha256 %s, the manifest pins %s", name, got, want)
	}
	if err := ctx.Err(); err != nil {
		return nil, got, err
	}
	err = writeFileAtomic(filepath.Join(dir, name), func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(b))
		return err
	})
	return tokens, got, err
}

// ShardCache remembers shards whose SHA-256 matched, by a stamp of the
// file's identity (size and modification time), so that a long search
// does not rehash the data before every evaluation. A file rewritten in
// place gets a new stamp and is hashed again. The zero value is ready and
// a nil *ShardCache remembers nothing; it is safe for concurrent use.
type ShardCache struct {
	mu     sync.Mutex
	stamps map[string]string
}

func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Size(), st.ModTime().UnixNano())
}

// fresh reports whether path was verified to hash to sha with its current
// stamp.
func (c *ShardCache) fresh(path, sha string) bool {
	if c == nil {
		return false
	}
	s := fileStamp(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	return s != "" && c.stamps[path] == s+" "+sha
}

func (c *ShardCache) remember(path, sha string) {
	if c == nil {
		return
	}
	s := fileStamp(path)
	if s == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamps == nil {
		c.stamps = map[string]string{}
	}
	c.stamps[path] = s + " " + sha
}
