package track

import "github.com/frontier-bench/frontier/internal/yamlfile"

// ByteSize is a size written in YAML as "512MiB", "8GiB" or a plain number
// of bytes.
type ByteSize int64

// UnmarshalText parses a size with an optional unit.
func (b *ByteSize) UnmarshalText(t []byte) error {
	v, err := yamlfile.ParseSize(string(t))
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

// MarshalText writes the size in the largest binary unit that divides it.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(yamlfile.FormatSize(int64(b))), nil }
