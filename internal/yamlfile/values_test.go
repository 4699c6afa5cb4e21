package yamlfile

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, " 1h30m ": 90 * time.Minute, "0": 0, "-5s": -5 * time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"five":           `invalid duration "five"`,
		"5":              `invalid duration "5"`,
		"10000000h":      "too long",
		"9999999999999s": "too long",
		"1.5.5s":         "invalid duration",
	} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "1GB": 1e9, "4096": 4096, " 1.5KiB": 1536, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"1e30GiB": "too large",
		"9EiB":    "invalid size",
		"NaN":     "invalid size",
		"Inf":     "invalid size",
		"-1MiB":   "not negative",
		"1e400":   "too large",
		"lots":    "invalid size",
	} {
		if _, err := ParseSize(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSize(%q) = %v, want an error with %q", in, err, want)
		}
	}
	if got := FormatSize(3 << 30); got != "3GiB" {
		t.Errorf("FormatSize = %s", got)
	}
}
