package data

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TinySecretFile is the name of the file in the tiny data folder that holds
// the installation's secret, as 64 hex digits. Only its owner can read it.
const TinySecretFile = "secret"

// ErrTinySecretExposed marks a secret file that others than its owner can
// read.
var ErrTinySecretExposed = errors.New("readable by others")

// NewTinySecret draws a secret from the operating system's random source.
func NewTinySecret() (TinySecret, error) {
	var s TinySecret
	if _, err := rand.Read(s[:]); err != nil {
		return s, fmt.Errorf("draw a tiny corpus secret: %w", err)
	}
	return s, nil
}

// ParseTinySecret reads a secret written as 64 hex digits.
func ParseTinySecret(text string) (TinySecret, error) {
	var s TinySecret
	b, err := hex.DecodeString(string(bytes.TrimSpace([]byte(text))))
	if err != nil || len(b) != len(s) {
		return s, fmt.Errorf("a tiny corpus secret is %d hex digits", 2*len(s))
	}
	copy(s[:], b)
	return s, nil
}

// ReadTinySecret reads the secret of the tiny data folder dir. A missing
// file is fs.ErrNotExist; a file others can read is refused
// (ErrTinySecretExposed), since anyone who reads it can regenerate the
// validation shard.
func ReadTinySecret(dir string) (TinySecret, error) {
	path := filepath.Join(dir, TinySecretFile)
	f, err := os.Open(path)
	if err != nil {
		return TinySecret{}, fmt.Errorf("read the tiny corpus secret: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return TinySecret{}, fmt.Errorf("read the tiny corpus secret: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return TinySecret{}, fmt.Errorf("the tiny corpus secret %s is %w (mode %v): run chmod 600 on it, or draw a new corpus with `frontier data build tiny --reseed`", path, ErrTinySecretExposed, st.Mode().Perm())
	}
	var buf [128]byte
	n, _ := f.Read(buf[:])
	s, err := ParseTinySecret(string(buf[:n]))
	if err != nil {
		return s, fmt.Errorf("the tiny corpus secret %s is damaged (%w): draw a new corpus with `frontier data build tiny --reseed`", path, err)
	}
	return s, nil
}

// writeTinySecret stores s as dir's secret, readable only by its owner.
// With replace false it never overwrites an existing secret: when two
// processes create one at the same time, the first wins and the second
// gets fs.ErrExist, so they cannot end up building different corpora.
func writeTinySecret(dir string, s TinySecret, replace bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write the tiny corpus secret: %w", err)
	}
	path := filepath.Join(dir, TinySecretFile)
	f, err := os.CreateTemp(dir, "."+TinySecretFile+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("write the tiny corpus secret: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(hex.EncodeToString(s[:]) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the tiny corpus secret: %w", err)
	}
	switch {
	case replace:
		err = os.Rename(tmp, path)
	default:
		// A hard link fails if the name exists, which a rename would not.
		err = os.Link(tmp, path)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			// No hard links on this file system: an exclusive create is
			// as safe against a second writer, if not against a reader
			// that looks while it is being written.
			err = createExclusive(path, []byte(hex.EncodeToString(s[:])+"\n"))
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write the tiny corpus secret: %s already exists: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("write the tiny corpus secret: %w", err)
	}
	return nil
}

// createExclusive writes b to a new file at path, readable only by its
// owner; it fails with fs.ErrExist if path exists.
func createExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
