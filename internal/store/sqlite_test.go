package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// newDB makes a database with a few programs and an evaluation, closed.
func newDB(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := open(ctx, path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		if _, err := s.PutProgram(ctx, []byte(fmt.Sprintf("%05d", i)+strings.Repeat("x", 4000)), ""); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := s.PutProgram(ctx, []byte("p"), "")
	e := &Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th"}
	if err := s.CreateEvaluation(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Verdict = "acceptable"
	if err := s.FinishEvaluation(ctx, e, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
}

// A database that exists is never re-created or used damaged: each kind
// of damage is said, with what to do, and the file is left as it was.
func TestOpenDamaged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	newDB(t, good)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), b...)
	for i := 8192; i < len(corrupt)-4096; i++ { // pages past the schema
		corrupt[i] = 0xAB
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":         {nil, "it is empty (0 bytes)"},
		"truncated":     {b[:len(b)/2], "it is truncated: it holds"},
		"header only":   {b[:60], "less than a SQLite database's header"},
		"not sqlite":    {[]byte(strings.Repeat("hello ", 100)), "not a SQLite database"},
		"corrupt pages": {corrupt, "SQLite finds it damaged"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".db")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := open(context.Background(), path, Self())
			if err == nil {
				// Damage past the schema shows when the pages are read.
				_, err = s.Evaluations(context.Background(), Filter{})
				if err == nil {
					err = s.write(context.Background(), func() error {
						_, err := s.db.Exec(`UPDATE programs SET size = size + 1`)
						return err
					})
				}
				s.Close()
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Restore it from a backup") {
				t.Fatalf("Open = %v, want ErrDamaged saying %q and what to do", err, c.want)
			}
			after, _ := os.ReadFile(path)
			if string(after) != string(c.data) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// The database holds every program, prompt and answer: it is created
// private, and complete (never a half-made file).
func TestOpenPrivate(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(home, "frontier.db")
	s, err := open(context.Background(), path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.PutProgram(context.Background(), []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{home: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600, path + "-reserve": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", filepath.Base(p), fi.Mode().Perm(), want)
		}
	}
	if fi, err := os.Stat(path + "-reserve"); err != nil || fi.Size() != ReserveBytes {
		t.Errorf("reserve: %v, %v", fi, err)
	}
	left, _ := filepath.Glob(filepath.Join(home, "*.new-*"))
	if len(left) > 0 {
		t.Errorf("creation left %v behind", left)
	}
}

// readOnlyEnv names the database the read-only helper opens.
const readOnlyEnv = "FRONTIER_STORE_READONLY"

// A read-only home: the commands that only read work; a write says why
// it cannot be done. Root ignores file permissions, so as root the check
// runs in a helper process as nobody.
func TestOpenReadOnly(t *testing.T) {
	if path := os.Getenv(readOnlyEnv); path != "" {
		checkReadOnly(t, path)
		return
	}
	base := t.TempDir()
	home := filepath.Join(base, "home")
	path := filepath.Join(home, "frontier.db")
	newDB(t, path)
	os.Remove(path + "-reserve")
	for _, p := range []string{filepath.Dir(base), base} {
		os.Chmod(p, 0o755) // let the helper's user reach it
	}
	os.Chmod(path, 0o444)
	os.Chmod(home, 0o555)
	t.Cleanup(func() { os.Chmod(home, 0o755) })
	if os.Geteuid() != 0 {
		checkReadOnly(t, path)
		return
	}
	// The test binary's own folder is private to root: run a copy.
	bin := filepath.Join(base, "store.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := inHelper(bin, "TestOpenReadOnly", readOnlyEnv+"="+path,
		&syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	if err != nil || !strings.Contains(string(out), "--- PASS: TestOpenReadOnly") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// inHelper runs test again, alone, in a helper process of the test binary
// bin with env set (which tells the test it is the helper) and attr, and
// returns what it printed.
func inHelper(bin, test, env string, attr *syscall.SysProcAttr) ([]byte, error) {
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = attr
	return cmd.CombinedOutput()
}

func checkReadOnly(t *testing.T, path string) {
	ctx := context.Background()
	s, err := open(ctx, path, Self())
	if err != nil {
		t.Fatalf("Open on a read-only home: %v", err)
	}
	defer s.Close()
	if !s.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	if list, err := s.Evaluations(ctx, Filter{}); err != nil || len(list) != 1 {
		t.Errorf("reading: %d evaluations, %v", len(list), err)
	}
	if _, err := s.Runs(ctx); err != nil {
		t.Errorf("reading runs: %v", err)
	}
	_, err = s.PutProgram(ctx, []byte("new"), "")
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "--home") {
		t.Errorf("a write: %v, want ErrReadOnly saying what to do", err)
	}
	if _, err := os.Stat(path + "-reserve"); err == nil {
		t.Error("a reserve was made in a read-only home")
	}
}
