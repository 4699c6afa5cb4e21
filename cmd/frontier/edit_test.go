package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const editParent = "import torch\n\nLR = 3e-3\nSTEPS = 200\n"

func writeTemp(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEditApply(t *testing.T) {
	dir := t.TempDir()
	prog := writeTemp(t, dir, "train.py", editParent)
	ans := writeTemp(t, dir, "answer.md", "Lower the LR.\n\n```python\n<<<<<<< SEARCH\nLR = 3e-3\n=======\nLR = 2e-3\n>>>>>>> REPLACE\n```\n")
	child := filepath.Join(dir, "child.py")

	code, out, errs := runCLI(t, "edit", "apply", prog, ans, "-o", child)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	for _, want := range []string{"--- train.py", "+++ train.py (child)", "-LR = 3e-3", "+LR = 2e-3"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "applied 1 block: exact: +1 -1 lines") || !strings.Contains(errs, "wrote "+child) {
		t.Errorf("stderr = %q", errs)
	}
	got, err := os.ReadFile(child)
	if err != nil || string(got) != strings.Replace(editParent, "3e-3", "2e-3", 1) {
		t.Errorf("child file = %q, %v", got, err)
	}
	if b, _ := os.ReadFile(prog); string(b) != editParent {
		t.Error("the parent program was modified")
	}

	code, out, _ = runCLI(t, "edit", "apply", prog, ans, "-o", "-")
	if code != 0 || out != strings.Replace(editParent, "3e-3", "2e-3", 1) {
		t.Errorf("-o -: exit %d, stdout %q", code, out)
	}
}

func TestEditApplyFailures(t *testing.T) {
	dir := t.TempDir()
	prog := writeTemp(t, dir, "train.py", editParent)
	tests := []struct {
		name   string
		answer string
		args   []string
		code   int
		want   []string
	}{
		{
			name:   "not found",
			answer: "<<<<<<< SEARCH\nLR = 1e-3\nWARMUP = 10\n=======\nLR = 2e-3\n>>>>>>> REPLACE\n",
			code:   1,
			want:   []string{"does not apply to", "(not_found)", "SEARCH/REPLACE block 1 of 1 (answer line 1)", "3 | LR = 3e-3"},
		},
		{
			name:   "truncated",
			answer: "<<<<<<< SEARCH\nLR = 3e-3\n=======\nLR = 2e-3\n",
			code:   1,
			want:   []string{"cannot be read as an edit (truncated)"},
		},
		{
			name:   "finish reason length",
			answer: "<<<<<<< SEARCH\nLR = 3e-3\n=======\nLR = 2e-3\n>>>>>>> REPLACE\n",
			args:   []string{"--finish-reason", "length"},
			code:   1,
			want:   []string{"output token limit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans := writeTemp(t, t.TempDir(), "answer.md", tt.answer)
			code, out, errs := runCLI(t, append([]string{"edit", "apply", prog, ans}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errs)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing on failure", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	// A file named on the command line that is missing is the user's to
	// fix: rc 2.
	if code, _, errs := runCLI(t, "edit", "apply", prog, filepath.Join(dir, "missing.md")); code != 2 || !strings.Contains(errs, "answer "+filepath.Join(dir, "missing.md")+" does not exist") {
		t.Errorf("missing answer: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI(t, "edit", "apply", filepath.Join(dir, "missing.py"), prog); code != 2 || !strings.Contains(errs, "program "+filepath.Join(dir, "missing.py")+" does not exist") {
		t.Errorf("missing program: exit %d, %s", code, errs)
	}
	if code, _, _ := runCLI(t, "edit", "apply", prog); code != 2 {
		t.Errorf("one argument: exit %d, want 2 (usage)", code)
	}
}

// --json prints the outcome, applied or not, in snake_case.
func TestEditApplyJSON(t *testing.T) {
	dir := t.TempDir()
	prog := writeTemp(t, dir, "train.py", editParent)
	ans := writeTemp(t, dir, "answer.md", "<<<<<<< SEARCH\nLR = 3e-3\n=======\nLR = 2e-3\n>>>>>>> REPLACE\n")
	code, out, errs := runCLI(t, "edit", "apply", prog, ans, "--json")
	var got editApplyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !got.Applied || got.Added != 1 || got.Removed != 1 ||
		!strings.Contains(got.Child, "LR = 2e-3") || !strings.Contains(got.Diff, "+LR = 2e-3") {
		t.Fatalf("exit %d, %v: %s%s", code, err, out, errs)
	}
	bad := writeTemp(t, dir, "bad.md", "<<<<<<< SEARCH\nNOPE = 1\n=======\nLR = 2e-3\n>>>>>>> REPLACE\n")
	code, out, _ = runCLI(t, "edit", "apply", prog, bad, "--json")
	got = editApplyJSON{}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got.Applied || got.Kind != "not_found" || got.Error == "" {
		t.Errorf("a failed edit: exit %d, %v: %s", code, err, out)
	}
}
