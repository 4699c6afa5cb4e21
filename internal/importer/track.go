// Package importer knows the shape of NanoGPT speedrun training scripts
// and their logs. It imports a record (the script, or a record log whose
// first part is the script) as a frontier track folder under the legacy
// "log" contract, and it rewrites and reads such scripts when they are
// evaluated: injecting the environment's data paths and validation
// settings, and parsing the step, validation and memory lines they print.
package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
)

// Defaults of an imported track: the speedrun's first track.
const (
	DefaultTarget    = 3.28
	DefaultGPUs      = 8
	DefaultValTokens = 10485760
	DefaultDataDir   = "fineweb10B"
	// ProgramFile is the reference program's name in the track folder.
	ProgramFile = "train_gpt.py"
	// fastValTokens is one validation batch of the 8-GPU speedrun
	// (4*64*1024*8), which every era's validation batch divides.
	fastValTokens = 2097152
)

// Options says what to import and where.
type Options struct {
	// From names the source file (for the README and the default name).
	From string
	// Source is the script or the record log.
	Source []byte
	// Name of the track; empty derives one from From.
	Name string
	// Out is the track folder to create; empty means ./NAME. It must not
	// exist or be empty.
	Out string
	// Target validation loss; 0 means DefaultTarget.
	Target float64
	// GPUs the record runs on (processes launched); 0 means DefaultGPUs.
	GPUs int
	// ValTokens evaluated; 0 means DefaultValTokens.
	ValTokens int64
	// DataDir is the data folder, relative to the user's data root; empty
	// means DefaultDataDir.
	DataDir string
	// Now stamps the README; zero means time.Now().
	Now time.Time
}

// Imported is what Import wrote.
type Imported struct {
	Dir       string
	Spec      *track.Spec
	Protected []Protected
	// FromLog is true when the source was a record log.
	FromLog bool
	// Record is the record log's own final validation line, when there is
	// one: what the record claimed on its hardware.
	Record *ValLine
	// Notes are things the user should know (the record's own val_tokens
	// differs from the track's, ...).
	Notes []string
}

// Import turns a speedrun record into a track folder: the script (taken
// from the log when the source is one) with protected regions marked, a
// track.yaml under the log contract, and a README saying where it came
// from. The folder passes track.LoadDir (frontier track check).
func Import(o Options) (*Imported, error) {
	code, fromLog, err := ExtractCode(o.Source)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", o.From, err)
	}
	prepared, protected, err := Prepare(code)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", o.From, err)
	}
	s, _ := Analyze(prepared) // Prepare analyzed it already

	o.setDefaults()
	if !nameRE.MatchString(o.Name) {
		return nil, fmt.Errorf("import %s: track name %q: use lower-case letters, digits, '.', '_' and '-' (--name)", o.From, o.Name)
	}
	if !(o.Target > 0) {
		return nil, fmt.Errorf("import %s: target %v: must be positive, like 3.28 (--target)", o.From, o.Target)
	}
	if o.GPUs < 1 {
		return nil, fmt.Errorf("import %s: %d GPUs: must be at least 1 (--gpus)", o.From, o.GPUs)
	}
	im := &Imported{Dir: o.Out, Protected: protected, FromLog: fromLog}
	if fromLog {
		if lg, err := ParseLog(bytes.NewReader(o.Source)); err == nil {
			im.Record = lg.Final()
		}
	}
	im.Notes = append(im.Notes, s.Repeated...)
	if f := s.Field(RoleValTokens); f != nil {
		if v, ok := evalInt(f.Expr); ok && v != o.ValTokens {
			im.Notes = append(im.Notes, fmt.Sprintf("the record evaluates %d validation tokens; the track injects %d", v, o.ValTokens))
		}
	}

	seq := valSeqLen(s, o.ValTokens)
	fast := int64(fastValTokens)
	if o.ValTokens%fast != 0 || fast%int64(seq) != 0 {
		fast = o.ValTokens
	}
	// About an hour on 8 GPUs, proportionally longer on fewer.
	fullRun := fmt.Sprintf("%dh", 8/o.GPUs+boolInt(8%o.GPUs != 0))
	vars := specVars{
		Name: o.Name, From: filepath.Base(o.From), SHA256: sha(o.Source), Kind: kindOf(fromLog),
		GPUs: o.GPUs, DataDir: o.DataDir, ValTokens: o.ValTokens, ValSeqLen: seq, FastValTokens: fast,
		Target: o.Target, FullRun: fullRun, Program: ProgramFile,
	}
	var spec bytes.Buffer
	if err := specTemplate.Execute(&spec, vars); err != nil {
		return nil, fmt.Errorf("import %s: write track.yaml: %w", o.From, err)
	}
	var readme bytes.Buffer
	rv := readmeVars{specVars: vars, Date: o.Now.UTC().Format("2006-01-02"), Protected: describe(protected), Record: im.Record, Notes: im.Notes}
	for _, role := range Roles {
		f := s.Field(role)
		rv.Fields = append(rv.Fields, fmt.Sprintf("`%s` (%s, line %d)", f.Name, role, f.Line))
	}
	if err := readmeTemplate.Execute(&readme, rv); err != nil {
		return nil, fmt.Errorf("import %s: write README.md: %w", o.From, err)
	}

	if err := emptyDir(o.Out); err != nil {
		return nil, fmt.Errorf("import %s: %w", o.From, err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{ProgramFile, prepared},
		{track.SpecFile, spec.Bytes()},
		{"README.md", readme.Bytes()},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(o.Out, f.name), f.data, 0o644); err != nil {
			return nil, fmt.Errorf("import %s: %w", o.From, err)
		}
	}
	im.Spec, err = track.LoadDir(o.Out)
	if err != nil {
		return nil, fmt.Errorf("import %s: the written track does not validate (a bug in frontier): %w", o.From, err)
	}
	return im, nil
}

func (o *Options) setDefaults() {
	if o.Name == "" {
		o.Name = DefaultName(o.From)
	}
	if o.Out == "" {
		o.Out = o.Name
	}
	if o.Target == 0 {
		o.Target = DefaultTarget
	}
	if o.GPUs == 0 {
		o.GPUs = DefaultGPUs
	}
	if o.ValTokens == 0 {
		o.ValTokens = DefaultValTokens
	}
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	uuidRE    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	badNameRE = regexp.MustCompile(`[^a-z0-9._-]+`)
)

// DefaultName derives a track name from a record's path: the file's stem,
// or its folder's name when the stem says nothing (a run's UUID, "train_gpt",
// "record"). Records live in folders like 2025-07-12_BosAlign.
func DefaultName(path string) string {
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	low := strings.ToLower(stem)
	generic := uuidRE.MatchString(low) || low == "" || low == "." || low == "-" ||
		strings.HasPrefix(low, "train_gpt") || low == "record" || low == "main" || low == "log"
	if generic {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != "/" && dir != "" {
			stem = dir
		}
	}
	name := strings.Trim(badNameRE.ReplaceAllString(strings.ToLower(stem), "-"), "-._")
	if name == "" {
		name = "imported"
	}
	return name
}

// valSeqLen picks the track's val_seq_len: the record's own when it states
// one that fits, else the GPT-2 context of 1024. Under the log contract it
// is informational: the program validates at its own sequence length.
func valSeqLen(s *Script, valTokens int64) int {
	for _, name := range []string{"val_seq_len", "sequence_length"} {
		if f := s.FieldNamed(name); f != nil {
			if v, ok := evalInt(f.Expr); ok && v > 0 && valTokens%v == 0 {
				return int(v)
			}
		}
	}
	return 1024
}

// emptyDir creates dir, or accepts it when it exists and is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s exists and is not empty: choose another folder with --out", dir)
	}
	return nil
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func kindOf(fromLog bool) string {
	if fromLog {
		return "record log"
	}
	return "training script"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type specVars struct {
	Name, From, SHA256, Kind string
	GPUs                     int
	DataDir                  string
	ValTokens                int64
	ValSeqLen                int
	FastValTokens            int64
	Target                   float64
	FullRun                  string
	Program                  string
}

type readmeVars struct {
	specVars
	Date      string
	Protected string
	Fields    []string
	Record    *ValLine
	Notes     []string
}

var specTemplate = template.Must(template.New("spec").Parse(`# Imported by frontier track import from the {{.Kind}} {{.From}}
# (sha256 {{.SHA256}}).
# The record runs unmodified under the log contract: frontier injects the
# data paths and val_tokens and reads the lines it prints. See README.md.
name: {{.Name}}
description: |
  The speedrun record {{.From}}, run unmodified under the log contract.
  Its own validation loss and clock, parsed from its output: weaker than the harness's verification.
reference: {{.Program}}
contract: log
launcher:
  kind: torchrun
  nproc_per_node: {{.GPUs}}
data:
  # The FineWeb GPT-2 shards, in this folder of the data root, or where
  # frontier.yaml says (data: {{"{"}}{{.Name}}: DIR{{"}"}}).
  dir: {{.DataDir}}
  train: fineweb_train_*.bin
  val: fineweb_val_000000.bin
  vocab_size: 50257
  bos_id: 50256
  val_tokens: {{.ValTokens}}
  # Informational under the log contract: the record validates at its own
  # sequence length.
  val_seq_len: {{.ValSeqLen}}
target_val_loss: {{.Target}}
limits:
  # The first torch.compile of a speedrun script takes minutes.
  fast_check: 20m
  full_run: {{.FullRun}}
  fast_steps: 10
  fast_val_tokens: {{.FastValTokens}}
telemetry:
  log_every: 25
hardware:
  device: cuda
  gpus: {{.GPUs}}
verification:
  protected_regions: true
  repeats: 1
  alpha: 0.01
`))

var readmeTemplate = template.Must(template.New("readme").Parse(`# {{.Name}}

Imported on {{.Date}} by ` + "`frontier track import`" + ` from the {{.Kind}} ` + "`{{.From}}`" + `
(sha256 ` + "`{{.SHA256}}`" + `). The reference program ` + "`{{.Program}}`" + ` is that record's
code with protected-region markers added; nothing else was changed.
{{if .Record}}
The record's own log ends with ` + "`step:{{.Record.Step}}/{{.Record.Total}} val_loss:{{printf \"%.4f\" .Record.ValLoss}} train_time:{{printf \"%.0f\" .Record.TrainTimeMs}}ms`" + `
(on the hardware it was timed on).
{{end}}
## How it is evaluated

The track uses the legacy **log** contract: frontier launches the script as
` + "`torchrun --standalone --nproc_per_node={{.GPUs}}`" + ` would, after rewriting these fields of its
Hyperparameters block to the track's data and validation settings:
{{range .Fields}}
- {{.}}{{end}}

The rewritten block prints one ` + "`frontier:injected {...}`" + ` line with the values the script
holds, and the evaluation is invalid unless they are the injected ones. The result is read
from the script's own ` + "`step:N/N val_loss:... train_time:...ms`" + ` line and its
` + "`peak memory`" + ` line, and every report says ` + "`verification log`" + `: frontier did not
compute the validation loss, does not own the clock, and runs no causality probe.

## Protected regions

Candidates derived from this record may not change these regions (the evaluator restores
them byte for byte):

{{.Protected}}{{if .Notes}}
## Notes
{{range .Notes}}
- {{.}}{{end}}
{{end}}`))
