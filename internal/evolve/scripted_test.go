package evolve

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
)

// scripted answers prompts about the quick track's program the way a model
// might, deterministically, from what the prompt says: which kind of
// prompt it is, which attempt of the iteration, and the program's current
// knobs (STEPS, WASTE). Attempt 1 removes busywork products (all of them
// on odd iterations, half on even ones, so that the speedup is several
// times the timing noise of a loaded machine) with a messy answer (prose, a file name, a
// fence, trailing white space in SEARCH); attempt 2 cuts steps but writes
// code that crashes (a NameError), which the fix loop repairs; attempt 3
// cuts the steps so far that the loss misses the target on odd iterations,
// and on even ones writes a SEARCH that matches nothing and then, given
// the error, a good answer; attempt 4 makes attempt 1's change cleanly, so
// that one of the two is a duplicate. Asked for an idea, attempt 3 first
// answers with a SEARCH/REPLACE block, and with an idea when sent back.
type scripted struct {
	mu     sync.Mutex
	counts map[string]int
}

func newScripted() *scripted { return &scripted{counts: map[string]int{}} }

var (
	attemptRe = regexp.MustCompile(`attempt (\d+) of (\d+) made in parallel from this program in\s+iteration (\d+)`)
	ideaForRe = regexp.MustCompile(`idea for attempt (\d+) in iteration (\d+)`)
	stepsRe   = regexp.MustCompile(`(?m)^STEPS = (\d+)$`)
	wasteRe   = regexp.MustCompile(`(?m)^WASTE = (\d+)\b.*$`)
)

func (s *scripted) count(kind string) {
	s.mu.Lock()
	s.counts[kind]++
	s.mu.Unlock()
}

func (s *scripted) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// respond is the llmtest.Server's Respond hook.
func (s *scripted) respond(r llmtest.Recorded) llmtest.Step {
	user := lastUser(r)
	if strings.HasPrefix(user, "That is not what was asked") {
		// Sent back an answer that was not an idea: answer the first
		// question again, properly this time.
		user = firstUser(r) + "\n(asked again)"
	}
	text := s.answer(user)
	return llmtest.Step{Text: text, Usage: &llm.Usage{InputTokens: int64(len(user)/4 + 100), OutputTokens: int64(len(text)/4 + 20)}}
}

func firstUser(r llmtest.Recorded) string {
	msgs, _ := r.JSON["messages"].([]any)
	for _, x := range msgs {
		m, _ := x.(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

func lastUser(r llmtest.Recorded) string {
	msgs, _ := r.JSON["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// program returns the program section of a prompt (the code the answer's
// edit applies to).
func program(prompt string) string {
	i := strings.Index(prompt, "```python\n")
	if i < 0 {
		return ""
	}
	rest := prompt[i+len("```python\n"):]
	if j := strings.Index(rest, "\n```"); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

func knob(re *regexp.Regexp, prog string) (line string, value int) {
	m := re.FindStringSubmatch(prog)
	if m == nil {
		return "", -1
	}
	v, _ := strconv.Atoi(m[1])
	return m[0], v
}

func (s *scripted) answer(user string) string {
	switch {
	case strings.Contains(user, "## Task: an idea first"):
		s.count("idea")
		m := attemptRe.FindStringSubmatch(user)
		if m == nil {
			return "I have no idea."
		}
		if m[1] == "3" && !strings.HasSuffix(user, "(asked again)") {
			// An imperfect model answers the idea prompt with code.
			return "Here is the change.\n\n<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 3\n>>>>>>> REPLACE\n"
		}
		return fmt.Sprintf("Leaner steps (idea for attempt %s in iteration %s)\n\nEach step spends about half its time in busywork products whose result is never used. Removing one keeps the model and the data order the same, so the loss is unchanged and every step is shorter.", m[1], m[3])
	case strings.Contains(user, "## Task: implement this idea"):
		s.count("implement")
		m := ideaForRe.FindStringSubmatch(user)
		if m == nil {
			return "I cannot implement that."
		}
		slot, _ := strconv.Atoi(m[1])
		iter, _ := strconv.Atoi(m[2])
		return s.slotAnswer(slot, iter, program(user))
	case strings.Contains(user, "## A change that fails when it runs"):
		s.count("fix_run")
		prog := program(user)
		m := regexp.MustCompile(`(?m)^STEPS = (\d+)\nSTEPS = STEPS - warmup_skip\n`).FindStringSubmatch(prog)
		if m == nil {
			return "I do not see the problem."
		}
		return fmt.Sprintf("`warmup_skip` is not defined; drop that line and keep the shorter run.\n\n<<<<<<< SEARCH\n%s=======\nSTEPS = %s\n>>>>>>> REPLACE\n", m[0], m[1])
	case strings.Contains(user, "## An answer that could not be applied"):
		s.count("fix_apply")
		line, w := knob(wasteRe, program(user))
		if w <= 0 {
			return "Nothing to do."
		}
		return fmt.Sprintf("Sorry, the SEARCH text was wrong. Here it is again against the program as it is.\n\n<<<<<<< SEARCH\n%s\n=======\nWASTE = %d  # one busywork product fewer\n>>>>>>> REPLACE\n", line, w-1)
	}
	s.count("template")
	m := attemptRe.FindStringSubmatch(user)
	if m == nil {
		return "I am not sure what to change."
	}
	slot, _ := strconv.Atoi(m[1])
	iter, _ := strconv.Atoi(m[3])
	return s.slotAnswer(slot, iter, program(user))
}

func (s *scripted) slotAnswer(slot, iter int, prog string) string {
	wLine, w := knob(wasteRe, prog)
	sLine, steps := knob(stepsRe, prog)
	switch slot {
	case 1:
		if w <= 0 {
			return lrAnswer()
		}
		// Messy: prose, a file name, a fence, trailing white space in SEARCH.
		return fmt.Sprintf("The profile shows busywork taking a large share of each step; its result is never used.\nRemoving some saves time without touching the model.\n\ntrain.py\n```python\n<<<<<<< SEARCH\n%s   \n=======\nWASTE = %d\n>>>>>>> REPLACE\n```\n", wLine, lessWaste(w, iter))
	case 2:
		if steps < 0 {
			return lrAnswer()
		}
		return fmt.Sprintf("The loss is under the target before the last step, so train a little shorter.\n\n<<<<<<< SEARCH\n%s\n=======\nSTEPS = %d\nSTEPS = STEPS - warmup_skip\n>>>>>>> REPLACE\n", sLine, steps-2-2*iter)
	case 3:
		if iter%2 == 1 {
			return fmt.Sprintf("Train far shorter.\n\n<<<<<<< SEARCH\n%s\n=======\nSTEPS = 4\n>>>>>>> REPLACE\n", sLine)
		}
		return "Remove a busywork product.\n\n<<<<<<< SEARCH\nWASTE = 999\n=======\nWASTE = 998\n>>>>>>> REPLACE\n"
	default:
		if w <= 0 {
			return lrAnswer()
		}
		return fmt.Sprintf("Remove busywork.\n\n<<<<<<< SEARCH\n%s\n=======\nWASTE = %d\n>>>>>>> REPLACE\n", wLine, lessWaste(w, iter))
	}
}

// lessWaste is the busywork count after attempt 1's change: none on odd
// iterations, half on even ones.
func lessWaste(w, iter int) int {
	if iter%2 == 1 {
		return 0
	}
	return w / 2
}

func lrAnswer() string {
	return "A slightly larger learning rate.\n\n<<<<<<< SEARCH\nLR = 0.5\n=======\nLR = 0.55\n>>>>>>> REPLACE\n"
}
