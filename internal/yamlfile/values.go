package yamlfile

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration written as Go writes them ("90s", "5m",
// "1h30m") and says what is wrong in words a config's author can act on.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err == nil {
		return d, nil
	}
	// time.ParseDuration says "invalid duration" for an overflow too; a
	// value that has the shape of a duration is too long.
	if durationShape(s) {
		return 0, fmt.Errorf("%q is too long: the longest duration is %s", s, time.Duration(math.MaxInt64).Truncate(time.Second))
	}
	return 0, fmt.Errorf("invalid duration %q: use a number with a unit, like 90s, 5m or 1h30m", s)
}

// durationShape says whether s looks like a duration: numbers, each
// followed by a unit.
func durationShape(s string) bool {
	s = strings.TrimPrefix(strings.TrimSpace(s), "-")
	if s == "" {
		return false
	}
	for s != "" {
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 || strings.Count(s[:i], ".") > 1 {
			return false
		}
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return (r >= '0' && r <= '9') || r == '.' })
		if j < 0 {
			j = len(s)
		}
		switch s[:j] {
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		default:
			return false
		}
		s = s[j:]
	}
	return true
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// errSize is the advice every size error gives.
var errSize = errors.New("use a number of bytes or a number with a unit, like 512MiB or 8GiB")

// ParseSize reads a size: a number of bytes, or a number with a unit
// (KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of ten).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(v), math.IsInf(v, 0) && err == nil:
		return 0, fmt.Errorf("invalid size %q: %w", s, errSize)
	case v < 0:
		return 0, fmt.Errorf("invalid size %q: a size is not negative", s)
	case errors.Is(err, strconv.ErrRange) || v*float64(mult) >= math.MaxInt64:
		return 0, fmt.Errorf("size %q is too large: the largest is %d bytes (8EiB)", s, int64(math.MaxInt64))
	}
	return int64(v * float64(mult)), nil
}

// FormatSize writes n in the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range byteUnits[:4] {
		if n >= u.mult && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}
