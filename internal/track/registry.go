package track

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/frontier-bench/frontier/internal/catalog"
	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// Registry finds tracks: built-in ones in an fs.FS (one folder per track,
// each with track.yaml) and user ones in folders on disk.
type Registry = catalog.Registry[*Spec]

// kind is how the catalog names and loads tracks.
var kind = &catalog.Kind[*Spec]{
	Noun: "track", File: SpecFile, ListCommand: "frontier track list",
	LoadDir: LoadDir, LoadFS: loadFS,
	Name:     func(s *Spec) string { return s.Name },
	Location: (*Spec).Location,
}

// NewRegistry returns a registry over the built-in tracks and the user's
// track folders. Each folder in dirs is either a track folder itself (it has
// track.yaml) or holds track folders.
func NewRegistry(builtin fs.FS, dirs ...string) *Registry {
	return catalog.New(kind, builtin, dirs...)
}

// MaxFileBytes bounds a file of a track that frontier reads (the
// reference program, a README): the speedrun's longest records are tens
// of kilobytes.
const MaxFileBytes = 1 << 20

// ReadFile reads a file of the track (the reference program, a README):
// a regular file inside the track's folder, of at most MaxFileBytes. A
// symbolic link that leads out of the folder, a device and a named pipe
// are refused: a track folder may come from anyone, and what it names is
// printed, stored and run.
func (s *Spec) ReadFile(name string) ([]byte, error) {
	b, err := s.read(name)
	if err != nil {
		return nil, fmt.Errorf("track %s: read %s: %w", s.Name, name, err)
	}
	return b, nil
}

func (s *Spec) read(name string) ([]byte, error) {
	clean := path.Clean(filepath.ToSlash(name))
	if s.fsys == nil {
		return yamlfile.ReadInside(s.Dir, filepath.FromSlash(clean), MaxFileBytes)
	}
	b, err := fs.ReadFile(s.fsys, clean)
	if err == nil && len(b) > MaxFileBytes {
		err = fmt.Errorf("%s is larger than %d bytes", clean, MaxFileBytes)
	}
	return b, err
}

// ReferenceSource returns the reference program's source.
func (s *Spec) ReferenceSource() ([]byte, error) { return s.ReadFile(s.Reference) }

// Location says where the track comes from, for humans.
func (s *Spec) Location() string {
	if s.Builtin {
		return "built-in"
	}
	return s.Dir
}

// LoadDir reads and validates the track in folder dir, including that its
// reference program exists.
func LoadDir(dir string) (*Spec, error) {
	specPath := filepath.Join(dir, SpecFile)
	b, err := yamlfile.ReadInside(dir, SpecFile, yamlfile.MaxBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a track folder: it has no %s", dir, SpecFile)
		}
		return nil, fmt.Errorf("read track spec %s: %w", specPath, err)
	}
	s, err := Parse(specPath, b)
	if err != nil {
		return nil, err
	}
	s.Dir = dir
	if err := s.checkFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

func loadFS(fsys fs.FS, dir string) (*Spec, error) {
	b, err := fs.ReadFile(fsys, path.Join(dir, SpecFile))
	if err != nil {
		return nil, fmt.Errorf("read built-in track %s: %w", dir, err)
	}
	if len(b) > yamlfile.MaxBytes {
		return nil, fmt.Errorf("built-in track %s: %s is larger than %d bytes", dir, SpecFile, yamlfile.MaxBytes)
	}
	s, err := Parse("built-in "+path.Join(dir, SpecFile), b)
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, err
	}
	s.fsys, s.Builtin = sub, true
	if err := s.checkFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Spec) checkFiles() error {
	src, err := s.read(s.Reference)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("track %s: the reference program %s is missing: %w", s.Name, s.Reference, err)
	}
	if err != nil {
		return fmt.Errorf("track %s: the reference program %s cannot be read: %w", s.Name, s.Reference, err)
	}
	if len(strings.TrimSpace(string(src))) == 0 {
		return fmt.Errorf("track %s: the reference program %s is empty", s.Name, s.Reference)
	}
	return nil
}
