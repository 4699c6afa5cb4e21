// Package catalog finds the folders frontier runs from, tracks and
// suites alike: built-in ones in an fs.FS (one folder each) and the
// user's on disk, each folder made one by the file that describes it
// (track.yaml, suite.yaml). It lists them, finds one by name or by path,
// and says which folders do not load and why, so that a broken one hides
// no other. How a folder is read and checked stays with its kind.
package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Kind is what a catalog holds: how a folder of it is named and loaded.
type Kind[T any] struct {
	// Noun names one in messages: "track", "suite".
	Noun string
	// File is the file that makes a folder one: "track.yaml".
	File string
	// ListCommand lists them, for the error of a name not found.
	ListCommand string
	// LoadDir loads and checks the folder dir on disk, strictly: an
	// unknown key or a missing file is an error that says where.
	LoadDir func(dir string) (T, error)
	// LoadFS loads and checks the built-in folder dir of fsys.
	LoadFS func(fsys fs.FS, dir string) (T, error)
	// Name is a loaded one's name; Location says where it comes from,
	// for people ("built-in" or its folder).
	Name     func(T) string
	Location func(T) string
}

// Registry finds the folders of one kind: the built-in ones and those in
// the given folders on disk.
type Registry[T any] struct {
	kind    *Kind[T]
	builtin fs.FS
	dirs    []string
}

// New returns a registry over the built-in folders of builtin (nil for
// none) and dirs, each one folder of the kind or a folder of them.
func New[T any](kind *Kind[T], builtin fs.FS, dirs ...string) *Registry[T] {
	return &Registry[T]{kind: kind, builtin: builtin, dirs: dirs}
}

// List returns every one that loads, sorted by name, and an error for
// each that does not (a broken folder does not hide the others).
func (r *Registry[T]) List() ([]T, error) {
	k := r.kind
	var out []T
	var errs []error
	seen := map[string]T{}
	add := func(t T) {
		name := k.Name(t)
		if prev, ok := seen[name]; ok {
			errs = append(errs, fmt.Errorf("%s %q in %s has the same name as the one in %s: rename one of them", k.Noun, name, k.Location(t), k.Location(prev)))
			return
		}
		seen[name] = t
		out = append(out, t)
	}
	if r.builtin != nil {
		entries, err := fs.ReadDir(r.builtin, ".")
		if err != nil {
			errs = append(errs, fmt.Errorf("read built-in %ss: %w", k.Noun, err))
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			t, err := k.LoadFS(r.builtin, e.Name())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			add(t)
		}
	}
	for _, d := range r.dirs {
		for _, sd := range r.folders(d, &errs) {
			t, err := k.LoadDir(sd)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			add(t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return k.Name(out[i]) < k.Name(out[j]) })
	return out, errors.Join(errs...)
}

// folders returns dir itself when it is a folder of the kind, else its
// subfolders that are.
func (r *Registry[T]) folders(dir string, errs *[]error) []string {
	if _, err := os.Stat(filepath.Join(dir, r.kind.File)); err == nil {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			*errs = append(*errs, fmt.Errorf("read %ss folder: %w", r.kind.Noun, err))
		}
		return nil
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), r.kind.File)); e.IsDir() && err == nil {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// IsPath says whether a command line's arg names a folder (or its
// description file) rather than a name.
func IsPath(arg string) bool {
	return strings.ContainsRune(arg, filepath.Separator) || strings.HasSuffix(arg, ".yaml") || arg == "."
}

// Get returns the one called name, or the one in folder name when name is
// a path (see IsPath) to a folder or to its description file.
func (r *Registry[T]) Get(name string) (T, error) {
	if IsPath(name) {
		dir := name
		if strings.HasSuffix(name, ".yaml") {
			dir = filepath.Dir(name)
		}
		return r.kind.LoadDir(dir)
	}
	all, err := r.List()
	for _, t := range all {
		if r.kind.Name(t) == name {
			return t, nil
		}
	}
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = r.kind.Name(t)
	}
	msg := fmt.Errorf("no %s named %q; known %ss: %s (see `%s`)", r.kind.Noun, name, r.kind.Noun, strings.Join(names, ", "), r.kind.ListCommand)
	var zero T
	if err != nil {
		return zero, errors.Join(msg, err)
	}
	return zero, msg
}

// Find finds the one a command line names, the same way for every
// command that takes one: a path to a folder or to its description file;
// a name that is a folder here holding the description file (the folder
// wins over a built-in one of the same name: what is here is what was
// meant); else the name of a built-in or configured one.
func (r *Registry[T]) Find(arg string) (T, error) {
	if IsPath(arg) {
		return r.Get(arg)
	}
	if _, err := os.Stat(filepath.Join(arg, r.kind.File)); err == nil {
		return r.kind.LoadDir(arg)
	}
	t, err := r.Get(arg)
	if err != nil {
		if fi, serr := os.Stat(arg); serr == nil && fi.IsDir() {
			return t, fmt.Errorf("%w\nthe folder %s here is not a %s folder: it has no %s", err, arg, r.kind.Noun, r.kind.File)
		}
		return t, err
	}
	return t, nil
}
