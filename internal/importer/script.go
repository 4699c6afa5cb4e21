package importer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Role names a setting that the environment injects into a speedrun
// script, whatever the script calls the field.
type Role string

// The injected roles.
const (
	RoleTrainFiles Role = "train_files" // glob of the training shards
	RoleValFiles   Role = "val_files"   // the validation shard
	RoleValTokens  Role = "val_tokens"  // tokens of the validation shard evaluated
)

// Roles lists the injected roles in the order they are reported.
var Roles = []Role{RoleTrainFiles, RoleValFiles, RoleValTokens}

// fieldNames are the Hyperparameters field names each role goes by in the
// speedrun's history (input_bin and input_val_bin before the end of 2024,
// train_files and val_files since).
var fieldNames = map[Role][]string{
	RoleTrainFiles: {"train_files", "input_bin", "train_bin"},
	RoleValFiles:   {"val_files", "input_val_bin", "val_bin"},
	RoleValTokens:  {"val_tokens"},
}

// Iteration fields, rewritten by the fast check: one count, or the
// scheduled-plus-extension pair of the 2026 scripts.
const (
	fieldIterations = "num_iterations"
	fieldScheduled  = "num_scheduled_iterations"
	fieldExtension  = "num_extension_iterations"
)

// Field is one assignment in the Hyperparameters block.
type Field struct {
	Name       string // as written: input_bin, train_files, ...
	Role       Role   // "" for a field frontier does not inject
	Annotation string // the type annotation as written ("str"), or ""
	Expr       string // the value as written
	Comment    string // the trailing comment, with its '#', or ""
	Line       int    // 1-based line of the assignment
	start, end int    // 0-based lines [start, end)
	gap        string // the blanks between the value and the comment
}

// Span is a range of lines, 1-based and inclusive.
type Span struct {
	Start, End int
}

// Script is what Analyze found in a speedrun-style training script.
type Script struct {
	// Hyperparameters is the class block, header line included.
	Hyperparameters Span
	// Fields are the block's assignments, in order.
	Fields []Field
	// ValLog are the statements that print the validation loss line
	// ("step:{step}/{n} val_loss:{...} train_time:{...}ms ...").
	ValLog []Span
	// ValUses are statements outside the block that use an injected
	// validation setting (the validation loader, the val step count).
	ValUses []Span
	// Timing are the statements that stop, start and accumulate the train
	// clock (training_time_ms and t0), each with the synchronize before it.
	Timing []Span
	// Shadowed are assignments of the block that a later assignment of the
	// same field overrides, in order; Repeated says so, per injected or
	// step-count field, for people.
	Shadowed []Field
	Repeated []string

	lines []line
	nl    string
	stmts []stmt
}

// Field returns the field that plays role, or nil.
func (s *Script) Field(role Role) *Field {
	for i := range s.Fields {
		if s.Fields[i].Role == role {
			return &s.Fields[i]
		}
	}
	return nil
}

// FieldNamed returns the field called name, or nil.
func (s *Script) FieldNamed(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// ShapeError says why a program is not a speedrun-style script: every
// missing piece, one per line.
type ShapeError struct {
	Problems []string
}

func (e *ShapeError) Error() string {
	return "not a speedrun-style training script:\n  - " + strings.Join(e.Problems, "\n  - ") +
		"\n(frontier needs a `class Hyperparameters:` block holding the data paths and val_tokens, a print of the " +
		"`step:N/M val_loss:... train_time:...ms step_avg:...ms` line, and the training_time_ms timing code, as in " +
		"the NanoGPT speedrun's train_gpt.py)"
}

// ErrNotSpeedrun is matched by every *ShapeError (errors.Is).
var ErrNotSpeedrun = errors.New("not a speedrun-style training script")

// Is makes errors.Is(err, ErrNotSpeedrun) true for shape errors.
func (e *ShapeError) Is(target error) bool { return target == ErrNotSpeedrun }

var (
	classRE     = regexp.MustCompile(`^class\s+Hyperparameters\b.*:$`)
	printRE     = regexp.MustCompile(`\bprint\w*\s*\(|\.write\s*\(`)
	timeAccRE   = regexp.MustCompile(`^training_time_ms\s*(\+=|=)`)
	clockRE     = regexp.MustCompile(`^t0\s*=\s*time\.(perf_counter|time|monotonic)\(\)$`)
	syncRE      = regexp.MustCompile(`^torch\.cuda\.synchronize\(\)$`)
	valLogWords = []string{"step:", "val_loss:"}
)

// Analyze finds the parts of a speedrun script that frontier injects into,
// reads or protects. A program without them gets a *ShapeError naming
// every missing piece.
func Analyze(src []byte) (*Script, error) {
	s := &Script{}
	s.lines, s.nl = scanLines(string(src))
	s.stmts = statements(s.lines)
	var problems []string

	hyper := -1
	for k, st := range s.stmts {
		if st.indent == "" && classRE.MatchString(st.text(s.lines)) {
			hyper = k
			break
		}
	}
	if hyper < 0 {
		problems = append(problems, "no Hyperparameters block: the script must define `class Hyperparameters:` with its settings")
	} else {
		problems = append(problems, s.readFields(hyper)...)
	}

	valRE := s.valAttrRE()
	for _, st := range s.stmts {
		if s.inHyper(st) {
			continue
		}
		t := st.text(s.lines)
		switch {
		case isValLog(t):
			s.ValLog = append(s.ValLog, span(st))
		case valRE != nil && valRE.MatchString(t):
			s.ValUses = append(s.ValUses, span(st))
		}
	}
	if len(s.ValLog) == 0 {
		problems = append(problems, "no validation-loss print: the script must print `step:{step}/{steps} val_loss:{val_loss:.4f} train_time:{ms:.0f}ms step_avg:{avg:.2f}ms`")
	}
	s.findTiming()
	if len(s.Timing) == 0 {
		problems = append(problems, "no timing code: the script must accumulate the train clock in training_time_ms (`training_time_ms += 1000 * (time.perf_counter() - t0)`)")
	}
	if len(problems) > 0 {
		return nil, &ShapeError{Problems: problems}
	}
	return s, nil
}

// readFields collects the assignments of the Hyperparameters class whose
// header is statement k.
func (s *Script) readFields(k int) []string {
	head := s.stmts[k]
	end := len(s.lines)
	bodyIndent := ""
	for _, st := range s.stmts[k+1:] {
		if st.indent == "" {
			end = st.start
			break
		}
		if bodyIndent == "" {
			bodyIndent = st.indent
		}
	}
	// Trailing blank and comment lines belong after the block.
	for end > head.end && strings.TrimSpace(s.lines[end-1].code) == "" {
		end--
	}
	s.Hyperparameters = Span{Start: head.start + 1, End: end}

	var problems []string
	seen := map[string]int{}
	for _, st := range s.stmts[k+1:] {
		if st.start >= end {
			break
		}
		if st.indent != bodyIndent {
			continue
		}
		name, ann, expr, ok := splitAssign(st.text(s.lines))
		if !ok {
			continue
		}
		last := s.lines[st.end-1]
		f := Field{Name: name, Annotation: ann, Expr: expr, Comment: last.comment,
			Line: st.start + 1, start: st.start, end: st.end}
		if last.comment != "" {
			f.gap = last.text[len(last.code) : len(last.text)-len(last.comment)]
		}
		for role, names := range fieldNames {
			for _, n := range names {
				if n == name {
					f.Role = role
				}
			}
		}
		if first, dup := seen[name]; dup {
			// A field set twice: the last assignment is the one Python
			// keeps (record 17 of the speedrun sets val_tokens twice, and
			// the published benchmark runs it as it is). The earlier ones
			// are kept aside: an injected value goes into every one.
			for i := range s.Fields {
				if s.Fields[i].Name == name {
					s.Shadowed = append(s.Shadowed, s.Fields[i])
					s.Fields[i] = f
				}
			}
			if f.Role != "" || isIterations(name) {
				s.Repeated = append(s.Repeated, fmt.Sprintf("line %d: Hyperparameters sets %s again (first on line %d); Python keeps the last value, and frontier writes its own into both",
					f.Line, name, first))
			}
			continue
		}
		seen[name] = f.Line
		s.Fields = append(s.Fields, f)
	}
	for _, role := range Roles {
		var found []string
		for _, f := range s.Fields {
			if f.Role == role {
				found = append(found, f.Name)
			}
		}
		switch len(found) {
		case 0:
			problems = append(problems, fmt.Sprintf("the Hyperparameters block has no %s field (one of: %s)", role, strings.Join(fieldNames[role], ", ")))
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("the Hyperparameters block has several %s fields (%s): frontier cannot tell which one the script uses", role, strings.Join(found, ", ")))
		}
	}
	return problems
}

func isIterations(name string) bool {
	return name == fieldIterations || name == fieldScheduled || name == fieldExtension
}

func (s *Script) inHyper(st stmt) bool {
	h := s.Hyperparameters
	return h.End > 0 && st.start+1 >= h.Start && st.start+1 <= h.End
}

func span(st stmt) Span { return Span{Start: st.start + 1, End: st.end} }

func isValLog(t string) bool {
	if !printRE.MatchString(t) {
		return false
	}
	for _, w := range valLogWords {
		if !strings.Contains(t, w) {
			return false
		}
	}
	return true
}

// valAttrRE matches a statement that reads an injected validation field
// as an attribute (args.val_tokens, args.input_val_bin); nil when the block
// has none.
func (s *Script) valAttrRE() *regexp.Regexp {
	var names []string
	for _, f := range s.Fields {
		if f.Role == RoleValFiles || f.Role == RoleValTokens {
			names = append(names, regexp.QuoteMeta(f.Name))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return regexp.MustCompile(`\.(?:` + strings.Join(names, "|") + `)\b`)
}

// findTiming collects the statements that run the train clock: every
// training_time_ms assignment and every t0 = time.perf_counter(), each
// with a torch.cuda.synchronize() directly before it.
func (s *Script) findTiming() {
	for k, st := range s.stmts {
		if s.inHyper(st) {
			continue
		}
		t := st.text(s.lines)
		if !timeAccRE.MatchString(t) && !clockRE.MatchString(t) {
			continue
		}
		sp := span(st)
		if k > 0 {
			prev := s.stmts[k-1]
			if prev.indent == st.indent && syncRE.MatchString(prev.text(s.lines)) && prev.end == st.start {
				sp.Start = prev.start + 1
			}
		}
		s.Timing = append(s.Timing, sp)
	}
}
