package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/track"
)

// DataFiles are the absolute paths of a track's data, and what is known
// about it.
type DataFiles struct {
	Train []string `json:"train"`
	Val   string   `json:"val"`
	// LossFloor is the Bayes-optimal loss of the track's validation slice
	// on this installation's data, 0 when unknown. The built-in tiny
	// corpus is drawn per installation, so its floor comes from the
	// manifest written when it was built, not from the track spec.
	LossFloor float64 `json:"loss_floor,omitempty"`
}

// LocalData finds track data on the local disk and verifies it before every
// evaluation: headers, sizes and SHA-256 of every pinned shard. A mismatch is
// an error, never a silent run on other data. The built-in tiny data is
// generated on first use, from a secret drawn for this installation, and
// verified against the manifest written with it.
type LocalData struct {
	// Root holds one folder per track (config data_dir).
	Root string
	// Dirs maps a track name to its data folder, overriding Root (config
	// data:).
	Dirs map[string]string

	// verified remembers files whose hash matched, by a stamp of their
	// identity (size and modification time), so that a long
	// search does not rehash gigabytes before every evaluation. A file
	// rewritten in place gets a new stamp and is hashed again.
	mu       sync.Mutex
	verified map[string]string
	// tiny does the same for the tiny corpus, whose pins are its manifest's.
	tiny data.ShardCache
}

// Dir returns the data folder of spec.
func (d *LocalData) Dir(spec *track.Spec) string {
	if dir, ok := d.Dirs[spec.Name]; ok && dir != "" {
		return dir
	}
	if spec.Data.Dir != "" {
		if filepath.IsAbs(spec.Data.Dir) {
			return spec.Data.Dir
		}
		return filepath.Join(d.Root, spec.Data.Dir)
	}
	return filepath.Join(d.Root, spec.Name)
}

// Resolve verifies the data of spec and returns its files.
func (d *LocalData) Resolve(ctx context.Context, spec *track.Spec) (*DataFiles, error) {
	dir := d.Dir(spec)
	var floor float64
	switch spec.Data.Builtin {
	case "tiny":
		// The spec's pins and floor, if any, are another installation's
		// (see track.Spec.Notes): the corpus's manifest decides.
		man, err := data.EnsureTiny(ctx, dir, data.TinyOptions{
			ValTokens: spec.Data.ValTokens, ValSeqLen: spec.Data.ValSeqLen, Cache: &d.tiny,
		})
		if err != nil {
			return nil, err
		}
		floor = man.Tiny.Floor.Floor
	case "":
		pins := spec.Data.Shards
		if len(pins) == 0 {
			// A track that pins nothing (its data is the user's) is checked
			// against the manifest `frontier data fetch` or `prepare` wrote
			// with the data, when there is one.
			if m, err := data.ReadManifest(dir); err == nil {
				pins = m.Pins()
			}
		}
		if todo := d.unverified(dir, pins); len(todo) > 0 {
			rep, err := data.Verify(ctx, dir, todo, spec.Data.VocabSize)
			if err != nil {
				return nil, err
			}
			if !rep.OK() {
				return nil, fmt.Errorf("data in %s does not match its pinned shards (the track's, or manifest.json's):\n%s", dir, rep)
			}
			d.remember(dir, todo)
		}
	}
	train, err := filepath.Glob(filepath.Join(dir, spec.Data.Train))
	if err != nil {
		return nil, fmt.Errorf("data.train pattern %q: %w", spec.Data.Train, err)
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("no training shards match %s in %s: put the data there or set `data: {%s: DIR}` in frontier.yaml", spec.Data.Train, dir, spec.Name)
	}
	sort.Strings(train)
	val := filepath.Join(dir, spec.Data.Val)
	// Headers and sizes of every file; tokens were range-checked by the
	// verification of the pinned shards.
	for _, f := range append([]string{val}, train...) {
		if err := data.CheckShardFile(f, 0); err != nil {
			return nil, err
		}
	}
	return &DataFiles{Train: train, Val: val, LossFloor: floor}, nil
}

// stamp identifies a file's current content cheaply: size and
// modification time (with nanoseconds).
func stamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Size(), st.ModTime().UnixNano())
}

// unverified returns the pins not verified before with the same stamp.
func (d *LocalData) unverified(dir string, pins []track.Shard) []track.Shard {
	d.mu.Lock()
	defer d.mu.Unlock()
	var todo []track.Shard
	for _, p := range pins {
		path := filepath.Join(dir, p.File)
		if s := stamp(path); s == "" || d.verified[path] != s+p.SHA256 {
			todo = append(todo, p)
		}
	}
	return todo
}

func (d *LocalData) remember(dir string, pins []track.Shard) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.verified == nil {
		d.verified = map[string]string{}
	}
	for _, p := range pins {
		path := filepath.Join(dir, p.File)
		if s := stamp(path); s != "" {
			d.verified[path] = s + p.SHA256
		}
	}
}
