package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// SuiteFile is the name of a suite's description inside its folder.
const SuiteFile = "suite.yaml"

// Suite is a folder of records and the tasks between them, as written in
// suite.yaml.
type Suite struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Track is the track of every record that does not name its own: a
	// track's name, or a track folder relative to the suite's folder.
	Track string `yaml:"track"`
	// Times says where the records' published times were measured.
	Times string `yaml:"times,omitempty"`
	// Hardware names what the records are meant to run on, as prompts
	// of log-contract tracks say it ("one node of 8 x H100 GPUs");
	// empty: the track's device and GPUs.
	Hardware string `yaml:"hardware,omitempty"`
	// Contract notes a weaker verification than the harness's: "log" for
	// imported speedrun scripts whose logs are parsed.
	Contract string   `yaml:"contract,omitempty"`
	Records  []Record `yaml:"records"`
	Tasks    []Task   `yaml:"tasks"`

	// Dir is the folder the suite was read from; empty for built-in
	// suites, whose files live in fsys.
	Dir     string `yaml:"-"`
	Builtin bool   `yaml:"-"`
	fsys    fs.FS
}

// Record is one program of the suite's history.
type Record struct {
	ID string `yaml:"id" json:"id"`
	// Program is the record's training program, relative to the suite's
	// folder; empty when only its time is known (a goal without code).
	Program string `yaml:"program,omitempty" json:"program,omitempty"`
	// Track overrides the suite's track for this record.
	Track       string `yaml:"track,omitempty" json:"track,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// TimeMs is the published train time to the track's target, measured
	// where Suite.Times says; ValLoss the loss it reached.
	TimeMs  float64 `yaml:"time_ms" json:"time_ms"`
	ValLoss float64 `yaml:"val_loss,omitempty" json:"val_loss,omitempty"`
	// Runs and TimeSDMs are the evidence behind TimeMs when the suite
	// gives it: the runs it is the mean of and their standard deviation.
	// Runs 0 means the source published one figure without its noise.
	Runs     int     `yaml:"runs,omitempty" json:"runs,omitempty"`
	TimeSDMs float64 `yaml:"time_sd_ms,omitempty" json:"time_sd_ms,omitempty"`
}

// HasNoise says whether the suite gives the spread of the runs behind the
// record's time.
func (r Record) HasNoise() bool { return r.Runs >= 2 && r.TimeSDMs > 0 }

// Task is one step of the history: reproduce what record Goal changed,
// starting from record Start.
type Task struct {
	Name  string `yaml:"name"`
	Start string `yaml:"start"`
	Goal  string `yaml:"goal"`
	Hints Hints  `yaml:"hints"`
	// Diff is the ground-truth change from Start to Goal, for analysis
	// only: it is never shown to a model.
	Diff string `yaml:"diff,omitempty"`
}

// Hints are the task's hint files by level, relative to the suite's folder.
type Hints struct {
	Pseudocode  string `yaml:"pseudocode,omitempty"`  // level 1
	Description string `yaml:"description,omitempty"` // level 2
	Paper       string `yaml:"paper,omitempty"`       // level 3
}

// File returns the hint file of a level (1, 2 or 3), "" when there is none.
func (h Hints) File(level int) string {
	switch level {
	case 1:
		return h.Pseudocode
	case 2:
		return h.Description
	case 3:
		return h.Paper
	}
	return ""
}

// Levels lists the levels the task has a hint for.
func (h Hints) Levels() []int {
	var out []int
	for l := 1; l <= 3; l++ {
		if h.File(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// FieldError is one invalid value, located in suite.yaml.
type FieldError = yamlfile.Error

// Parse decodes and validates a suite description. file names it in
// errors: every unknown key and every invalid value is reported with its
// line and column.
func Parse(file string, b []byte) (*Suite, error) {
	s := &Suite{}
	if err := yamlfile.Decode(file, b, s, "the suite is empty: it needs at least name, track, records and tasks"); err != nil {
		return nil, err
	}
	s.applyDefaults()
	if errs := s.validate(); len(errs) > 0 {
		yamlfile.Locate(file, b, errs)
		return nil, yamlfile.Join(errs)
	}
	return s, nil
}

func (s *Suite) applyDefaults() {
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if t.Name == "" {
			t.Name = t.Start + "-" + t.Goal
		}
	}
}

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	idRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	errPath = "must be a path inside the suite's folder"
)

func (s *Suite) validate() []*FieldError {
	var errs []*FieldError
	bad := func(p, format string, args ...any) {
		errs = append(errs, &FieldError{Path: p, Msg: fmt.Sprintf(format, args...)})
	}
	file := func(p, v string, required bool) {
		switch {
		case v == "" && required:
			bad(p, "required: a file relative to the suite's folder")
		case v != "" && !inside(v):
			bad(p, "%q: %s", v, errPath)
		}
	}
	if s.Name == "" {
		bad("name", "required: a short lower-case name like tiny-ladder")
	} else if !nameRE.MatchString(s.Name) {
		bad("name", "%q: use lower-case letters, digits, '.', '_' and '-'", s.Name)
	}
	if s.Track == "" {
		bad("track", "required: the records' track, by name (tiny) or as a folder relative to the suite")
	}
	switch s.Contract {
	case "", "harness", "log":
	default:
		bad("contract", "%q: use harness (the default) or log (imported speedrun scripts whose logs are parsed)", s.Contract)
	}
	if len(s.Records) < 2 {
		bad("records", "the suite needs at least two records (a start and a goal)")
	}
	ids := map[string]int{}
	for i, r := range s.Records {
		p := fmt.Sprintf("records[%d]", i)
		switch {
		case r.ID == "":
			bad(p+".id", "required: a short name like r1 or record_1")
		case !idRE.MatchString(r.ID):
			bad(p+".id", "%q: use letters, digits, '.', '_' and '-'", r.ID)
		default:
			if j, dup := ids[r.ID]; dup {
				bad(p+".id", "%q is the id of records[%d] too", r.ID, j)
			}
			ids[r.ID] = i
		}
		file(p+".program", r.Program, false)
		if r.Track != "" && strings.HasPrefix(r.Track, "/") {
			bad(p+".track", "%q: name a track, or a folder relative to the suite", r.Track)
		}
		if !(r.TimeMs > 0) || math.IsInf(r.TimeMs, 0) {
			bad(p+".time_ms", "%v: the published train time in milliseconds must be positive", r.TimeMs)
		}
		if r.Runs < 0 {
			bad(p+".runs", "%d: the number of runs behind time_ms cannot be negative", r.Runs)
		}
		if r.TimeSDMs < 0 || math.IsNaN(r.TimeSDMs) || math.IsInf(r.TimeSDMs, 0) {
			bad(p+".time_sd_ms", "%v: a standard deviation in milliseconds must be a finite number >= 0", r.TimeSDMs)
		} else if r.TimeSDMs > 0 && r.Runs < 2 {
			bad(p+".time_sd_ms", "a standard deviation needs runs: 2 or more (the runs time_ms is the mean of)")
		}
		if r.ValLoss < 0 || math.IsNaN(r.ValLoss) {
			bad(p+".val_loss", "%v: must be a loss, or 0 when unknown", r.ValLoss)
		}
	}
	if len(s.Tasks) == 0 {
		bad("tasks", "the suite needs at least one task")
	}
	names := map[string]int{}
	for i, t := range s.Tasks {
		p := fmt.Sprintf("tasks[%d]", i)
		if !idRE.MatchString(t.Name) {
			bad(p+".name", "%q: use letters, digits, '.', '_' and '-'", t.Name)
		} else if j, dup := names[t.Name]; dup {
			bad(p+".name", "%q is the name of tasks[%d] too", t.Name, j)
		}
		names[t.Name] = i
		si, okStart := ids[t.Start]
		gi, okGoal := ids[t.Goal]
		switch {
		case t.Start == "":
			bad(p+".start", "required: the id of the record the task starts from")
		case !okStart:
			bad(p+".start", "%q: no record has this id", t.Start)
		case s.Records[si].Program == "":
			bad(p+".start", "record %q has no program to start from", t.Start)
		}
		switch {
		case t.Goal == "":
			bad(p+".goal", "required: the id of the record to reproduce")
		case !okGoal:
			bad(p+".goal", "%q: no record has this id", t.Goal)
		case t.Goal == t.Start:
			bad(p+".goal", "%q: the goal is the start", t.Goal)
		case okStart && gi < si:
			bad(p+".goal", "%q comes before its start %q in records: records are listed oldest first", t.Goal, t.Start)
		}
		file(p+".hints.pseudocode", t.Hints.Pseudocode, false)
		file(p+".hints.description", t.Hints.Description, false)
		file(p+".hints.paper", t.Hints.Paper, false)
		file(p+".diff", t.Diff, false)
	}
	return errs
}

// inside reports whether p is a relative path that stays inside its folder.
func inside(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

// MaxFileBytes bounds a file of a suite that frontier reads (a record's
// program, a hint, a diff): the speedrun's records are tens of kilobytes.
const MaxFileBytes = 1 << 20

// ReadFile reads a file of the suite: a regular file inside the suite's
// folder, of at most MaxFileBytes. A suite folder may come from anyone, and
// what it names is printed, put into prompts and run.
func (s *Suite) ReadFile(name string) ([]byte, error) {
	var b []byte
	var err error
	if s.fsys == nil {
		b, err = yamlfile.ReadInside(s.Dir, filepath.FromSlash(path.Clean(name)), MaxFileBytes)
	} else if b, err = fs.ReadFile(s.fsys, path.Clean(name)); err == nil && len(b) > MaxFileBytes {
		err = fmt.Errorf("%s is larger than %d bytes", name, MaxFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("suite %s: read %s: %w", s.Name, name, err)
	}
	return b, nil
}

// Location says where the suite comes from, for humans.
func (s *Suite) Location() string {
	if s.Builtin {
		return "built-in"
	}
	return s.Dir
}

// Record returns the record with id.
func (s *Suite) Record(id string) (*Record, error) {
	for i := range s.Records {
		if s.Records[i].ID == id {
			return &s.Records[i], nil
		}
	}
	return nil, fmt.Errorf("suite %s has no record %q", s.Name, id)
}

// Task returns the task called name.
func (s *Suite) Task(name string) (*Task, error) {
	for i := range s.Tasks {
		if s.Tasks[i].Name == name {
			return &s.Tasks[i], nil
		}
	}
	names := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("suite %s has no task %q; its tasks: %s", s.Name, name, strings.Join(names, ", "))
}

// Program returns a record's program.
func (s *Suite) Program(id string) ([]byte, error) {
	r, err := s.Record(id)
	if err != nil {
		return nil, err
	}
	if r.Program == "" {
		return nil, fmt.Errorf("suite %s: record %s has no program (only its time is known)", s.Name, id)
	}
	return s.ReadFile(r.Program)
}

// TrackOf returns the track a record runs on: a track's name, or the
// absolute path of a track folder given relative to the suite.
func (s *Suite) TrackOf(r *Record) string {
	t := r.Track
	if t == "" {
		t = s.Track
	}
	if isTrackPath(t) && s.Dir != "" && !filepath.IsAbs(t) {
		return filepath.Join(s.Dir, filepath.FromSlash(t))
	}
	return t
}

// isTrackPath reports whether a suite names its track by folder rather
// than by name.
func isTrackPath(t string) bool {
	return strings.ContainsRune(t, '/') || strings.HasPrefix(t, ".")
}

// Hint returns the text of a task's hint at level (1, 2 or 3).
func (s *Suite) Hint(t *Task, level int) (string, error) {
	f := t.Hints.File(level)
	if f == "" {
		return "", fmt.Errorf("task %s of suite %s has no level %d hint", t.Name, s.Name, level)
	}
	b, err := s.ReadFile(f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// GroundTruth returns the task's ground-truth diff, "" when it has none.
// It is for analysis: it never reaches a prompt.
func (s *Suite) GroundTruth(t *Task) (string, error) {
	if t.Diff == "" {
		return "", nil
	}
	b, err := s.ReadFile(t.Diff)
	return string(b), err
}

// checkFiles reads every file the suite names, so that a suite that loads
// can be run.
func (s *Suite) checkFiles() error {
	var errs []error
	for _, f := range s.fileList() {
		if _, err := s.ReadFile(f); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range s.Records {
		if r.Program == "" {
			continue
		}
		if b, err := s.ReadFile(r.Program); err == nil && len(bytes.TrimSpace(b)) == 0 {
			errs = append(errs, fmt.Errorf("suite %s: the program of record %s (%s) is empty", s.Name, r.ID, r.Program))
		}
	}
	return errors.Join(errs...)
}

// fileList is every file suite.yaml names, sorted, without repeats.
func (s *Suite) fileList() []string {
	var fs []string
	for _, r := range s.Records {
		if r.Program != "" {
			fs = append(fs, r.Program)
		}
	}
	for _, t := range s.Tasks {
		for _, l := range t.Hints.Levels() {
			fs = append(fs, t.Hints.File(l))
		}
		if t.Diff != "" {
			fs = append(fs, t.Diff)
		}
	}
	for i, f := range fs {
		fs[i] = path.Clean(f)
	}
	slices.Sort(fs)
	return slices.Compact(fs)
}

// Hash is the SHA-256 of suite.yaml and of every file it names: what a
// bench run records, so that results from two versions of a suite are
// not mixed.
func (s *Suite) Hash() (string, error) {
	h := sha256.New()
	for _, f := range append([]string{SuiteFile}, s.fileList()...) {
		b, err := s.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
