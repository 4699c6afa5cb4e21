package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// HintLevels are the hint levels a prompt shows, in ascending order: none,
// one (1 pseudocode, 2 a text description, 3 a mini-paper), or several.
// The paper's settings are none, 1, 2, 3, 1+2 and 1+2+3.
type HintLevels []int

// ParseHints reads a hint setting: "none" (or "0" or ""), a level "1",
// "2" or "3", or levels joined by "+" ("1+2", "1+2+3"; "12" and "123" are
// read the same way).
func ParseHints(s string) (HintLevels, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "", "none", "0", "z":
		return nil, nil
	}
	// "l1+l2" is read as "1+2".
	parts := strings.Split(strings.ReplaceAll(s, "l", ""), "+")
	if len(parts) == 1 && len(parts[0]) > 1 {
		parts = strings.Split(parts[0], "")
	}
	var out HintLevels
	for _, p := range parts {
		l, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || l < 1 || l > 3 {
			return nil, fmt.Errorf("hint setting %q: use none, 1, 2, 3, or levels joined by + such as 1+2 or 1+2+3", s)
		}
		if slices.Contains(out, l) {
			return nil, fmt.Errorf("hint setting %q names level %d twice", s, l)
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out, nil
}

// String is the setting's canonical spelling: "none" or "1+2".
func (h HintLevels) String() string {
	if len(h) == 0 {
		return "none"
	}
	parts := make([]string, len(h))
	for i, l := range h {
		parts[i] = strconv.Itoa(l)
	}
	return strings.Join(parts, "+")
}

// LevelName says what a level is.
func LevelName(level int) string {
	switch level {
	case 1:
		return "pseudocode"
	case 2:
		return "description"
	case 3:
		return "paper"
	}
	return fmt.Sprintf("level %d", level)
}

// Hint is one hint's text, as a prompt shows it.
type Hint struct {
	Level int    `json:"level"`
	Name  string `json:"name"` // pseudocode, description or paper
	Text  string `json:"text"`
}

// HintsFor returns the hints of a task at the given levels. A level the
// task has no hint for is an error: a run must not silently show less
// than it says.
func (s *Suite) HintsFor(t *Task, levels HintLevels) ([]Hint, error) {
	var out []Hint
	for _, l := range levels {
		text, err := s.Hint(t, l)
		if err != nil {
			return nil, err
		}
		out = append(out, Hint{Level: l, Name: LevelName(l), Text: strings.TrimSpace(text)})
	}
	return out, nil
}
