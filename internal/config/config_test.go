package config

import (
	"fmt"
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

// max_program_size takes a size with a unit; without it, programs are
// bounded at 4 MiB.
func TestMaxProgramSize(t *testing.T) {
	if c := Default(); c.MaxProgramSize != 4<<20 {
		t.Errorf("default max_program_size %d", c.MaxProgramSize)
	}
	c, err := Parse("frontier.yaml", []byte("max_program_size: 512KiB\n"))
	if err != nil || c.MaxProgramSize != 512<<10 {
		t.Errorf("max_program_size: 512KiB: %d, %v", c.MaxProgramSize, err)
	}
}

// A file of many unknown keys (the wrong file, or one a program wrote)
// lists the first of them and counts the rest, not thousands of lines.
func TestUnknownKeysCapped(t *testing.T) {
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "key%d: 1\n", i)
	}
	_, err := Parse("frontier.yaml", []byte(b.String()))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 21 || !strings.HasPrefix(lines[0], "frontier.yaml:1:1: key0: unknown key") ||
		lines[20] != "frontier.yaml: and 480 more (500 in all): fix the ones above first; this may be the wrong file" {
		t.Errorf("%d lines, the first %q, the last %q", len(lines), lines[0], lines[len(lines)-1])
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
		"max_program_size: 0\n":    "max_program_size: 0 bytes: must be more than 0",
		"max_program_size: 1GiB\n": "at most 256MiB",
		"max_program_size: big\n":  "invalid size",
	}
	for src, want := range cases {
		_, err := Parse("frontier.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", src, err, want)
		}
	}
}

// Every problem is reported, each as file:line:col: key: message, in the
// order of the file: unknown keys (all of them, at every depth), values of
// the wrong type, invalid values.
func TestParseErrorsLocated(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{"home: x\n\ndatabase: y\nllm:\n  nonsense: 1\nevolve:\n  budget:\n    max_usdd: 3\n", []string{
			"frontier.yaml:3:1: database: unknown key (the keys here: home, db,",
			"frontier.yaml:5:3: llm.nonsense: unknown key",
			"frontier.yaml:8:5: evolve.budget.max_usdd: unknown key (the keys under evolve.budget: max_iterations,",
		}},
		{"python: [1, 2]\n", []string{"frontier.yaml:1:9: python: cannot unmarshal"}},
		{"sandbox: docker\n", []string{`frontier.yaml:1:10: sandbox: "docker": use auto, bwrap, landlock or none`}},
		{"evolve:\n  islands: -1\n  objective: speed\n", []string{
			"frontier.yaml:2:12: evolve.islands: -1 is negative",
			`frontier.yaml:3:14: evolve.objective: "speed": use score`,
		}},
		{"llm:\n  models:\n    - spec: openai/gpt-5\n    - name: b\n", []string{
			"frontier.yaml:4:11: llm.models[1] (b): spec is missing",
		}},
		// Durations, sizes and whole numbers are located too, every one.
		{"llm:\n  retry:\n    max_backoff: 10000000h\n    initial_backoff: soon\nevolve:\n  islands: 2.5\n", []string{
			`frontier.yaml:3:18: llm.retry.max_backoff: "10000000h" is too long: the longest duration is 2562047h47m16s`,
			`frontier.yaml:4:22: llm.retry.initial_backoff: invalid duration "soon"`,
			"frontier.yaml:6:12: evolve.islands: 2.5: want a whole number",
		}},
		{"home: x\nllm: " + strings.Repeat("[", 100000) + "\n", []string{
			"frontier.yaml:2:69: llm: nested deeper than 64 levels",
		}},
	}
	for _, c := range cases {
		_, err := Parse("frontier.yaml", []byte(c.src))
		if err == nil {
			t.Errorf("%.80q: no error", c.src)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(c.want) {
			t.Errorf("%.80q: %d errors, want %d:\n%v", c.src, len(lines), len(c.want), err)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%.80q: error %d is %q, want it to start with %q", c.src, i+1, lines[i], w)
			}
		}
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
	// A file of comments only (or nothing) keeps every default.
	for _, src := range []string{"", "# home: elsewhere\n", "---\n"} {
		os.WriteFile("empty.yaml", []byte(src), 0o644)
		c, err := Load("empty.yaml")
		if d := Default(); err != nil || c.Home != d.Home || c.DB != d.DB || c.Sandbox != "auto" || c.MaxProgramSize != d.MaxProgramSize {
			t.Fatalf("a file of %q: %+v, %v", src, c, err)
		}
	}
	// Only a regular file of bounded size is read: /dev/zero would be
	// read forever, a named pipe would wait for a writer.
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
	os.WriteFile("big.yaml", []byte("a: \""+strings.Repeat("x", 300<<10)+"\"\n"), 0o644)
	if _, err := Load("big.yaml"); err == nil || !strings.Contains(err.Error(), "more than the 256 KiB") {
		t.Errorf("a large file: %v", err)
	}
}

// The state folders are made private: they hold every program, prompt and
// answer.
func TestMakeDirs(t *testing.T) {
	c := Default()
	c.SetHome(filepath.Join(t.TempDir(), "home"))
	c.RunsDir = filepath.Join(t.TempDir(), "elsewhere", "runs")
	if err := c.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{c.Home, c.DataDir, c.RunsDir, filepath.Dir(c.RunsDir)} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a folder 0700", d, fi.Mode(), err)
		}
	}
}

// The database is a SQLite file or a PostgreSQL URL: db: names it (a
// file relative to the config's folder), else FRONTIER_DB, else the home
// holds it; a named database stays where it is when the home moves.
func TestDatabaseLocation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frontier.yaml")
	t.Setenv("FRONTIER_HOME", "/tmp/fh-test")
	t.Setenv("FRONTIER_DB", "")
	pg := "postgres://team:secret@db.example:5432/frontier?sslmode=require"
	cases := []struct {
		src, env, want, file, name string
		homeMoves                  bool // --home moves it
	}{
		{"home: state\n", "", filepath.Join(dir, "state", "frontier.db"), filepath.Join(dir, "state", "frontier.db"), "", true},
		{"db: runs.db\n", "", filepath.Join(dir, "runs.db"), filepath.Join(dir, "runs.db"), "", false},
		{"db: sqlite:runs.db\n", "", filepath.Join(dir, "runs.db"), filepath.Join(dir, "runs.db"), "", false},
		{"db: " + pg + "\n", "", pg, "", "postgres://team:xxxxx@db.example:5432/frontier?sslmode=require", false},
		{"home: state\n", pg, pg, "", "", false},
		{"db: \"\"\n", pg, pg, "", "", false},
		{"db: \"\"\n", "", "/tmp/fh-test/frontier.db", "/tmp/fh-test/frontier.db", "", true},
		{"db: /abs/x.db\n", pg, "/abs/x.db", "/abs/x.db", "", false},
	}
	for _, c := range cases {
		t.Setenv("FRONTIER_DB", c.env)
		cfg, err := Parse(path, []byte(c.src))
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if cfg.DB != c.want || cfg.DBFile() != c.file {
			t.Errorf("%q with FRONTIER_DB=%q: db %q, file %q; want %q, %q", c.src, c.env, cfg.DB, cfg.DBFile(), c.want, c.file)
		}
		if c.name != "" && cfg.DBName() != c.name {
			t.Errorf("%q: named %q in messages, want %q", c.src, cfg.DBName(), c.name)
		}
		if strings.Contains(cfg.DBName(), "secret") {
			t.Errorf("%q: the password shows in %q", c.src, cfg.DBName())
		}
		cfg.SetHome("/elsewhere")
		want := c.want
		if c.homeMoves {
			want = "/elsewhere/frontier.db"
		}
		if cfg.DB != want {
			t.Errorf("%q with FRONTIER_DB=%q: after --home the database is %q, want %q", c.src, c.env, cfg.DB, want)
		}
	}
	t.Setenv("FRONTIER_DB", "")
	if _, err := Parse(path, []byte("db: mysql://x/y\n")); err == nil || !strings.Contains(err.Error(), "frontier.yaml:1:") || !strings.Contains(err.Error(), "unknown scheme") {
		t.Errorf("an unknown scheme: %v", err)
	}
}
