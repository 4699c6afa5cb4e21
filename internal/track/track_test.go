package track

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
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
		{"unknown key", strings.Replace(good, "  vocab_size: 256", "  vocab_size: 256\n  vocab: 12", 1), []string{"vocab", "unknown field"}},
		{"wrong type", strings.Replace(good, "val_tokens: 4096", "val_tokens: many", 1), []string{"val_tokens"}},
		{"bad duration", strings.Replace(good, "full_run: 5m", "full_run: five", 1), []string{"five", "90s or 5m"}},
		{"not a multiple", strings.Replace(good, "val_tokens: 4096", "val_tokens: 4000", 1), []string{"track.yaml:10:15: data.val_tokens", "multiple of val_seq_len"}},
		{"bos out of range", strings.Replace(good, "bos_id: 255", "bos_id: 300", 1), []string{"track.yaml:9:11: data.bos_id"}},
		{"bad hash", strings.Replace(good, "sha256: \"00000000000000000000000000000000000000000000000000000000000000aa\"", "sha256: abc", 1), []string{"data.shards[0].sha256", "64 lower-case hex"}},
		{"target under floor", strings.Replace(good, "target_val_loss: 2.0", "target_val_loss: 1.0", 1), []string{"target_val_loss", "loss floor"}},
		{"missing name", strings.Replace(good, "name: good\n", "", 1), []string{"name: required"}},
		{"cuda without gpus", strings.Replace(good, "device: cpu", "device: cuda", 1), []string{"hardware.gpus"}},
		{"profile window", strings.Replace(good, "profile_steps: [3, 5]", "profile_steps: [5, 3]", 1), []string{"telemetry.profile_steps"}},
		{"several errors", strings.Replace(strings.Replace(good, "bos_id: 255", "bos_id: 300", 1), "full_run: 5m", "full_run: 0s", 1), []string{"data.bos_id", "limits.full_run"}},
		{"max noise", good + "verification:\n  max_noise: -0.1\n", []string{"verification.max_noise", "-0.1", "[0, 1)"}},
		{"empty", "", []string{"empty"}},
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
