package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if k == (Key{}) {
		t.Fatal("NewKey returned the zero key")
	}
	path := filepath.Join(dir, "key")
	if err := WriteKey(path, k); err != nil {
		t.Fatal(err)
	}
	if err := WriteKey(path, k); err == nil {
		t.Error("WriteKey replaced a key file")
	}
	got, err := ReadKey(path)
	if err != nil || got != k {
		t.Fatalf("ReadKey: %x, %v; want %x", got, err, k)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKey(path); err == nil || !strings.Contains(err.Error(), "others may read it") {
		t.Errorf("a key file others may read: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKey(bad); err == nil {
		t.Error("ReadKey read a file that holds no key")
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	k, _ := NewKey()
	other, _ := NewKey()
	path := filepath.Join(dir, "report.json")
	payload := `{"verdict": "acceptable", "note": "<a> & b", "loss": 3.28}`
	r := Report{Job: "42", Node: "gpu7", Label: "e1/fast", Payload: json.RawMessage(payload)}
	if err := WriteReport(path, k, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("report file: %v, %v; want mode 0600", fi, err)
	}
	got, err := ReadReport(path, k, "42", "e1/fast")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = json.Compact(&want, []byte(payload))
	if got.Node != "gpu7" || string(got.Payload) != want.String() {
		t.Errorf("read back %+v (payload %s)", got, got.Payload)
	}

	if _, err := ReadReport(path, other, "42", "e1/fast"); !errors.Is(err, ErrForged) {
		t.Errorf("another key: %v, want ErrForged", err)
	}
	if _, err := ReadReport(path, k, "43", "e1/fast"); err == nil || !strings.Contains(err.Error(), "stale or misplaced") {
		t.Errorf("another job: %v", err)
	}
	if _, err := ReadReport(path, k, "42", "e1/full"); err == nil || !strings.Contains(err.Error(), "stale or misplaced") {
		t.Errorf("another label: %v", err)
	}
	if _, err := ReadReport(filepath.Join(dir, "none"), k, "42", "e1/fast"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no report: %v, want fs.ErrNotExist", err)
	}

	// Whatever is changed in the file, the report is refused: a forger
	// without the key can change nothing.
	orig, _ := os.ReadFile(path)
	for _, edit := range []struct{ old, new string }{
		{`"acceptable"`, `"acceptabl3"`},
		{`3.28`, `3.27`},
		{`"node":"gpu7"`, `"node":"gpu8"`},
		{`"job":"42"`, `"job":"41"`},
	} {
		forged := strings.Replace(string(orig), edit.old, edit.new, 1)
		if forged == string(orig) {
			t.Fatalf("%q is not in the report file: %s", edit.old, orig)
		}
		if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
			t.Fatal(err)
		}
		job := "42"
		if edit.old == `"job":"42"` {
			job = "41"
		}
		if _, err := ReadReport(path, k, job, "e1/fast"); !errors.Is(err, ErrForged) {
			t.Errorf("%s -> %s: %v, want ErrForged", edit.old, edit.new, err)
		}
	}
	// Spaces inside the payload change nothing of its meaning, and do not
	// break the MAC.
	spaced := strings.Replace(string(orig), `"loss":3.28`, `"loss" :  3.28`, 1)
	if err := os.WriteFile(path, []byte(spaced), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(path, k, "42", "e1/fast"); err != nil {
		t.Errorf("a payload with spaces: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"format":"frontier-slurm-report/1","job":"42","payload":{},"mac":"00","extra":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(path, k, "42", "e1/fast"); err == nil || errors.Is(err, ErrForged) {
		t.Errorf("an unknown field: %v, want a format error", err)
	}
	if err := WriteReport(path, k, Report{Job: "42", Payload: json.RawMessage("{not json")}); err == nil {
		t.Error("WriteReport wrote a payload that is not JSON")
	}
}
