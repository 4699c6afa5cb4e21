package bench

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/fsr"
)

const goodSuite = `name: mini
track: tiny
records:
  - {id: r0, program: r0.py, time_ms: 1000}
  - {id: r1, program: r1.py, time_ms: 800}
tasks:
  - start: r0
    goal: r1
    hints: {pseudocode: h1.txt, description: h2.txt, paper: h3.txt}
    diff: d.txt
`

// writeSuite writes a suite folder with its files and returns it.
func writeSuite(t *testing.T, yaml string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SuiteFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var miniFiles = map[string]string{"r0.py": "print(0)\n", "r1.py": "print(1)\n", "h1.txt": "pseudo", "h2.txt": "words",
	"h3.txt": "paper", "d.txt": "--- a\n+++ b\n"}

func TestLoadDir(t *testing.T) {
	dir := writeSuite(t, goodSuite, miniFiles)
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	task, err := s.Task("r0-r1")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := s.HintsFor(task, HintLevels{1, 3})
	if err != nil || len(hs) != 2 || hs[0].Text != "pseudo" || hs[1].Name != "paper" {
		t.Errorf("HintsFor = %+v, %v", hs, err)
	}
	if d, err := s.GroundTruth(task); err != nil || !strings.HasPrefix(d, "--- a") {
		t.Errorf("GroundTruth = %q, %v", d, err)
	}
	if p, err := s.Program("r1"); err != nil || string(p) != "print(1)\n" {
		t.Errorf("Program = %q, %v", p, err)
	}
	h1, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "h2.txt"), []byte("other words"), 0o644)
	if h2, _ := s.Hash(); h2 == h1 {
		t.Error("the suite's hash does not change with a hint file")
	}
	if got := s.TrackOf(&s.Records[0]); got != "tiny" {
		t.Errorf("TrackOf = %q", got)
	}
	s.Records[0].Track = "tracks/r0"
	if got := s.TrackOf(&s.Records[0]); got != filepath.Join(dir, "tracks", "r0") {
		t.Errorf("TrackOf a folder = %q", got)
	}
	reg := NewRegistry(nil, filepath.Dir(dir))
	if _, tk, err := reg.GetTask(dir + "/r0-r1"); err != nil || tk == nil || tk.Goal != "r1" {
		t.Errorf("GetTask(folder/task) = %v, %v", tk, err)
	}
	if s2, err := reg.Get("mini"); err != nil || s2.Name != "mini" {
		t.Errorf("Get by name: %v", err)
	}
}

// TestParseErrors: every problem is reported, each at its file:line:col.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown keys", "name: x\ntrack: tiny\nrecordz: []\ntasks:\n  - {start: a, goal: b, hintz: 1}\n",
			[]string{"suite.yaml:3:1", "recordz", "suite.yaml:5:"}},
		{"bad values", `name: Bad Name
track: tiny
records:
  - {id: r0, program: ../r0.py, time_ms: 0}
  - {id: r0, program: r1.py, time_ms: 5}
tasks:
  - {start: r0, goal: r9, diff: /etc/passwd}
`, []string{"suite.yaml:1:7: name", "suite.yaml:4:23: records[0].program", "records[0].time_ms", "suite.yaml:5:10: records[1].id",
			"suite.yaml:7:", "tasks[0].goal", `"r9": no record`, "tasks[0].diff"}},
		{"goal before start", "name: x\ntrack: t\nrecords:\n  - {id: a, program: a.py, time_ms: 2}\n  - {id: b, program: b.py, time_ms: 1}\ntasks:\n  - {start: b, goal: a}\n",
			[]string{"suite.yaml:7:", "comes before its start"}},
		{"wrong type", "name: x\ntrack: t\nrecords:\n  - {id: a, time_ms: fast}\n", []string{"suite.yaml:4:"}},
		{"bad noise", "name: x\ntrack: t\nrecords:\n  - {id: a, time_ms: 2, runs: -1}\n  - {id: b, time_ms: 1, time_sd_ms: 0.5, runs: 1}\n  - {id: c, time_ms: 1, time_sd_ms: -1}\n",
			[]string{"records[0].runs", "records[1].time_sd_ms", "needs runs: 2 or more", "records[2].time_sd_ms"}},
		{"empty", "", []string{"empty"}},
	}
	for _, c := range cases {
		_, err := Parse("suite.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
}

func TestLoadDirMissingFile(t *testing.T) {
	files := map[string]string{"r0.py": "x", "r1.py": "y", "h1.txt": "p", "h2.txt": "w", "d.txt": "d"} // no h3.txt
	_, err := LoadDir(writeSuite(t, goodSuite, files))
	if err == nil || !strings.Contains(err.Error(), "h3.txt") {
		t.Errorf("a missing hint file: %v", err)
	}
}

// A suite folder may come from anyone: what it names is printed, put into
// prompts and run, so only regular files inside it are read.
func TestLoadDirHostileFiles(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, p string){
		"symlink out": func(t *testing.T, p string) {
			if err := os.Symlink("/etc/passwd", p); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"huge": func(t *testing.T, p string) {
			if err := os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range miniFiles {
				if k != "h2.txt" {
					files[k] = v
				}
			}
			dir := writeSuite(t, goodSuite, files)
			plant(t, filepath.Join(dir, "h2.txt"))
			done := make(chan error, 1)
			go func() {
				s, err := LoadDir(dir)
				if err == nil {
					_, err = s.ReadFile("h2.txt")
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "h2.txt") {
					t.Errorf("got %v, want an error naming h2.txt", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading the suite hangs")
			}
		})
	}
}

func TestParseHints(t *testing.T) {
	for in, want := range map[string]string{"": "none", "none": "none", "0": "none", "1": "1", "3": "3", "1+2": "1+2",
		"2+1": "1+2", "123": "1+2+3", "1+2+3": "1+2+3", "L2": "2"} {
		h, err := ParseHints(in)
		if err != nil || h.String() != want {
			t.Errorf("ParseHints(%q) = %v, %v; want %s", in, h, err, want)
		}
	}
	for _, in := range []string{"4", "1+1", "x", "1+"} {
		if _, err := ParseHints(in); err == nil {
			t.Errorf("ParseHints(%q) accepted", in)
		}
	}
	for _, s := range fsr.HintSettings {
		if h, err := ParseHints(s); err != nil || h.String() != s {
			t.Errorf("the paper's setting %q reads as %v, %v", s, h, err)
		}
	}
}
