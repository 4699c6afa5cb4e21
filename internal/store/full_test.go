//go:build linux

package store

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDiskEnv names the folder the full-disk helper mounts a small tmpfs
// on.
const fullDiskEnv = "FRONTIER_STORE_FULLDISK"

// A program that fills the disk must still end in a verdict that is
// stored: the store gives up its reserve for it. The check needs a small
// file system of its own: a tmpfs, mounted by a helper process in a mount
// namespace of its own (as root, or in a user namespace).
func TestFullDiskKeepsTheVerdict(t *testing.T) {
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		checkFullDisk(t, dir)
		return
	}
	dir := t.TempDir()
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := inHelper(os.Args[0], "TestFullDiskKeepsTheVerdict", fullDiskEnv+"="+dir, attr)
	if i := bytes.Index(out, []byte("cannot mount")); i >= 0 {
		t.Skip(string(out[i:]))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFullDiskKeepsTheVerdict") {
		if err != nil && strings.Contains(err.Error(), "operation not permitted") {
			t.Skip("no mount namespace here:", err)
		}
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

func checkFullDisk(t *testing.T, dir string) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Skip("cannot mount:", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=40m"); err != nil {
		t.Skip("cannot mount a tmpfs:", err)
	}
	ctx := context.Background()
	path := filepath.Join(dir, "frontier.db")
	s, err := open(ctx, path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.PutProgram(ctx, []byte("fills the disk"), "")
	if err != nil {
		t.Fatal(err)
	}
	e := &Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th"}
	if err := s.CreateEvaluation(ctx, e); err != nil {
		t.Fatal(err)
	}
	// The program writes until the disk is full.
	fill(t, filepath.Join(dir, "run-folder-file"))

	e.Verdict, e.Reason = "error", "the program filled the disk"
	if err := s.FinishEvaluation(ctx, e, bytes.Repeat([]byte("{\"type\":\"step\"}\n"), 1<<16)); err != nil {
		t.Fatalf("the verdict was lost: %v", err)
	}
	got, err := s.Evaluation(ctx, e.ID)
	if err != nil || got.State != StateDone || got.Verdict != "error" {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if _, err := os.Stat(path + "-reserve"); err == nil {
		t.Error("the reserve is still there")
	}
	// With the disk full again and no reserve left, a write says so.
	fill(t, filepath.Join(dir, "more"))
	// Bytes that neither compress nor repeat: chunks of their own.
	big := make([]byte, 8<<20)
	rand.NewChaCha8([32]byte{3, 4}).Read(big)
	_, err = s.PutProgram(ctx, big, "")
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("a write on a full disk: %v, want ErrDiskFull", err)
	}
}

// fill writes to path until the disk is full.
func fill(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
