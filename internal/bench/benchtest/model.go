package benchtest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Coder answers the bench's prompts like a model, from the program the
// prompt shows: a debug prompt gets the "raise" line removed, any other
// prompt the program's TIME cut by Speedup. Every BreakEvery-th answer
// (when set) adds a "raise ValueError" line instead, and every
// MissEvery-th answer has a SEARCH that matches nothing, so that searches
// meet buggy programs and answers that do not apply.
type Coder struct {
	Speedup    float64 // 0 means 0.9: each answer trains in 90% of the time
	BreakEvery int
	MissEvery  int

	mu sync.Mutex
	n  int
}

var (
	codeRE   = regexp.MustCompile("(?s)```python\n(.*?)```")
	progTime = regexp.MustCompile(`(?m)^TIME = ([0-9.]+)$`)
	raiseRE  = regexp.MustCompile(`(?m)^raise \w+\n`)
)

// Answer returns the answer to a prompt's user message.
func (c *Coder) Answer(prompt string) string {
	c.mu.Lock()
	c.n++
	n := c.n
	c.mu.Unlock()
	m := codeRE.FindStringSubmatch(prompt)
	if m == nil {
		return "I see no program."
	}
	prog := m[1]
	if c.MissEvery > 0 && n%c.MissEvery == 0 {
		return "A change.\n<<<<<<< SEARCH\nthis line is nowhere\n=======\nTIME = 1\n>>>>>>> REPLACE\n"
	}
	if strings.Contains(prompt, "This program fails") {
		if r := raiseRE.FindString(prog); r != "" {
			return fmt.Sprintf("Remove the failing line.\n<<<<<<< SEARCH\n%s=======\n>>>>>>> REPLACE\n", r)
		}
	}
	t := progTime.FindStringSubmatch(prog)
	if t == nil {
		return "I see no TIME."
	}
	if c.BreakEvery > 0 && n%c.BreakEvery == 0 {
		return fmt.Sprintf("Something bold.\n<<<<<<< SEARCH\nTIME = %s\n=======\nTIME = %s\nraise ValueError\n>>>>>>> REPLACE\n", t[1], t[1])
	}
	v, _ := strconv.ParseFloat(t[1], 64)
	k := c.Speedup
	if k == 0 {
		k = 0.9
	}
	return fmt.Sprintf("Train faster.\n<<<<<<< SEARCH\nTIME = %s\n=======\nTIME = %g\n>>>>>>> REPLACE\n", t[1], float64(int(v*k)))
}
