package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/frontier-bench/frontier/internal/catalog"
	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// LoadDir reads and validates the suite in folder dir (or the folder of
// dir when it names a suite.yaml), including that every file it names
// exists.
func LoadDir(dir string) (*Suite, error) {
	if filepath.Base(dir) == SuiteFile {
		dir = filepath.Dir(dir)
	}
	p := filepath.Join(dir, SuiteFile)
	b, err := yamlfile.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a suite folder: it has no %s (a suite folder holds %s, its records and hints; see docs/bench.md)", dir, SuiteFile, SuiteFile)
		}
		return nil, fmt.Errorf("read suite: %w", err)
	}
	s, err := Parse(p, b)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s.Dir = abs
	if err := s.checkFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

func loadFS(fsys fs.FS, dir string) (*Suite, error) {
	b, err := fs.ReadFile(fsys, path.Join(dir, SuiteFile))
	if err != nil {
		return nil, fmt.Errorf("read built-in suite %s: %w", dir, err)
	}
	s, err := Parse("built-in "+path.Join(dir, SuiteFile), b)
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, err
	}
	s.fsys, s.Builtin = sub, true
	if isTrackPath(s.Track) {
		return nil, fmt.Errorf("built-in suite %s: its track %q must be a track's name: a built-in suite cannot hold track folders", s.Name, s.Track)
	}
	if err := s.checkFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

// Registry finds suites: built-in ones in an fs.FS (one folder per suite)
// and others in folders on disk.
type Registry struct {
	*catalog.Registry[*Suite]
}

// kind is how the catalog names and loads suites.
var kind = &catalog.Kind[*Suite]{
	Noun: "suite", File: SuiteFile, ListCommand: "frontier bench list",
	LoadDir: LoadDir, LoadFS: loadFS,
	Name:     func(s *Suite) string { return s.Name },
	Location: (*Suite).Location,
}

// NewRegistry returns a registry over the built-in suites and the given
// folders, each a suite folder or a folder of them.
func NewRegistry(builtin fs.FS, dirs ...string) *Registry {
	return &Registry{catalog.New(kind, builtin, dirs...)}
}

// GetTask resolves "SUITE" or "SUITE/TASK" (SUITE may be a folder). The
// task is nil when ref names a suite only.
func (r *Registry) GetTask(ref string) (*Suite, *Task, error) {
	if st, err := os.Stat(ref); err == nil && st.IsDir() || !strings.Contains(ref, "/") {
		s, err := r.Get(ref)
		return s, nil, err
	}
	i := strings.LastIndex(ref, "/")
	s, err := r.Get(ref[:i])
	if err != nil {
		return nil, nil, err
	}
	t, err := s.Task(ref[i+1:])
	if err != nil {
		return nil, nil, err
	}
	return s, t, nil
}
