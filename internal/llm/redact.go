package llm

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// RedactedMarker replaces every secret that Redact finds.
const RedactedMarker = "[REDACTED]"

// secretPatterns match credentials by their shape. Each keeps the text
// before the secret (group 1, may be empty) and replaces the rest.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys, whole block.
	regexp.MustCompile(`()-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
	// Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-..., sk-svcacct-...),
	// OpenRouter (sk-or-v1-...) and the many servers that copy the shape.
	regexp.MustCompile(`(\b)sk-[A-Za-z0-9_\-]{16,}`),
	// Google API keys.
	regexp.MustCompile(`(\b)AIza[0-9A-Za-z_\-]{30,}`),
	// Hugging Face, GitHub, Slack, Groq, Replicate tokens.
	regexp.MustCompile(`(\b)(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|gsk_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,})`),
	// AWS access key ids.
	regexp.MustCompile(`(\b)(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
	// JSON web tokens.
	regexp.MustCompile(`(\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	// Authorization headers: "Bearer <token>".
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}`),
	// Query parameters in URLs: ?key=..., &access_token=...
	regexp.MustCompile(`(?i)([?&](?:key|api[_-]?key|token|access[_-]?token|secret)=)[^&\s"']{8,}`),
}

// assignment matches "NAME = value" and "NAME: value" (also quoted JSON and
// YAML) where NAME ends in a word that names a secret. The value is
// replaced only when it looks like one (see looksSecret), so code such as
// "token = tokenizer(text)" stays readable.
var assignment = regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|secret|token|password|passwd|access[_-]?key|private[_-]?key|client[_-]?secret)["']?\s*[:=]\s*["']?)([^\s"',;()\[\]{}<>]{8,})`)

// Redact replaces anything in s that looks like an API key, a token or a
// password with RedactedMarker. It is meant for prompts, model answers and
// program output before they are stored or shown. It knows credentials by
// their shape only; use a Redactor to also remove known values.
func Redact(s string) string {
	if s == "" {
		return s
	}
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}"+RedactedMarker)
	}
	return assignment.ReplaceAllStringFunc(s, func(m string) string {
		sub := assignment.FindStringSubmatch(m)
		if sub == nil || !looksSecret(sub[2]) {
			return m
		}
		return sub[1] + RedactedMarker
	})
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
