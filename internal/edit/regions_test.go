package edit

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const regionProg = `import torch
# frontier:protected begin harness-import
import frontier_harness as fh
# frontier:protected end harness-import

def train():
    for step in range(10):
        pass
        # frontier:protected begin validation
        if step % 5 == 0:
            fh.validate(model)
        # frontier:protected end validation
`

func TestRegions(t *testing.T) {
	rs, err := Regions([]byte(regionProg))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d regions, want 2", len(rs))
	}
	r := rs[1]
	if r.Name != "validation" || r.StartLine != 9 || r.EndLine != 12 {
		t.Errorf("region = %q lines %d-%d, want validation 9-12", r.Name, r.StartLine, r.EndLine)
	}
	if got := regionProg[r.Start:r.End]; got != string(r.Content) || !strings.HasPrefix(got, "        # frontier:protected begin validation\n") || !strings.HasSuffix(got, "end validation\n") {
		t.Errorf("span/content wrong: %q", got)
	}
}

func TestRegionsErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"begin without end", "# frontier:protected begin a\nx = 1\n", `line 1: protected region "a" has no end marker`},
		{"end without begin", "x = 1\n# frontier:protected end a\n", `line 2: "# frontier:protected end a" has no matching begin`},
		{"nested", "# frontier:protected begin a\n# frontier:protected begin b\n# frontier:protected end b\n# frontier:protected end a\n", `line 2: protected region "b" begins inside region "a"`},
		{"mismatched end", "# frontier:protected begin a\n# frontier:protected end b\n", `line 2: end marker for region "b", but the open region is "a"`},
		{"duplicate", "# frontier:protected begin a\n# frontier:protected end a\n# frontier:protected begin a\n# frontier:protected end a\n", `line 3: protected region "a" is defined twice (first on line 1)`},
		{"no name", "# frontier:protected begin\n", `line 1: malformed protected-region marker`},
		{"typo verb", "# frontier:protected start a\n", `line 1: malformed protected-region marker`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Regions([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRegionsCRLFAndStrings(t *testing.T) {
	src := "x = 1\r\n  # frontier:protected begin a\r\ny = 2\r\n  # frontier:protected end a\r\nprint('frontier:protected begin nothing')\r\n"
	rs, err := Regions([]byte(src))
	if err != nil || len(rs) != 1 || rs[0].StartLine != 2 || rs[0].EndLine != 4 {
		t.Fatalf("Regions = %+v, %v", rs, err)
	}
}

func TestCheckProtected(t *testing.T) {
	parent := []byte(regionProg)
	moved := strings.Replace(regionProg, "import torch\n", "import torch\nimport math\n", 1)
	tests := []struct {
		name, child, change, region string
	}{
		{"unchanged elsewhere", moved, "", ""},
		{"changed inside", strings.Replace(regionProg, "step % 5", "step % 50", 1), "changed", "validation"},
		{"marker removed", strings.Replace(regionProg, "# frontier:protected begin harness-import\n", "", 1), "markers", ""},
		{"region removed", strings.Replace(regionProg, "# frontier:protected begin harness-import\nimport frontier_harness as fh\n# frontier:protected end harness-import\n", "", 1), "removed", "harness-import"},
		{"region added", regionProg + "# frontier:protected begin extra\n# frontier:protected end extra\n", "added", "extra"},
		{"indentation of marker changed", strings.Replace(regionProg, "        # frontier:protected end validation", "    # frontier:protected end validation", 1), "changed", "validation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckProtected(parent, []byte(tt.child))
			if tt.change == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var pe *ProtectedError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *ProtectedError", err)
			}
			if pe.Change != tt.change || pe.Region != tt.region {
				t.Errorf("got %s of %q, want %s of %q (%v)", pe.Change, pe.Region, tt.change, tt.region, err)
			}
		})
	}
}

func TestRestoreProtected(t *testing.T) {
	ref := []byte(regionProg)
	cand := strings.Replace(regionProg, "step % 5", "step % 50", 1)
	cand = strings.Replace(cand, "import frontier_harness as fh", "import frontier_harness as fh  ", 1)
	cand = strings.Replace(cand, "def train():", "def train(n=3):", 1)
	got, changed, err := RestoreProtected(ref, []byte(cand))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"harness-import", "validation"}) {
		t.Errorf("changed = %v", changed)
	}
	want := strings.Replace(regionProg, "def train():", "def train(n=3):", 1)
	if string(got) != want {
		t.Errorf("restored:\n%s\nwant:\n%s", got, want)
	}
	if err := CheckProtected(ref, got); err != nil {
		t.Errorf("restored program still fails CheckProtected: %v", err)
	}

	// Nothing to restore: same bytes back, no names.
	got, changed, err = RestoreProtected(ref, ref)
	if err != nil || changed != nil || string(got) != regionProg {
		t.Errorf("identity restore = %q, %v, %v", got, changed, err)
	}

	missing := strings.Replace(regionProg, "        # frontier:protected begin validation\n", "", 1)
	missing = strings.Replace(missing, "        # frontier:protected end validation\n", "", 1)
	if _, _, err := RestoreProtected(ref, []byte(missing)); err == nil || !strings.Contains(err.Error(), `"validation"`) {
		t.Errorf("missing region: err = %v", err)
	}
	extra := regionProg + "# frontier:protected begin extra\n# frontier:protected end extra\n"
	if _, _, err := RestoreProtected(ref, []byte(extra)); err == nil || !strings.Contains(err.Error(), `"extra"`) {
		t.Errorf("extra region: err = %v", err)
	}
}

func TestRestoreProtectedNoFinalNewline(t *testing.T) {
	ref := []byte("a = 1\n# frontier:protected begin r\nb = 2\n# frontier:protected end r")
	cand := []byte("a = 1\n# frontier:protected begin r\nb = 3\n# frontier:protected end r\nc = 4\n")
	got, changed, err := RestoreProtected(ref, cand)
	if err != nil {
		t.Fatal(err)
	}
	want := "a = 1\n# frontier:protected begin r\nb = 2\n# frontier:protected end r\nc = 4\n"
	if string(got) != want || len(changed) != 1 {
		t.Errorf("got %q (changed %v), want %q", got, changed, want)
	}
}
