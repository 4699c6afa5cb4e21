package track

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/sys/unix"
)

func readGood(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/good/track.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseGood(t *testing.T) {
	s, err := Parse("track.yaml", readGood(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "good" || s.Limits.FullRun.D() != 5*time.Minute || s.Limits.FastCheck.D() != 30*time.Second {
		t.Fatalf("parsed %+v", s)
	}
	// Defaults.
	if s.Contract != "harness" || s.Launcher.Kind != "python" || s.Telemetry.TopK != 15 || s.Verification.Alpha != 0.01 || s.Data.ValBatchSeqs != 16 {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

func TestParseErrors(t *testing.T) {
	good := string(readGood(t))
	cases := []struct {
		name string
		src  string
		want []string // substrings of the error
	}{
		{"unknown key", strings.Replace(good, "  vocab_size: 256", "  vocab_size: 256\n  vocab: 12", 1), []string{"track.yaml:9:3: data.vocab: unknown key"}},
		{"wrong type", strings.Replace(good, "val_tokens: 4096", "val_tokens: many", 1), []string{"val_tokens"}},
		{"bad duration", strings.Replace(good, "full_run: 5m", "full_run: five", 1), []string{`track.yaml:19:13: limits.full_run: invalid duration "five"`, "90s, 5m"}},
		{"long duration", strings.Replace(good, "full_run: 5m", "full_run: 10000000h", 1), []string{`track.yaml:19:13: limits.full_run: "10000000h" is too long: the longest duration is 2562047h47m16s`}},
		{"large size", strings.Replace(good, "full_run: 5m", "full_run: 5m\n  disk: 1e30GiB", 1), []string{`track.yaml:20:9: limits.disk: size "1e30GiB" is too large`}},
		{"bad size", strings.Replace(good, "full_run: 5m", "full_run: 5m\n  memory: NaN", 1), []string{`track.yaml:20:11: limits.memory: invalid size "NaN"`}},
		{"fraction", strings.Replace(good, "telemetry:\n", "telemetry:\n  top_k: 15.9\n", 1), []string{"track.yaml:22:10: telemetry.top_k: 15.9: want a whole number"}},
		{"not a multiple", strings.Replace(good, "val_tokens: 4096", "val_tokens: 4000", 1), []string{"track.yaml:10:15: data.val_tokens", "multiple of val_seq_len"}},
		{"bos out of range", strings.Replace(good, "bos_id: 255", "bos_id: 300", 1), []string{"track.yaml:9:11: data.bos_id"}},
		{"bad hash", strings.Replace(good, "sha256: \"00000000000000000000000000000000000000000000000000000000000000aa\"", "sha256: abc", 1), []string{"data.shards[0].sha256", "64 lower-case hex"}},
		{"target under floor", strings.Replace(good, "target_val_loss: 2.0", "target_val_loss: 1.0", 1), []string{"target_val_loss", "loss floor"}},
		{"missing name", strings.Replace(good, "name: good\n", "", 1), []string{"name: required"}},
		{"cuda without gpus", strings.Replace(good, "device: cpu", "device: cuda", 1), []string{"hardware.gpus"}},
		{"unknown clock", strings.Replace(good, "threads: 2", "threads: 2\n  clock: gpu", 1), []string{"hardware.clock", `"gpu"`, "wall (the default) or cpu"}},
		{"cpu clock of a log track", strings.Replace(strings.Replace(good, "threads: 2", "threads: 2\n  clock: cpu", 1), "name: good\n", "name: good\ncontract: log\n", 1), []string{"hardware.clock", "harness contract"}},
		{"profile window", strings.Replace(good, "profile_steps: [3, 5]", "profile_steps: [5, 3]", 1), []string{"telemetry.profile_steps"}},
		{"several errors", strings.Replace(strings.Replace(good, "bos_id: 255", "bos_id: 300", 1), "full_run: 5m", "full_run: 0s", 1), []string{"data.bos_id", "limits.full_run"}},
		{"max noise", good + "verification:\n  max_noise: -0.1\n", []string{"verification.max_noise", "-0.1", "[0, 1)"}},
		{"empty", "", []string{"empty"}},
		// Values that were accepted and should not be.
		{"threads", strings.Replace(good, "threads: 2", "threads: 100000", 1), []string{"track.yaml:25:12: hardware.threads: 100000"}},
		{"train outside", strings.Replace(good, "train: tiny_train_*.bin", "train: ../../../../etc/*", 1), []string{"track.yaml:6:10: data.train", "without slashes"}},
		{"bad glob", strings.Replace(good, "train: tiny_train_*.bin", "train: tiny_[", 1), []string{"data.train", "not a valid pattern"}},
		{"val folder", strings.Replace(good, "val: tiny_val_000000.bin", `val: ".."`, 1), []string{"data.val", "not a folder"}},
		{"shard folder", strings.Replace(good, "- file: tiny_val_000000.bin", `- file: ".."`, 1), []string{"track.yaml:13:13: data.shards[0].file", "not a folder"}},
		{"builtin elsewhere", strings.Replace(good, "dir: tiny", "builtin: tiny\n  dir: /tmp/elsewhere", 1), []string{"track.yaml:6:8: data.dir", "under its data root"}},
		{"dir escapes", strings.Replace(good, "dir: tiny", "builtin: tiny\n  dir: ../../x", 1), []string{"data.dir", "without '..'"}},
		{"long limit", strings.Replace(good, "full_run: 5m", "full_run: 2000000h", 1), []string{"limits.full_run: 2000000h0m0s: at most 168h0m0s"}},
		{"gpus", strings.Replace(good, "device: cpu", "device: cuda\n  gpus: 1000", 1), []string{"hardware.gpus", "at most 64"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("track.yaml", []byte(c.src))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	builtin := fstest.MapFS{
		"good/track.yaml": {Data: readGood(t)},
		"good/train.py":   {Data: []byte("print(1)\n")},
	}
	user := t.TempDir()
	other := filepath.Join(user, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "track.yaml"), []byte(strings.Replace(string(readGood(t)), "name: good", "name: other", 1)), 0o644)
	os.WriteFile(filepath.Join(other, "train.py"), []byte("print(2)\n"), 0o644)

	r := NewRegistry(builtin, user)
	specs, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "good" || !specs[0].Builtin || specs[1].Name != "other" || specs[1].Dir != other {
		t.Fatalf("List = %+v", specs)
	}
	s, err := r.Get("other")
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.ReferenceSource()
	if err != nil || string(src) != "print(2)\n" {
		t.Fatalf("reference = %q, %v", src, err)
	}
	if g, _ := r.Get("good"); g == nil {
		t.Fatal("built-in track not found")
	} else if src, _ := g.ReferenceSource(); string(src) != "print(1)\n" {
		t.Fatalf("built-in reference = %q", src)
	}
	if _, err := r.Get("nope"); err == nil || !strings.Contains(err.Error(), "good, other") {
		t.Fatalf("unknown track error: %v", err)
	}
	if s, err := r.Get(other); err != nil || s.Name != "other" {
		t.Fatalf("Get by path: %v", err)
	}

	// A clash with a built-in name is reported, and the broken track does
	// not hide the others.
	os.WriteFile(filepath.Join(other, "track.yaml"), readGood(t), 0o644)
	specs, err = r.List()
	if err == nil || !strings.Contains(err.Error(), "same name") || len(specs) != 1 {
		t.Fatalf("clash: %v, %d specs", err, len(specs))
	}
}

// A track folder may come from anyone: its files are read only when they
// are regular files inside it, of bounded size, and reading never waits.
func TestHostileTrackFiles(t *testing.T) {
	cases := map[string]struct {
		make func(t *testing.T, dir string)
		want string
	}{
		"reference links out": {func(t *testing.T, dir string) {
			os.Symlink("/etc/passwd", filepath.Join(dir, "train.py"))
		}, "path escapes from parent"},
		"reference links to a device": {func(t *testing.T, dir string) {
			os.Symlink("/dev/zero", filepath.Join(dir, "train.py"))
		}, "path escapes"},
		"reference is a device": {func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "track.yaml"), []byte(strings.Replace(string(readGood(t)), "reference: train.py", "reference: dev", 1)), 0o600)
			if err := syscall.Mknod(filepath.Join(dir, "dev"), syscall.S_IFCHR|0o600, int(unix.Mkdev(1, 5))); err != nil {
				t.Skip("cannot make a device here:", err)
			}
		}, "a character device, not a regular file"},
		"reference is a named pipe": {func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "train.py"))
		}, "a named pipe, not a regular file"},
		"spec is a named pipe": {func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "track.yaml"))
			mkfifo(t, filepath.Join(dir, "track.yaml"))
		}, "a named pipe, not a regular file"},
		"spec links out": {func(t *testing.T, dir string) {
			other := t.TempDir()
			os.WriteFile(filepath.Join(other, "track.yaml"), readGood(t), 0o600)
			os.Remove(filepath.Join(dir, "track.yaml"))
			os.Symlink(filepath.Join(other, "track.yaml"), filepath.Join(dir, "track.yaml"))
		}, "path escapes"},
		"reference too large": {func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "train.py"), make([]byte, MaxFileBytes+1), 0o600)
		}, "more than the 1 MiB"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			user := t.TempDir()
			dir := filepath.Join(user, "hostile")
			os.Mkdir(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "track.yaml"), readGood(t), 0o600)
			c.make(t, dir)
			done := make(chan error, 1)
			go func() {
				// Listing reads every track, as every command that names
				// one does.
				_, err := NewRegistry(nil, user).List()
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("List = %v, want an error with %q", err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("listing the tracks hangs")
			}
		})
	}
	// A link that stays inside the folder is fine.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "track.yaml"), readGood(t), 0o600)
	os.WriteFile(filepath.Join(dir, "real.py"), []byte("print(1)\n"), 0o600)
	os.Symlink("real.py", filepath.Join(dir, "train.py"))
	if _, err := LoadDir(dir); err != nil {
		t.Errorf("a link inside the folder: %v", err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
}

func TestMissingReference(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "track.yaml"), readGood(t), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "reference program train.py is missing") {
		t.Fatalf("missing reference: %v", err)
	}
	if _, err := LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a track folder") {
		t.Fatalf("empty folder: %v", err)
	}
}

// TestBuiltinData checks that a built-in corpus needs no pins and no
// floor (both are per installation), and that a spec that still has them
// loads, with a note that they are superseded.
func TestBuiltinData(t *testing.T) {
	good := string(readGood(t))
	builtin := strings.Replace(good, "  dir: tiny\n", "  builtin: tiny\n", 1)
	start, end := strings.Index(builtin, "  shards:\n"), strings.Index(builtin, "target_val_loss:")
	bare := builtin[:start] + builtin[end:]
	s, err := Parse("track.yaml", []byte(bare))
	if err != nil {
		t.Fatalf("a built-in track without pins or floor: %v", err)
	}
	if s.Data.Builtin != "tiny" || len(s.Data.Shards) != 0 || s.Data.LossFloor != 0 || len(s.Notes()) != 0 {
		t.Errorf("parsed %+v, notes %q", s.Data, s.Notes())
	}
	s, err = Parse("track.yaml", []byte(builtin))
	if err != nil {
		t.Fatalf("a built-in track with pins and a floor: %v", err)
	}
	notes := strings.Join(s.Notes(), "\n")
	for _, want := range []string{"data.shards: ignored", "data.loss_floor: superseded", "per installation", "this installation"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if s, err := Parse("track.yaml", readGood(t)); err != nil || len(s.Notes()) != 0 {
		t.Errorf("pins of a track's own data are no note: %v, %q", err, s.Notes())
	}
}
