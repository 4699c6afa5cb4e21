package edit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// regionsByLines is Regions written the plain way, looking at every line:
// the reference for the version that jumps from one mention of the marker
// word to the next.
func regionsByLines(src []byte) ([]Region, error) {
	if !bytes.Contains(src, []byte(markerWord)) {
		return nil, nil
	}
	var (
		out   []Region
		open  *Region
		seen  = map[string]int{}
		start = 0
		num   = 0
	)
	for start < len(src) {
		num++
		end := bytes.IndexByte(src[start:], '\n')
		next := len(src)
		if end >= 0 {
			next = start + end + 1
			end = start + end
		} else {
			end = len(src)
		}
		if raw := src[start:end]; bytes.Contains(raw, []byte(markerWord)) && isMarkerLine(string(raw)) {
			line := strings.TrimSuffix(string(raw), "\r")
			m := markerRe.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: malformed %q", num, strings.TrimSpace(line))
			}
			verb, name := m[1], m[2]
			switch {
			case verb == "begin" && open != nil:
				return nil, fmt.Errorf("line %d: %q begins inside %q (line %d)", num, name, open.Name, open.StartLine)
			case verb == "begin":
				if first, dup := seen[name]; dup {
					return nil, fmt.Errorf("line %d: %q twice (first on line %d)", num, name, first)
				}
				seen[name] = num
				open = &Region{Name: name, StartLine: num, Start: start}
			case open == nil:
				return nil, fmt.Errorf("line %d: end %s without begin", num, name)
			case name != open.Name:
				return nil, fmt.Errorf("line %d: end %q, open %q (line %d)", num, name, open.Name, open.StartLine)
			default:
				open.EndLine = num
				open.End = next
				open.Content = src[open.Start:next]
				out = append(out, *open)
				open = nil
			}
		}
		start = next
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: %q has no end", open.StartLine, open.Name)
	}
	return out, nil
}

// errLine is the line an error of Regions names.
func errLine(err error) string {
	if err == nil {
		return ""
	}
	l, _, _ := strings.Cut(err.Error(), ":")
	return l
}

func TestRegionsMatchesLineByLine(t *testing.T) {
	lines := []string{"x = 1", "", "# frontier:protected begin a", "# frontier:protected end a", "  # frontier:protected begin b\r",
		"\t# frontier:protected end b", "# frontier:protected bogus", "s = 'frontier:protected'", "# frontier:protected begin a # frontier:protected",
		"# note", "frontier:protected", "#frontier:protected end a"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(lines[rng.IntN(len(lines))])
			b.WriteByte('\n')
		}
		src := []byte(b.String())
		if rng.IntN(3) == 0 && len(src) > 0 {
			src = src[:len(src)-1]
		}
		want, wantErr := regionsByLines(src)
		got, err := Regions(src)
		if !reflect.DeepEqual(got, want) || errLine(err) != errLine(wantErr) || (err == nil) != (wantErr == nil) {
			t.Fatalf("Regions(%q) = %+v, %v; want %+v, %v", src, got, err, want, wantErr)
		}
	}
}
