package report

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/testdeps"
)

// findChromium returns a headless-capable Chromium, or "" if none is
// installed (scripts/install-deps.sh installs Debian's).
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowserScreenshot opens the report in a real browser and checks the
// screenshot: the page renders, and the figures load (their colours are
// on screen, which a broken <img> would not give).
func TestBrowserScreenshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	chromium := findChromium()
	if chromium == "" {
		testdeps.Missing(t, "chromium", "chromium not found on PATH: install it (scripts/install-deps.sh) to run the browser check")
	}
	dir := t.TempDir()
	index, err := Write(context.Background(), filepath.Join(dir, "report"), synthetic())
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(index)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1400,3000",
		"file://"+filepath.ToSlash(abs))
	cmd.Env = append(os.Environ(), "HOME="+dir) // keep the browser's caches out of the real home
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 3000 {
		t.Errorf("screenshot is %dx%d, want 1400x3000", b.Dx(), b.Dy())
	}
	if n := distinctColors(img, 2); n < 50 {
		t.Errorf("screenshot has only %d colours: the page did not render", n)
	}
	// The breakdown figure's green bars and the time figure's blue markers
	// are within the first 3000 pixels.
	for _, c := range []struct {
		name    string
		r, g, b uint8
	}{{"acceptable green", 0x2c, 0xa0, 0x2c}, {"buggy red", 0xd6, 0x27, 0x28}, {"model blue", 0x1f, 0x77, 0xb4}} {
		if n := countNear(img, c.r, c.g, c.b); n < 500 {
			t.Errorf("screenshot has %d pixels of the %s: the figures did not load", n, c.name)
		}
	}
}

// countNear counts pixels within a small distance of the colour.
func countNear(img image.Image, r, g, b uint8) int {
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr>>8, r) && near(pg>>8, g) && near(pb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near(v uint32, want uint8) bool {
	d := int(v) - int(want)
	return d > -12 && d < 12
}
