package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/frontier-bench/frontier/internal/track"
)

// ManifestFile is the name of the manifest fetch, prepare and the tiny
// corpus's build write next to the shards they produce.
const ManifestFile = "manifest.json"

// ManifestFormat is the version of the manifest's layout.
const ManifestFormat = 1

// DataManifest describes a folder of shards: where they came from, how
// they were tokenized, and the pins (name, token count, SHA-256 of the
// whole file) a track spec lists. It holds no timestamps, so preparing the
// same inputs twice gives the same manifest.
type DataManifest struct {
	Format int `json:"format"`
	// Source says where the shards came from: "hf:<repo>@<revision>" for
	// a download, "prepare" for shards made from text.
	Source string `json:"source"`
	// Dataset is the dataset's name for downloads ("fineweb10B").
	Dataset string `json:"dataset,omitempty"`
	// Inputs are the input files of prepare, as named on the command line.
	Inputs    []string `json:"inputs,omitempty"`
	Tokenizer string   `json:"tokenizer"`
	VocabSize int      `json:"vocab_size"`
	BOS       int      `json:"bos_id"`
	// Train and Val are glob patterns for the training shards and the
	// validation shard, as a track's data section names them.
	Train  string           `json:"train"`
	Val    string           `json:"val"`
	Shards []ManifestShard  `json:"shards"`
	Extra  map[string]int64 `json:"stats,omitempty"`
	// Tiny describes a tiny corpus built by frontier data build tiny (or
	// on first use): its secret's fingerprint, its floor and its n-gram
	// baseline.
	Tiny *TinyManifest `json:"tiny,omitempty"`
}

// ManifestShard pins one file.
type ManifestShard struct {
	File   string `json:"file"`
	Tokens int64  `json:"tokens"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// Pins returns the shards as a track spec pins them.
func (m *DataManifest) Pins() []track.Shard {
	out := make([]track.Shard, len(m.Shards))
	for i, s := range m.Shards {
		out[i] = track.Shard{File: s.File, SHA256: s.SHA256, Tokens: s.Tokens}
	}
	return out
}

// WriteManifest writes m as dir/manifest.json, atomically.
func WriteManifest(dir string, m *DataManifest) (string, error) {
	if m.Format == 0 {
		m.Format = ManifestFormat
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode manifest: %w", err)
	}
	path := filepath.Join(dir, ManifestFile)
	err = writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	return path, err
}

// ReadManifest reads a manifest written by WriteManifest; path is the file
// or the folder that holds it.
func ReadManifest(path string) (*DataManifest, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, ManifestFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m DataManifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("read manifest %s: format %d, this frontier reads format %d", path, m.Format, ManifestFormat)
	}
	if len(m.Shards) == 0 {
		return nil, fmt.Errorf("read manifest %s: it lists no shards", path)
	}
	for _, s := range m.Shards {
		if s.File == "" || !filepath.IsLocal(s.File) || strings.ContainsAny(s.File, `/\`) {
			return nil, fmt.Errorf("read manifest %s: shard name %q is not a file name in the folder", path, s.File)
		}
	}
	return &m, nil
}

// YAML returns the data section a track spec needs for these shards: the
// file patterns, the tokenizer's figures and the pins.
func (m *DataManifest) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data:\n  train: %s\n  val: %s\n  vocab_size: %d\n  bos_id: %d\n  shards:\n", m.Train, m.Val, m.VocabSize, m.BOS)
	for _, s := range m.Shards {
		fmt.Fprintf(&b, "    - {file: %s, tokens: %d, sha256: %q}\n", s.File, s.Tokens, s.SHA256)
	}
	return b.String()
}
