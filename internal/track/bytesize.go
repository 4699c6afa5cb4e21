package track

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a size written in YAML as "512MiB", "8GiB" or a plain number
// of bytes.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// UnmarshalText parses a size with an optional unit.
func (b *ByteSize) UnmarshalText(t []byte) error {
	s := strings.TrimSpace(string(t))
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("invalid size %q: use a number with a unit, like 512MiB or 8GiB", t)
	}
	*b = ByteSize(v * float64(mult))
	return nil
}

// MarshalText writes the size in the largest binary unit that divides it.
func (b ByteSize) MarshalText() ([]byte, error) {
	for _, u := range byteUnits[:4] {
		if int64(b) >= u.mult && int64(b)%u.mult == 0 {
			return []byte(fmt.Sprintf("%d%s", int64(b)/u.mult, u.suffix)), nil
		}
	}
	return []byte(strconv.FormatInt(int64(b), 10)), nil
}
