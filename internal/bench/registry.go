package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

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
	builtin fs.FS
	dirs    []string
}

// NewRegistry returns a registry over the built-in suites and the given
// folders, each a suite folder or a folder of them.
func NewRegistry(builtin fs.FS, dirs ...string) *Registry {
	return &Registry{builtin: builtin, dirs: dirs}
}

// List returns every suite that loads, sorted by name, and an error for
// each that does not.
func (r *Registry) List() ([]*Suite, error) {
	var out []*Suite
	var errs []error
	seen := map[string]*Suite{}
	add := func(s *Suite) {
		if prev, ok := seen[s.Name]; ok {
			errs = append(errs, fmt.Errorf("suite %q in %s has the same name as the one in %s: rename one of them", s.Name, s.Location(), prev.Location()))
			return
		}
		seen[s.Name] = s
		out = append(out, s)
	}
	if r.builtin != nil {
		entries, err := fs.ReadDir(r.builtin, ".")
		if err != nil {
			errs = append(errs, fmt.Errorf("read built-in suites: %w", err))
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			s, err := loadFS(r.builtin, e.Name())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			add(s)
		}
	}
	for _, d := range r.dirs {
		for _, sd := range suiteDirs(d, &errs) {
			s, err := LoadDir(sd)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			add(s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

func suiteDirs(dir string, errs *[]error) []string {
	if _, err := os.Stat(filepath.Join(dir, SuiteFile)); err == nil {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			*errs = append(*errs, fmt.Errorf("read suites folder: %w", err))
		}
		return nil
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), SuiteFile)); e.IsDir() && err == nil {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// Get returns the suite called name, or the suite in folder name when name
// is a path to a suite folder or its suite.yaml.
func (r *Registry) Get(name string) (*Suite, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.HasSuffix(name, ".yaml") || name == "." {
		return LoadDir(name)
	}
	all, err := r.List()
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	msg := fmt.Errorf("no suite named %q; known suites: %s (see `frontier bench list`)", name, strings.Join(names, ", "))
	if err != nil {
		return nil, errors.Join(msg, err)
	}
	return nil, msg
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
