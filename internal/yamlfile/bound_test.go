package yamlfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostile are inputs that made the decoder run away; each must be refused
// by Check, cheaply.
var hostile = []struct {
	name string
	src  string
	want string // in the error
}{
	// The issue's: 208 KB nested 100,000 levels deep.
	{"flow sequences", "name: x\nreference: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", "f.yaml:2:75: reference: nested deeper than 64 levels"},
	{"flow mappings", "a: " + strings.Repeat("{a: ", 50000) + "1" + strings.Repeat("}", 50000) + "\n", "f.yaml:1:"},
	{"compact sequences", "a:\n" + strings.Repeat("- ", 100000) + "x\n", "f.yaml:2:"},
	{"indented mappings", deepIndent(70), "nested deeper than 64 levels"},
	{"anchored", "a: &x " + strings.Repeat("[", 100000) + "\n", "nested deeper"},
	{"too large", "a: \"" + strings.Repeat("x", MaxBytes) + "\"\n", "more than the 256 KiB"},
}

func deepIndent(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

func TestCheckRefusesHostileInput(t *testing.T) {
	for _, c := range hostile {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(c.src)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := Check("f.yaml", src)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error with %q", err, c.want)
			}
			// The first look allocates nothing: what is measured is the
			// error and its message.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
				t.Errorf("Check allocated %d bytes for a %d-byte file", alloc, len(src))
			}
			if took > time.Second { // milliseconds, on a busy machine too
				t.Errorf("Check took %v", took)
			}
		})
	}
}

// Inputs the first look cannot see (they hide in what it takes for a
// quoted scalar or a block scalar) are refused by the exact count, at a
// cost linear in the file.
func TestCheckExactCount(t *testing.T) {
	cases := map[string]string{
		// The first look skips lines more indented than a block scalar's
		// indicator; the key's own column is what counts.
		"after a block scalar": "- key: |\n  " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + ": 1\n",
	}
	for name, src := range cases {
		if _, _, deep := quickDepth([]byte(src), MaxDepth); deep {
			t.Errorf("%s: the first look already refuses it; the test means to reach the exact count", name)
		}
		if err := Check("f.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
}

func TestCheckAliases(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		laughs += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	start := time.Now()
	err := Check("f.yaml", []byte(laughs))
	if err == nil || !strings.Contains(err.Error(), "aliases expand") {
		t.Fatalf("Check = %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Check took %v", took)
	}
	// A few aliases, as a config might use them, are fine.
	ok := "base: &base {weight: 1, temperature: 0.7}\nmodels:\n  a: *base\n  b:\n    <<: *base\n    weight: 2\n"
	if err := Check("f.yaml", []byte(ok)); err != nil {
		t.Errorf("Check(%q) = %v", ok, err)
	}
}

// What real files hold passes, whatever their quotes, comments and block
// scalars hold.
func TestCheckAcceptsOrdinaryFiles(t *testing.T) {
	srcs := []string{
		"description: |\n  " + strings.Repeat("[", 100) + "\n  more text\nname: x\n",
		"a: \"" + strings.Repeat("[", 100) + "\"\nb: '" + strings.Repeat("{", 100) + "'\n",
		"a: x # " + strings.Repeat("[", 100) + "\n",
		"url: http://x/[a]\n" + strings.Repeat("note: x[0\n", 100),
		"shards:\n" + strings.Repeat("  - {file: f.bin, tokens: 100, sha256: \"ab\"}\n", 1000),
		"---\na: 1\n---\nb: [1, [2, [3]]]\n",
		deepIndent(40),
	}
	for _, src := range srcs {
		if err := Check("f.yaml", []byte(src)); err != nil {
			t.Errorf("Check(%.60q) = %v", src, err)
		}
	}
	for _, dir := range []string{"../../tracks"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(f, b); err != nil {
				t.Errorf("Check(%s) = %v", f, err)
			}
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("a: 1\n"), 0o600)
	if b, err := ReadFile(good); err != nil || string(b) != "a: 1\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, MaxBytes+1), 0o600)
	if _, err := ReadFile(big); err == nil || !strings.Contains(err.Error(), "more than the 256 KiB") {
		t.Errorf("a large file: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a named pipe, not a regular file") {
			t.Errorf("a named pipe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile waits on a named pipe")
	}
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), "a folder") {
		t.Errorf("a folder: %v", err)
	}
}
