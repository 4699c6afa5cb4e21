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

	"github.com/frontier-bench/frontier/internal/track"
)

// TinyOptions configure BuildTiny and EnsureTiny. The zero value builds the
// tiny track's corpus and its floor at the track's default evaluation.
type TinyOptions struct {
	// Params of the corpus; the zero value means DefaultTinyParams().
	Params TinyParams
	// ValTokens and ValSeqLen say how the floor is evaluated; zero means
	// 65536 and 128.
	ValTokens int64
	ValSeqLen int
	// Log receives one line per shard written; nil discards them.
	Log *slog.Logger
}

// Defaults of the tiny track's evaluation.
const (
	DefaultTinyValTokens = 65536
	DefaultTinyValSeqLen = 128
)

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

// BuildTiny writes the tiny corpus into dir (created if needed) and returns
// its shards with their hashes, validation shard first, and the loss floor
// of the validation slice. Each file is written atomically; a file that
// already holds the right bytes is left alone, so building twice is cheap
// and a corrupt file is repaired.
func BuildTiny(ctx context.Context, dir string, opt TinyOptions) ([]track.Shard, Floor, error) {
	opt = opt.withDefaults()
	m, err := NewTinyModel(opt.Params)
	if err != nil {
		return nil, Floor{}, err
	}
	shards, val, err := buildTinyShards(ctx, dir, m, opt.Log)
	if err != nil {
		return nil, Floor{}, err
	}
	f, err := m.Floor(val, opt.ValTokens, opt.ValSeqLen)
	if err != nil {
		return shards, Floor{}, err
	}
	return shards, f, nil
}

// buildTinyShards writes every shard and returns the pins and the
// validation tokens.
func buildTinyShards(ctx context.Context, dir string, m *TinyModel, log *slog.Logger) ([]track.Shard, []uint16, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("build tiny corpus: %w", err)
	}
	p := m.Params()
	var shards []track.Shard
	var val []uint16
	for i := 0; i <= p.TrainShards; i++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		name, n := TinyValFile, p.ValShardTokens
		if i > 0 {
			name, n = TinyTrainFile(i), p.TrainShardTokens
		}
		tokens := m.Generate(i, n)
		if i == 0 {
			val = tokens
		}
		b, err := EncodeShard(tokens)
		if err != nil {
			return nil, nil, fmt.Errorf("build tiny corpus: %s: %w", name, err)
		}
		sum := sha256.Sum256(b)
		hexSum := hex.EncodeToString(sum[:])
		path := filepath.Join(dir, name)
		old, err := HashFile(ctx, path)
		switch {
		case err == nil && old == hexSum:
			log.Debug("tiny shard already up to date", "file", path)
		case err == nil || errors.Is(err, fs.ErrNotExist):
			if err := writeFileAtomic(path, func(w io.Writer) error {
				_, err := io.Copy(w, bytes.NewReader(b))
				return err
			}); err != nil {
				return nil, nil, fmt.Errorf("build tiny corpus: %w", err)
			}
			log.Debug("wrote tiny shard", "file", path, "tokens", n, "sha256", hexSum)
		default:
			return nil, nil, fmt.Errorf("build tiny corpus: %w", err)
		}
		shards = append(shards, track.Shard{File: name, SHA256: hexSum, Tokens: int64(n)})
	}
	return shards, val, nil
}

// EnsureTiny makes dir hold the tiny corpus the track pins: if a pinned
// file is missing it builds the corpus, then it verifies every pinned
// shard. A mismatch is an error that says so; it never lets a run go ahead
// on other data.
func EnsureTiny(ctx context.Context, dir string, pinned []track.Shard) error {
	_, err := ensureTiny(ctx, dir, pinned, TinyOptions{})
	return err
}

// ensureTiny is EnsureTiny for any corpus parameters.
func ensureTiny(ctx context.Context, dir string, pinned []track.Shard, opt TinyOptions) (Report, error) {
	opt = opt.withDefaults()
	if len(pinned) == 0 {
		return Report{Dir: dir}, errors.New("tiny data: the track pins no shards; list them (file, sha256, tokens) in the track spec, as `frontier data build tiny` prints them")
	}
	missing := false
	for _, s := range pinned {
		if !filepath.IsLocal(filepath.FromSlash(s.File)) {
			continue // Verify reports it
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(s.File))); errors.Is(err, fs.ErrNotExist) {
			missing = true
			break
		}
	}
	if missing {
		m, err := NewTinyModel(opt.Params)
		if err != nil {
			return Report{Dir: dir}, err
		}
		opt.Log.Info("building the tiny corpus", "dir", dir)
		if _, _, err := buildTinyShards(ctx, dir, m, opt.Log); err != nil {
			return Report{Dir: dir}, err
		}
	}
	rep, err := Verify(ctx, dir, pinned, opt.Params.Vocab)
	if err != nil {
		if ctx.Err() != nil {
			return rep, err
		}
		return rep, fmt.Errorf("tiny data in %s does not match the track's pins (if `frontier data build tiny --out %s` does not fix it, this binary's generator and the track spec disagree: update the pins from the build's output only if the change is deliberate): %w", dir, dir, err)
	}
	return rep, nil
}
