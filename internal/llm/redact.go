package llm

import (
	"cmp"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// RedactedMarker replaces every secret that Redact finds.
const RedactedMarker = "[REDACTED]"

// A rule finds one kind of secret. Group 1 of re is kept (the text before
// the secret, possibly empty) and the rest of the match is replaced. A rule
// runs on a line only when the line, in lower case, contains one of its
// triggers: Go's regular expressions are slow on megabytes of program
// output, and most lines hold none of the triggers.
type rule struct {
	re       *regexp.Regexp
	triggers []string
}

var rules = []rule{
	// Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-..., sk-svcacct-...),
	// OpenRouter (sk-or-v1-...) and the many servers that copy the shape.
	{re: regexp.MustCompile(`(\b)sk-[A-Za-z0-9_\-]{16,}`), triggers: []string{"sk-"}},
	// Google API keys.
	{re: regexp.MustCompile(`(\b)AIza[0-9A-Za-z_\-]{30,}`), triggers: []string{"aiza"}},
	// Hugging Face, GitHub, Slack, Groq, Replicate tokens.
	{re: regexp.MustCompile(`(\b)(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|gsk_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,})`),
		triggers: []string{"hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "gsk_", "r8_"}},
	// AWS access key ids.
	{re: regexp.MustCompile(`(\b)(?:AKIA|ASIA)[0-9A-Z]{16}\b`), triggers: []string{"akia", "asia"}},
	// JSON web tokens.
	{re: regexp.MustCompile(`(\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), triggers: []string{"eyj"}},
	// Authorization headers: "Bearer <token>".
	{re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}`), triggers: []string{"bearer"}},
	// Query parameters in URLs: ?key=..., &access_token=...
	{re: regexp.MustCompile(`(?i)([?&](?:key|api[_-]?key|token|access[_-]?token|secret)=)[^&\s"']{8,}`), triggers: []string{"key=", "token=", "secret="}},
}

// pemBlock matches PEM private keys, which span lines.
var pemBlock = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)

// Redact replaces anything in s that looks like an API key, a token or a
// password with RedactedMarker. It is meant for prompts, model answers and
// program output before they are stored or shown. It knows credentials by
// their shape only; use a Redactor to also remove known values.
func Redact(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = pemBlock.ReplaceAllString(s, RedactedMarker)
	}
	lower := asciiLower(s)
	var b strings.Builder
	last := 0 // s[:last] is written to b, once something changed
	changed := false
	for l := range triggerLines(lower) {
		line, out := s[l.start:l.end], s[l.start:l.end]
		low := lower[l.start:l.end]
		if l.rules&1 != 0 {
			out = redactAssignments(out, low)
		}
		for k, r := range rules {
			if l.rules&(2<<k) != 0 {
				out = r.apply(out)
			}
		}
		if out == line {
			continue
		}
		if !changed {
			changed = true
			b.Grow(len(s))
		}
		b.WriteString(s[last:l.start])
		b.WriteString(out)
		last = l.end
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// triggerLine is a line of a text, text[start:end] with its line feed,
// that holds a trigger: rules has bit 0 set for assignmentWords and bit
// k+1 for the triggers of rules[k].
type triggerLine struct {
	start, end int
	rules      uint16
}

// trigger is one trigger word and the rules it starts.
type trigger struct {
	word  string
	rules uint16
}

// triggerScan finds every trigger in a lower-cased text in one pass: a
// table indexed by two bytes says which triggers start with them, so that
// most positions cost one lookup. Asking each line for each of two dozen
// triggers in turn was a quarter of the CPU time a proposal of a 100 KB
// program took (BenchmarkEngine/llm).
type triggerScan struct {
	// at holds, for the two bytes a position starts with, 1 + the index
	// in by of the triggers that start with them, or 0.
	at [1 << 16]uint8
	by [][]trigger
}

// scan is built on the first Redact, not at start-up: most commands never
// redact.
var scan = sync.OnceValue(func() *triggerScan {
	t := &triggerScan{}
	add := func(words []string, bit uint16) {
		for _, w := range words {
			k := uint16(w[0])<<8 | uint16(w[1])
			if t.at[k] == 0 {
				t.by = append(t.by, nil)
				t.at[k] = uint8(len(t.by))
			}
			t.by[t.at[k]-1] = append(t.by[t.at[k]-1], trigger{w, bit})
		}
	}
	add(assignmentWords, 1)
	for k, r := range rules {
		add(r.triggers, 2<<k)
	}
	return t
})

// triggerLines yields, in order, the lines of lower that hold a trigger,
// with the rules to run on each.
func triggerLines(lower string) iter.Seq[triggerLine] {
	return func(yield func(triggerLine) bool) {
		ts := scan()
		cur := triggerLine{start: -1, end: -1}
		for i := 0; i+1 < len(lower); i++ {
			at := ts.at[uint16(lower[i])<<8|uint16(lower[i+1])]
			if at == 0 {
				continue
			}
			var bits uint16
			for _, t := range ts.by[at-1] {
				if strings.HasPrefix(lower[i:], t.word) {
					bits |= t.rules
				}
			}
			if bits == 0 {
				continue
			}
			if i >= cur.end {
				if cur.rules != 0 && !yield(cur) {
					return
				}
				cur = triggerLine{start: strings.LastIndexByte(lower[:i], '\n') + 1, end: len(lower)}
				if e := strings.IndexByte(lower[i:], '\n'); e >= 0 {
					cur.end = i + e + 1
				}
			}
			cur.rules |= bits
		}
		if cur.rules != 0 {
			yield(cur)
		}
	}
}

func (r rule) apply(s string) string {
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[3]])
		b.WriteString(RedactedMarker)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// assignmentWords end the names whose values redactAssignments checks.
var assignmentWords = []string{"key", "secret", "token", "password", "passwd"}

// redactAssignments replaces the value in "NAME = value" and "NAME: value"
// (also quoted, as in JSON and YAML) where NAME ends in one of
// assignmentWords (OPENAI_API_KEY, x-api-key, HF_TOKEN, client_secret), if
// the value looks like a secret (see looksSecret), so that code such as
// "token = tokenizer(text)" stays readable. It scans by hand: a regular
// expression costs tens of microseconds per line of program output.
// lower is asciiLower(line).
func redactAssignments(line, lower string) string {
	var spans [][2]int
	for _, w := range assignmentWords {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			i += from
			from = i + len(w)
			if vs, ve, ok := assignedValue(line, i+len(w)); ok && looksSecret(line[vs:ve]) {
				spans = append(spans, [2]int{vs, ve})
			}
		}
	}
	if spans == nil {
		return line
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var b strings.Builder
	b.Grow(len(line))
	last := 0
	for _, sp := range spans {
		if sp[0] < last {
			continue
		}
		b.WriteString(line[last:sp[0]])
		b.WriteString(RedactedMarker)
		last = sp[1]
	}
	b.WriteString(line[last:])
	return b.String()
}

// assignedValue reads, from position i just after a name, an optional
// closing quote, a ":" or "=" between optional blanks and an optional
// opening quote, and returns the span of the value that follows.
func assignedValue(s string, i int) (start, end int, ok bool) {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || (s[i] != ':' && s[i] != '=') {
		return 0, 0, false
	}
	i++
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	start = i
	for i < len(s) && !strings.ContainsRune(" \t\r\n\"'`,;&()[]{}<>", rune(s[i])) {
		i++
	}
	return start, i, i-start >= 8
}

// asciiLower lower-cases ASCII letters only, so that byte offsets stay the
// same as in s.
func asciiLower(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			if last == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteByte(c + 'a' - 'A')
			last = i + 1
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// looksSecret tells a credential from the code and prose that follow words
// like "token" or "secret": it must be one run of key characters with
// letters and digits mixed, and not an identifier or a dotted name.
func looksSecret(v string) bool {
	if strings.Contains(v, RedactedMarker) {
		return false
	}
	var lower, upper, digit, other int
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= '0' && c <= '9':
			digit++
		default:
			other++
		}
	}
	letters := lower + upper
	if letters == 0 {
		return false // a number, like a token count
	}
	if digit == 0 {
		// Words and names (snake_case, CamelCase, dotted.paths) unless long
		// and mixed-case like a base64 secret.
		return len(v) >= 24 && lower > 0 && upper > 0 && !strings.ContainsAny(v, "._")
	}
	// Identifiers with a number in them (batch_size_2048, layer.12.attn).
	if strings.ContainsAny(v, "._") && upper == 0 && len(v) < 32 {
		return false
	}
	return len(v) >= 12
}

// A Redactor removes known secret values (the configured API keys) and
// everything Redact finds. It is safe for concurrent use.
type Redactor struct {
	known *strings.Replacer
}

// NewRedactor returns a Redactor that also removes the given values.
// Values shorter than 8 bytes are ignored: replacing them would destroy
// ordinary text.
func NewRedactor(secrets ...string) *Redactor {
	var keep []string
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= 8 && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	r := &Redactor{}
	if len(keep) == 0 {
		return r
	}
	// Longer values first, so a key that contains another is removed whole.
	slices.SortFunc(keep, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	var pairs []string
	for _, s := range keep {
		pairs = append(pairs, s, RedactedMarker)
	}
	r.known = strings.NewReplacer(pairs...)
	return r
}

// Redact removes the known values, then what Redact finds.
func (r *Redactor) Redact(s string) string {
	if r != nil && r.known != nil {
		s = r.known.Replace(s)
	}
	return Redact(s)
}
