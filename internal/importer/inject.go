package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Values are the settings the environment injects into a speedrun script
// under the log contract. The paths must be absolute: scripts that join a
// data folder in front of them (os.path.join(data_path, args.train_files))
// then keep them as they are.
type Values struct {
	TrainFiles string // glob of the training shards (absolute)
	ValFiles   string // the validation shard (absolute)
	ValTokens  int64
	// Iterations, when positive, replaces the number of training steps
	// (the fast check).
	Iterations int
}

// InjectedPrefix starts the line an injected script prints, on rank 0,
// when its Hyperparameters class is executed: the prefix, a space and a
// JSON object of the injected values as the script holds them.
const InjectedPrefix = "frontier:injected"

// Echo is the decoded payload of the InjectedPrefix line.
type Echo struct {
	TrainFiles string `json:"train_files"`
	ValFiles   string `json:"val_files"`
	ValTokens  int64  `json:"val_tokens"`
}

// Matches reports whether the echo shows the values v were used, and if
// not, what differs.
func (e Echo) Matches(v Values) (bool, string) {
	var diffs []string
	if e.TrainFiles != v.TrainFiles {
		diffs = append(diffs, fmt.Sprintf("train_files %q instead of %q", e.TrainFiles, v.TrainFiles))
	}
	if e.ValFiles != v.ValFiles {
		diffs = append(diffs, fmt.Sprintf("val_files %q instead of %q", e.ValFiles, v.ValFiles))
	}
	if e.ValTokens != v.ValTokens {
		diffs = append(diffs, fmt.Sprintf("val_tokens %d instead of %d", e.ValTokens, v.ValTokens))
	}
	return len(diffs) == 0, strings.Join(diffs, ", ")
}

// ErrNoIterations means the fast check cannot shorten a script: its
// Hyperparameters block has no step-count field.
var ErrNoIterations = errors.New("the Hyperparameters block has no num_iterations (or num_scheduled_iterations) field, so the run cannot be shortened for the fast check")

// Inject rewrites a speedrun script so that it uses v: the data paths and
// val_tokens fields of its Hyperparameters block get v's values (and, with
// v.Iterations, the step count), and the block prints an InjectedPrefix
// line on rank 0 so the log shows what the script holds. Nothing outside
// the block changes, so line numbers in tracebacks stay close to the
// program's own. A script that reassigns an injected setting elsewhere is
// refused with a *ReassignError.
func Inject(src []byte, v Values) ([]byte, error) {
	s, err := Analyze(src)
	if err != nil {
		return nil, err
	}
	if err := s.checkReassign(); err != nil {
		return nil, err
	}
	repl := map[int]string{} // statement start line (0-based) -> new value
	fields := map[Role]*Field{}
	for _, role := range Roles {
		fields[role] = s.Field(role)
	}
	// set gives field name value in every assignment of the block: the one
	// Python keeps and those it overrides.
	set := func(name, value string) {
		for _, f := range s.Fields {
			if f.Name == name {
				repl[f.start] = value
			}
		}
		for _, f := range s.Shadowed {
			if f.Name == name {
				repl[f.start] = value
			}
		}
	}
	set(fields[RoleTrainFiles].Name, pyString(v.TrainFiles))
	set(fields[RoleValFiles].Name, pyString(v.ValFiles))
	set(fields[RoleValTokens].Name, strconv.FormatInt(v.ValTokens, 10))
	if v.Iterations > 0 {
		switch {
		case s.FieldNamed(fieldIterations) != nil:
			set(fieldIterations, strconv.Itoa(v.Iterations))
		case s.FieldNamed(fieldScheduled) != nil:
			set(fieldScheduled, strconv.Itoa(v.Iterations))
			if s.FieldNamed(fieldExtension) != nil {
				set(fieldExtension, "0")
			}
		default:
			return nil, ErrNoIterations
		}
	}

	last := 0
	for _, f := range fields {
		last = max(last, f.end)
	}
	echoIndent := s.lines[fields[RoleValTokens].start].indent
	var b bytes.Buffer
	for i := 0; i < len(s.lines); {
		next := i + 1
		f := s.fieldAt(i)
		switch val, ok := repl[i]; {
		case f != nil && ok:
			b.WriteString(f.assignment(s.lines[i].indent, val))
			b.WriteString(s.nl)
			next = f.end
		default:
			b.WriteString(s.lines[i].text)
			b.WriteString(s.nl)
		}
		if i < last && next >= last {
			b.WriteString(echoLine(echoIndent, fields))
			b.WriteString(s.nl)
		}
		i = next
	}
	return b.Bytes(), nil
}

func (s *Script) fieldAt(line int) *Field {
	for i := range s.Fields {
		if s.Fields[i].start == line {
			return &s.Fields[i]
		}
	}
	for i := range s.Shadowed {
		if s.Shadowed[i].start == line {
			return &s.Shadowed[i]
		}
	}
	return nil
}

// assignment writes the field with a new value, keeping its annotation and
// comment.
func (f *Field) assignment(indent, value string) string {
	var b strings.Builder
	b.WriteString(indent)
	b.WriteString(f.Name)
	if f.Annotation != "" {
		b.WriteString(": ")
		b.WriteString(f.Annotation)
	}
	b.WriteString(" = ")
	b.WriteString(value)
	if f.Comment != "" {
		b.WriteString(cmp.Or(f.gap, "  "))
		b.WriteString(f.Comment)
	}
	return b.String()
}

// echoLine is the statement, in the class body, that prints the injected
// values as the class holds them. It runs once per process when the class
// is defined; only rank 0 prints.
func echoLine(indent string, fields map[Role]*Field) string {
	return fmt.Sprintf(`%sif __import__("os").environ.get("RANK", "0") == "0": print(%q + " " + __import__("json").dumps({"train_files": %s, "val_files": %s, "val_tokens": %s}), flush=True)`,
		indent, InjectedPrefix, fields[RoleTrainFiles].Name, fields[RoleValFiles].Name, fields[RoleValTokens].Name)
}

// pyString is a Python string literal for s.
func pyString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	// JSON string escapes (\" \\ \n \uXXXX) are valid in Python strings.
	return strings.TrimSuffix(b.String(), "\n")
}

// ReassignError is a script that sets an injected setting outside the
// Hyperparameters block, which would defeat the injection.
type ReassignError struct {
	Line  int
	Field string
	Text  string
}

func (e *ReassignError) Error() string {
	return fmt.Sprintf("line %d sets %s outside the Hyperparameters block (%q): under the log contract the data paths and val_tokens are injected and must not be changed", e.Line, e.Field, e.Text)
}

// checkReassign refuses a script that assigns an injected field anywhere
// but in its Hyperparameters block: args.val_tokens = ..., a keyword
// argument val_tokens=..., or the name as a string (setattr, __dict__).
func (s *Script) checkReassign() error {
	type pat struct {
		field string
		re    *regexp.Regexp
	}
	var pats []pat
	for _, f := range s.Fields {
		if f.Role == "" {
			continue
		}
		q := regexp.QuoteMeta(f.Name)
		pats = append(pats,
			pat{f.Name, regexp.MustCompile(`\b` + q + `\s*(=[^=]|=$|[-+*/%]=|//=)`)},
			pat{f.Name, regexp.MustCompile(`["']` + q + `["']`)})
	}
	h := s.Hyperparameters
	for i, l := range s.lines {
		if i+1 >= h.Start && i+1 <= h.End {
			continue
		}
		if m := prefixRE.FindStringSubmatch(strings.TrimSpace(l.code)); m != nil && m[2] == m[4] && m[1] == m[3] {
			// args.train_files = os.path.join(data_path, args.train_files):
			// the 2025 scripts' data-folder prefix, a no-op for the
			// absolute paths frontier injects.
			if f := s.FieldNamed(m[2]); f != nil && (f.Role == RoleTrainFiles || f.Role == RoleValFiles) {
				continue
			}
		}
		// Strings count here (setattr(args, "val_tokens", ...)); comments do not.
		for _, p := range pats {
			if p.re.MatchString(l.code) {
				return &ReassignError{Line: i + 1, Field: p.field, Text: strings.TrimSpace(l.code)}
			}
		}
	}
	return nil
}

// prefixRE matches "X.F = os.path.join(P, X.F)" (groups X, F, X, F).
var prefixRE = regexp.MustCompile(`^(\w+)\.(\w+)\s*=\s*os\.path\.join\(\s*[\w.]+\s*,\s*(\w+)\.(\w+)\s*\)$`)

// sortedSpans returns spans ordered by start line.
func sortedSpans(spans []Span) []Span {
	out := slices.Clone(spans)
	slices.SortFunc(out, func(a, b Span) int { return a.Start - b.Start })
	return out
}
