package track

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

// Registry finds tracks: built-in ones in an fs.FS (one folder per track,
// each with track.yaml) and user ones in folders on disk.
type Registry struct {
	builtin fs.FS
	dirs    []string
}

// NewRegistry returns a registry over the built-in tracks and the user's
// track folders. Each folder in dirs is either a track folder itself (it has
// track.yaml) or holds track folders.
func NewRegistry(builtin fs.FS, dirs ...string) *Registry {
	return &Registry{builtin: builtin, dirs: dirs}
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

// List returns every track that loads, sorted by name, and an error for each
// that does not (a broken user track does not hide the others).
func (r *Registry) List() ([]*Spec, error) {
	var specs []*Spec
	var errs []error
	byName := map[string]*Spec{}
	add := func(s *Spec) {
		if prev, ok := byName[s.Name]; ok {
			errs = append(errs, fmt.Errorf("track %q in %s has the same name as the one in %s: rename one of them", s.Name, s.Location(), prev.Location()))
			return
		}
		byName[s.Name] = s
		specs = append(specs, s)
	}
	if r.builtin != nil {
		entries, err := fs.ReadDir(r.builtin, ".")
		if err != nil {
			errs = append(errs, fmt.Errorf("read built-in tracks: %w", err))
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
	for _, dir := range r.dirs {
		for _, td := range trackDirs(dir, &errs) {
			s, err := LoadDir(td)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			add(s)
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, errors.Join(errs...)
}

// trackDirs returns dir itself when it is a track folder, else its
// subfolders that are.
func trackDirs(dir string, errs *[]error) []string {
	if _, err := os.Stat(filepath.Join(dir, SpecFile)); err == nil {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			*errs = append(*errs, fmt.Errorf("read tracks folder: %w", err))
		}
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), SpecFile)); err == nil {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// Get returns the track called name, or the track in folder name when name
// is a path to a track folder or its track.yaml.
func (r *Registry) Get(name string) (*Spec, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.HasSuffix(name, ".yaml") {
		dir := name
		if strings.HasSuffix(name, ".yaml") {
			dir = filepath.Dir(name)
		}
		return LoadDir(dir)
	}
	specs, err := r.List()
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	msg := fmt.Errorf("no track named %q; known tracks: %s (see `frontier track list`)", name, strings.Join(names, ", "))
	if err != nil {
		return nil, errors.Join(msg, err)
	}
	return nil, msg
}
