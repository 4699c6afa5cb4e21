package slurm

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Key authenticates the report of one job. The submitting side makes one
// per job (NewKey), keeps it, and hands it to the node-side process in a
// file (WriteKey) inside a folder that what the job runs cannot see; the
// node-side process reads it (ReadKey) before it starts anything.
type Key [32]byte

// NewKey returns a random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("make a report key: %w", err)
	}
	return k, nil
}

// keyFileSize bounds a key file: 64 hex digits and a newline.
const keyFileSize = 65

// WriteKey writes the key to a new file readable by its owner only. A file
// already there is an error: a key is never replaced under a running job.
func WriteKey(path string, k Key) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write report key: %w", err)
	}
	if _, err := fmt.Fprintf(f, "%x\n", k[:]); err != nil {
		f.Close()
		return fmt.Errorf("write report key %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write report key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report key %s: %w", path, err)
	}
	return nil
}

// ReadKey reads a key WriteKey wrote. A key file that others than its
// owner may read is refused: its key may be known.
func ReadKey(path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, fmt.Errorf("read report key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Key{}, fmt.Errorf("read report key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > keyFileSize {
		return Key{}, fmt.Errorf("read report key %s: not a key file (%v, %d bytes)", path, fi.Mode().Type(), fi.Size())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Key{}, fmt.Errorf("read report key %s: others may read it (%v): not used", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, keyFileSize))
	if err != nil {
		return Key{}, fmt.Errorf("read report key %s: %w", path, err)
	}
	var k Key
	if n, err := hex.Decode(k[:], bytes.TrimSpace(b)); err != nil || n != len(k) {
		return Key{}, fmt.Errorf("read report key %s: not %d hex-encoded bytes", path, len(k))
	}
	return k, nil
}

// Report is what the node-side process of a job sends back: its payload
// (what the phase measured, as JSON), bound to the job it is about.
type Report struct {
	// Job is the ID of the job that wrote it (SLURM_JOB_ID there).
	Job string `json:"job"`
	// Node is the node it was written on.
	Node string `json:"node"`
	// Label says what the job ran (the evaluation and its phase), so that
	// a report cannot stand in for another one of the same job's key.
	Label   string          `json:"label"`
	Payload json.RawMessage `json:"payload"`
}

// reportFormat names the format of a report file and is the first thing
// its MAC covers.
const reportFormat = "frontier-slurm-report/1"

// MaxReportSize bounds a report file.
const MaxReportSize = 16 << 20

// reportFile is a report as it is written.
type reportFile struct {
	Format string `json:"format"`
	Report
	MAC string `json:"mac"`
}

// ErrForged is the error of ReadReport for a report whose MAC does not
// match: it was not written with the job's key.
var ErrForged = errors.New("the report is not authentic: its MAC does not match the job's key")

// mac is HMAC-SHA256 over the format, the job, the node, the label and the
// payload, each ended by a NUL (none of them holds one).
func mac(k Key, r Report) []byte {
	h := hmac.New(sha256.New, k[:])
	for _, s := range []string{reportFormat, r.Job, r.Node, r.Label} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(r.Payload)
	return h.Sum(nil)
}

// seal checks r and returns the bytes of its report file.
func seal(k Key, r Report) ([]byte, error) {
	for _, s := range []string{r.Job, r.Node, r.Label} {
		if strings.ContainsRune(s, 0) {
			return nil, errors.New("a job, node or label holds a NUL byte")
		}
	}
	if !json.Valid(r.Payload) {
		return nil, errors.New("the payload is not JSON")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, r.Payload); err != nil {
		return nil, err
	}
	r.Payload = compact.Bytes()
	// Without HTML escaping, the payload is written exactly as it was
	// MACed ('<' stays '<').
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(reportFile{Format: reportFormat, Report: r, MAC: hex.EncodeToString(mac(k, r))}); err != nil {
		return nil, err
	}
	if b.Len() > MaxReportSize {
		return nil, fmt.Errorf("the report has %d bytes, more than %d", b.Len(), MaxReportSize)
	}
	return b.Bytes(), nil
}

// unseal checks the bytes of a report file against the key and the job and
// label it must be about.
func unseal(k Key, b []byte, job, label string) (Report, error) {
	var f reportFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Report{}, fmt.Errorf("not a report: %w", err)
	}
	if f.Format != reportFormat {
		return Report{}, fmt.Errorf("format %q, want %q", f.Format, reportFormat)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.Payload); err != nil {
		return Report{}, fmt.Errorf("payload: %w", err)
	}
	f.Payload = compact.Bytes()
	got, err := hex.DecodeString(f.MAC)
	if err != nil || !hmac.Equal(got, mac(k, f.Report)) {
		return Report{}, ErrForged
	}
	if f.Job != job || f.Label != label {
		return Report{}, fmt.Errorf("an authentic report of job %s (%s), not of job %s (%s): a stale or misplaced one", f.Job, f.Label, job, label)
	}
	return f.Report, nil
}

// WriteReport writes the report, authenticated with the key, to path:
// whole or not at all (a temporary file renamed into place), readable by
// its owner only.
func WriteReport(path string, k Key, r Report) error {
	b, err := seal(k, r)
	if err != nil {
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".report-*")
	if err != nil {
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report of job %s: %w", r.Job, err)
	}
	// The rename is durable once the folder is: a node that fails now
	// must not lose a report its job has already ended with.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ReadReport reads the report at path and returns it when it was written
// with the key, by job, about label. A missing file is an error that
// wraps fs.ErrNotExist (the node-side process ended without a report); a
// report not written with the key is ErrForged.
func ReadReport(path string, k Key, job, label string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("read report of job %s: %w", job, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxReportSize+1))
	if err != nil {
		return Report{}, fmt.Errorf("read report of job %s: %w", job, err)
	}
	if len(b) > MaxReportSize {
		return Report{}, fmt.Errorf("read report of job %s: %s has more than %d bytes", job, path, MaxReportSize)
	}
	r, err := unseal(k, b, job, label)
	if err != nil {
		return Report{}, fmt.Errorf("read report of job %s from %s: %w", job, path, err)
	}
	return r, nil
}
