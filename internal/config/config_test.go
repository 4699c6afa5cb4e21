package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaults(t *testing.T) {
	t.Setenv("FRONTIER_HOME", "/tmp/fh-test")
	c := Default()
	if c.Home != "/tmp/fh-test" || c.DB != "/tmp/fh-test/frontier.db" || c.DataDir != "/tmp/fh-test/data" || c.Sandbox != "auto" {
		t.Fatalf("defaults %+v", c)
	}
}

func TestParseResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frontier.yaml")
	c, err := Parse(path, []byte("home: state\nruns_dir: /abs/runs\ndata:\n  nanogpt: fineweb\ntracks_dirs: [mytracks]\npython: /usr/bin/python3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Home != filepath.Join(dir, "state") || c.DB != filepath.Join(dir, "state", "frontier.db") || c.RunsDir != "/abs/runs" {
		t.Fatalf("paths %+v", c)
	}
	if c.Data["nanogpt"] != filepath.Join(dir, "fineweb") || c.TracksDirs[0] != filepath.Join(dir, "mytracks") || c.Path != path {
		t.Fatalf("paths %+v", c)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"home: x\ndatabase: y\n":   "database",
		"sandbox: docker\n":        "use auto, bwrap, landlock or none",
		"python: [1, 2]\n":         "python",
		"tracks_dirs: notalist\n":  "tracks_dirs",
		"llm:\n  nonsense: 1\n":    "nonsense",
		"evolve:\n  nonsense: 1\n": "nonsense",
	}
	for src, want := range cases {
		_, err := Parse("frontier.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", src, err, want)
		}
	}
	// Unknown keys are located.
	_, err := Parse("frontier.yaml", []byte("home: x\n\ndatabase: y\n"))
	if err == nil || !strings.Contains(err.Error(), "[3:1]") {
		t.Errorf("unknown key not located: %v", err)
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("FRONTIER_CONFIG", "")
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	c, err := Load("")
	if err != nil || c.Path != "" {
		t.Fatalf("no file: %+v, %v", c, err)
	}
	os.WriteFile("frontier.yaml", []byte("home: here\n"), 0o644)
	c, err = Load("")
	if err != nil || c.Path != "frontier.yaml" || !strings.HasSuffix(c.Home, "here") {
		t.Fatalf("./frontier.yaml: %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("a missing explicit config is not an error")
	}
	os.WriteFile("empty.yaml", nil, 0o644)
	if _, err := Load("empty.yaml"); err != nil {
		t.Fatalf("an empty file: %v", err)
	}
}
