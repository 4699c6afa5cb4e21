package propose

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/frontier-bench/frontier/internal/llm"
)

// FailNotIdea: the model answered an idea prompt with something that is
// not an idea (code, SEARCH/REPLACE blocks, a refusal), even when asked
// again. Answer holds its last answer and Err says what was wrong.
const FailNotIdea FailureKind = "not_idea"

// Idea asks the model for an idea in free text: the first stage of
// meta-prompting, whose answer the implementation prompt then carries. An
// answer that is not an idea (see NotAnIdea) is sent back once, in the same
// conversation, with what was wrong with it. It fails with an *Error of
// kind FailCall (the call failed), FailNoAnswer (no answer, or an empty
// one) or FailNotIdea (twice not an idea): the caller then falls back to a
// prompt that asks for code directly.
func (p *LLM) Idea(ctx context.Context, prompt llm.Request) (string, error) {
	if p.client == nil {
		return "", &Error{Kind: FailCall, Proposer: KindLLM, Model: prompt.Model, Err: errors.New("no model client configured")}
	}
	req := prompt
	for attempt := 1; ; attempt++ {
		resp, err := p.client.Complete(ctx, req)
		if err != nil {
			return "", &Error{Kind: FailCall, Proposer: KindLLM, Model: prompt.Model, Err: err}
		}
		idea := ""
		if resp != nil {
			idea = strings.TrimSpace(resp.Text)
		}
		if idea == "" {
			return "", &Error{Kind: FailNoAnswer, Proposer: KindLLM, Model: prompt.Model, Response: resp}
		}
		why := NotAnIdea(idea)
		if why == "" {
			return idea, nil
		}
		if attempt == 2 {
			return "", &Error{Kind: FailNotIdea, Proposer: KindLLM, Model: prompt.Model, Answer: idea, Response: resp,
				Err: fmt.Errorf("the answer is not an idea: %s", why)}
		}
		req.Messages = append(append([]llm.Message(nil), prompt.Messages...),
			llm.Message{Role: llm.RoleAssistant, Content: idea},
			llm.Message{Role: llm.RoleUser, Content: "That is not what was asked: " + why + ". Answer again with ONE idea in prose: " +
				"what to change and why it should reach the target in less training time. No code and no SEARCH/REPLACE blocks: " +
				"the implementation is the next step."})
	}
}

var (
	refusalRe = regexp.MustCompile(`(?i)^\W*(i\s+(could\s*n[o']t|can\s*n[o']t|cannot|am\s+(not\s+able|unable)|was\s+unable|do\s*n[o']t|did\s*n[o']t|have\s+no|see\s+no)\b|no\s+(change|idea|improvement)s?\b|sorry\b|unfortunately\b|nothing\s+to\b|there\s+is\s+nothing\b|i'?m\s+(not\s+sure|unable|sorry)\b)`)
	blockRe   = regexp.MustCompile(`(?m)^\s*(<{5,}\s*SEARCH|={5,}\s*$|>{5,}\s*REPLACE)`)
	codeRe    = regexp.MustCompile(`^\s*(import |from \S+ import |def |class |for |while |if |elif |else:|return |@|[A-Za-z_][\w.\[\]]*\s*[+\-*/]?=[^=])`)
)

// NotAnIdea says why an answer to an idea prompt is not an idea, or ""
// when it is one: SEARCH/REPLACE blocks (the implementation, given too
// early), an answer that is mostly code, a refusal or a statement that
// nothing was found, or a few words that say nothing.
func NotAnIdea(answer string) string {
	t := strings.TrimSpace(answer)
	if blockRe.MatchString(t) {
		return "it holds SEARCH/REPLACE blocks"
	}
	if refusalRe.MatchString(t) {
		return "it says there is no idea rather than giving one"
	}
	var prose, code, fenced int
	inFence := false
	for _, l := range strings.Split(t, "\n") {
		s := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~"):
			inFence = !inFence
		case s == "":
		case inFence:
			fenced++
		case codeRe.MatchString(l):
			code++
		default:
			prose++
		}
	}
	if code+fenced > 2*prose && code+fenced >= 4 {
		return fmt.Sprintf("it is mostly code (%d lines of code, %d of prose)", code+fenced, prose)
	}
	if n := len(strings.Fields(stripFences(t))); n < 4 {
		return fmt.Sprintf("it is %d words long, too short to say what to change and why", n)
	}
	return ""
}

// stripFences drops fenced code from text.
func stripFences(t string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(t, "\n") {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
