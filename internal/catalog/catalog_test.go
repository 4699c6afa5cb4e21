package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// thing is a folder whose thing.yaml holds its name; an empty one does
// not load.
type thing struct{ name, where string }

var things = &Kind[*thing]{
	Noun: "thing", File: "thing.yaml", ListCommand: "frontier thing list",
	LoadDir: func(dir string) (*thing, error) {
		b, err := os.ReadFile(filepath.Join(dir, "thing.yaml"))
		return parse(b, err, dir)
	},
	LoadFS: func(fsys fs.FS, dir string) (*thing, error) {
		b, err := fs.ReadFile(fsys, path.Join(dir, "thing.yaml"))
		return parse(b, err, "built-in")
	},
	Name:     func(t *thing) string { return t.name },
	Location: func(t *thing) string { return t.where },
}

func parse(b []byte, err error, where string) (*thing, error) {
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(string(b))
	if name == "" {
		return nil, errors.New(where + ": thing.yaml is empty")
	}
	return &thing{name: name, where: where}, nil
}

func writeThing(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "thing.yaml"), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRegistry(t *testing.T) {
	builtin := fstest.MapFS{
		"a/thing.yaml": {Data: []byte("a")},
		"b/thing.yaml": {Data: []byte("b")},
	}
	user := t.TempDir()
	writeThing(t, filepath.Join(user, "c"), "c")
	writeThing(t, filepath.Join(user, "dup"), "a")
	writeThing(t, filepath.Join(user, "broken"), "")
	single := filepath.Join(t.TempDir(), "d")
	writeThing(t, single, "d")
	r := New(things, builtin, user, single, filepath.Join(user, "missing"))

	all, err := r.List()
	var names []string
	for _, x := range all {
		names = append(names, x.name)
	}
	if got := strings.Join(names, ","); got != "a,b,c,d" {
		t.Errorf("List = %s, want a,b,c,d", got)
	}
	// A broken folder and a second of one name are each an error; neither
	// hides the others, and a folder that is not there is none.
	if err == nil || !strings.Contains(err.Error(), "thing.yaml is empty") ||
		!strings.Contains(err.Error(), `thing "a" in `+filepath.Join(user, "dup")+" has the same name as the one in built-in") {
		t.Errorf("List error = %v", err)
	}
	if x, err := r.Get("c"); err != nil || x.name != "c" {
		t.Errorf("Get(c) = %v, %v", x, err)
	}
	if x, err := r.Get(filepath.Join(user, "c", "thing.yaml")); err != nil || x.name != "c" {
		t.Errorf("Get(its thing.yaml) = %v, %v", x, err)
	}
	if _, err := r.Get("zz"); err == nil || !strings.Contains(err.Error(), `no thing named "zz"; known things: a, b, c, d (see `+"`frontier thing list`)") {
		t.Errorf("Get(zz) error = %v", err)
	}
}

// Find takes a folder here over a built-in one of the same name, and says
// so when a folder here by that name is not a thing.
func TestFindFolderHere(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeThing(t, "a", "local-a")
	if err := os.Mkdir("zz", 0o755); err != nil {
		t.Fatal(err)
	}
	r := New(things, fstest.MapFS{"a/thing.yaml": {Data: []byte("a")}})
	if x, err := r.Find("a"); err != nil || x.name != "local-a" {
		t.Errorf("Find(a) = %v, %v; want the folder here", x, err)
	}
	if _, err := r.Find("zz"); err == nil || !strings.Contains(err.Error(), "the folder zz here is not a thing folder: it has no thing.yaml") {
		t.Errorf("Find(zz) error = %v", err)
	}
}
