package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// TestTrackCopy: the evolve scaffold's copy of a built-in track is the
// same track, with the start program as its reference.
func TestTrackCopy(t *testing.T) {
	reg := track.NewRegistry(tracks.FS)
	for _, name := range []string{"tiny", "nanogpt"} {
		spec, err := reg.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), name)
		cp, err := writeTrackCopy(dir, spec, []byte("print('start')\n"))
		if err != nil {
			t.Fatal(err)
		}
		src, err := cp.ReferenceSource()
		if err != nil || string(src) != "print('start')\n" {
			t.Errorf("%s: the copy's reference is %q (%v)", name, src, err)
		}
		// Compared as printed: an empty list and a missing one are the same.
		same := func(x, y any) bool { return fmt.Sprintf("%+v", x) == fmt.Sprintf("%+v", y) }
		if !same(spec.Data, cp.Data) || !same(spec.Limits, cp.Limits) || !same(spec.Verification, cp.Verification) ||
			!same(spec.Hardware, cp.Hardware) || !same(spec.Launcher, cp.Launcher) || !same(spec.Telemetry, cp.Telemetry) ||
			spec.TargetValLoss != cp.TargetValLoss || spec.Name != cp.Name || spec.Contract != cp.Contract {
			t.Errorf("%s: the copy differs:\n%+v\n%+v", name, spec, cp)
		}
	}
}

// TestHintTemplate: the hint text reaches the template verbatim, even
// when it looks like template syntax.
func TestHintTemplate(t *testing.T) {
	dir := t.TempDir()
	hints := []Hint{{Level: 1, Name: "pseudocode", Text: "use {{.Secret}} and \"quotes\" `ticks`\nline 2"}}
	if err := writeHintTemplate(dir, hints, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, hintTemplate+".tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := template.New("x").Parse(`{{define "contract"}}C{{end}}{{define "parent"}}P{{end}}{{define "others"}}O{{end}}{{define "sibling"}}S{{end}}{{define "format"}}F{{end}}` + string(b))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tm.ExecuteTemplate(&out, "user", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), hints[0].Text) || !strings.Contains(out.String(), "### Hint: pseudocode") {
		t.Errorf("rendered:\n%s", out.String())
	}
}

// For a log-contract track, the evolve scaffold's template says how the
// script runs in place of the engine's harness contract and answer
// format, with or without hints.
func TestHintTemplateLogContract(t *testing.T) {
	dir := t.TempDir()
	if err := writeHintTemplate(dir, nil, "LOG CONTRACT {{.X}}"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, hintTemplate+".tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := template.New("x").Parse(`{{define "contract"}}HARNESS{{end}}{{define "parent"}}P{{end}}{{define "others"}}O{{end}}{{define "sibling"}}S{{end}}{{define "format"}}FH-FORMAT{{end}}` + string(b))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tm.ExecuteTemplate(&out, "user", nil); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "LOG CONTRACT {{.X}}") || strings.Contains(got, "HARNESS") || strings.Contains(got, "FH-FORMAT") ||
		!strings.Contains(got, "under torchrun") || strings.Contains(got, "What the next record changed") {
		t.Errorf("rendered:\n%s", got)
	}
}
