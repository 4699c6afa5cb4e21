// Package published imports the Automated LLM Speedrunning Benchmark
// (facebookresearch/llm-speedrunner) as a frontier bench suite, from a
// checkout of its repository:
//
//	workspace_templates/nanogpt_speedrun/record_<i>/train_gpt2.py   record i's script
//	workspace_templates/nanogpt_speedrun/record_<i>/results.json    its metrics (train_time in ms)
//	data/nanogpt_speedrun_knowledge_in_levels/record_<i>/
//	    level_1_pseudo.txt, level_2_description.txt, level_3_paper.txt   hints for record i -> i+1
//	    level_0_diff.txt                                                 the ground-truth diff
//
// Each script becomes a track of its own under the legacy log contract
// (internal/importer: the data paths and val_tokens injected, the lines it
// prints parsed, its validation and timing code protected), because the
// protected regions of one record's script are not another's. The suite
// says so (contract: log). Task i starts from record i and reproduces
// record i+1. Files the benchmark keeps beside the hints (level_9_*.txt,
// background documents) are not hints and are left out.
package published

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/goccy/go-yaml"

	"github.com/frontier-bench/frontier/internal/bench"
	"github.com/frontier-bench/frontier/internal/importer"
)

// Where the benchmark keeps things, relative to its checkout.
const (
	TemplatesDir = "workspace_templates/nanogpt_speedrun"
	KnowledgeDir = "data/nanogpt_speedrun_knowledge_in_levels"
	scriptFile   = "train_gpt2.py"
	resultsFile  = "results.json"
)

// hintFiles are the hint files of each level, and the diff.
var hintFiles = map[int]string{1: "level_1_pseudo.txt", 2: "level_2_description.txt", 3: "level_3_paper.txt"}

const diffFile = "level_0_diff.txt"

// Options say what to import and where.
type Options struct {
	// From is the checkout of the benchmark's repository.
	From string
	// Out is the suite folder to create; it must not exist or be empty.
	Out string
	// Name is the suite's name; default "llm-speedrunner".
	Name string
	// Target, GPUs and DataDir are the imported tracks' (importer's
	// defaults: 3.28, 8 GPUs, fineweb10B).
	Target  float64
	GPUs    int
	DataDir string
}

// Imported is what Import wrote.
type Imported struct {
	Suite   *bench.Suite
	Records []string
	Tasks   []string
	// Skipped says, per record or task left out, why.
	Skipped []string
	// Notes are things to know about what was imported.
	Notes []string
}

// results is the part of results.json that is read.
type results struct {
	Metrics struct {
		NSteps    int     `json:"n_steps"`
		ValLoss   float64 `json:"val_loss"`
		TrainTime float64 `json:"train_time"`
	} `json:"metrics"`
	Hypothesis string `json:"hypothesis"`
}

var recordRE = regexp.MustCompile(`^record_(\d+)$`)

// Import reads the checkout and writes the suite.
func Import(o Options) (*Imported, error) {
	if o.Name == "" {
		o.Name = "llm-speedrunner"
	}
	if o.Out == "" {
		o.Out = o.Name
	}
	tdir := filepath.Join(o.From, filepath.FromSlash(TemplatesDir))
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return nil, fmt.Errorf("%s is not a checkout of the Automated LLM Speedrunning Benchmark (%w): pass the folder of a clone of https://github.com/facebookresearch/llm-speedrunner", o.From, err)
	}
	var nums []int
	for _, e := range entries {
		if m := recordRE.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	if len(nums) < 2 {
		return nil, fmt.Errorf("%s holds %d records (record_<i> folders); a suite needs two or more", tdir, len(nums))
	}
	if err := emptyDir(o.Out); err != nil {
		return nil, err
	}
	im := &Imported{}
	suite := bench.Suite{Name: o.Name, Contract: "log",
		Description: "The Automated LLM Speedrunning Benchmark (facebookresearch/llm-speedrunner), imported from " +
			filepath.Base(filepath.Clean(o.From)) + ": task i starts from NanoGPT speedrun record i and reproduces record i+1.",
		Times:    "the benchmark's results.json (re-measured by its authors on 8xH100)",
		Hardware: fmt.Sprintf("one node of %d x H100 GPUs (80 GB each), as the published benchmark runs them", cmp.Or(o.GPUs, importer.DefaultGPUs))}
	programs := map[int]bool{}
	for _, n := range nums {
		rec, ok, err := importRecord(o, n, im)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			continue
		}
		programs[n] = ok
		suite.Records = append(suite.Records, *rec)
		im.Records = append(im.Records, rec.ID)
	}
	if len(suite.Records) < 2 {
		return nil, fmt.Errorf("only %d records could be read: nothing to make tasks of (%s)", len(suite.Records), strings.Join(im.Skipped, "; "))
	}
	suite.Track = suite.Records[0].Track
	for _, n := range nums {
		t, err := importTask(o, n, programs, &suite, im)
		if err != nil {
			return nil, err
		}
		if t != nil {
			suite.Tasks = append(suite.Tasks, *t)
			im.Tasks = append(im.Tasks, t.Name)
		}
	}
	if len(suite.Tasks) == 0 {
		return nil, fmt.Errorf("no task could be made (%s)", strings.Join(im.Skipped, "; "))
	}
	if err := writeSuite(o, &suite, im); err != nil {
		return nil, err
	}
	im.Suite, err = bench.LoadDir(o.Out)
	if err != nil {
		return nil, fmt.Errorf("the written suite does not load (a bug in frontier): %w", err)
	}
	return im, nil
}

func recordID(n int) string { return "record_" + strconv.Itoa(n) }

// importRecord makes record n's track and returns the record; ok is false
// when its script could not be adapted (the record keeps its time only).
func importRecord(o Options, n int, im *Imported) (*bench.Record, bool, error) {
	id := recordID(n)
	dir := filepath.Join(o.From, filepath.FromSlash(TemplatesDir), id)
	b, err := os.ReadFile(filepath.Join(dir, resultsFile))
	if err != nil {
		im.Skipped = append(im.Skipped, fmt.Sprintf("%s: no %s: its time is unknown", id, resultsFile))
		return nil, false, nil
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil || !(res.Metrics.TrainTime > 0) {
		im.Skipped = append(im.Skipped, fmt.Sprintf("%s: %s has no metrics.train_time (%v)", id, resultsFile, err))
		return nil, false, nil
	}
	rec := &bench.Record{ID: id, TimeMs: res.Metrics.TrainTime, ValLoss: res.Metrics.ValLoss, Description: res.Hypothesis}
	src, err := os.ReadFile(filepath.Join(dir, scriptFile))
	if err != nil {
		im.Notes = append(im.Notes, fmt.Sprintf("%s has no %s: only its time is known (it can be a goal, not a start)", id, scriptFile))
		return rec, false, nil
	}
	track := "tracks/" + id
	res2, err := importer.Import(importer.Options{From: filepath.Join(dir, scriptFile), Source: src,
		Name: strings.ReplaceAll(o.Name+"-"+id, "_", "-"), Out: filepath.Join(o.Out, filepath.FromSlash(track)),
		Target: o.Target, GPUs: o.GPUs, DataDir: o.DataDir})
	var shape *importer.ShapeError
	if errors.As(err, &shape) {
		im.Notes = append(im.Notes, fmt.Sprintf("%s: its script cannot run under the log contract (%s); only its time is kept", id, strings.Join(shape.Problems, "; ")))
		os.RemoveAll(filepath.Join(o.Out, filepath.FromSlash(track)))
		return rec, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, n := range res2.Notes {
		im.Notes = append(im.Notes, id+": "+n)
	}
	rec.Track, rec.Program = track, track+"/"+importer.ProgramFile
	return rec, true, nil
}

// importTask makes task n (record n -> n+1) with its hints; nil when it
// cannot be run.
func importTask(o Options, n int, programs map[int]bool, s *bench.Suite, im *Imported) (*bench.Task, error) {
	id, next := recordID(n), recordID(n+1)
	okStart, hasStart := programs[n]
	_, hasGoal := programs[n+1]
	switch {
	case !hasStart || !hasGoal:
		return nil, nil // a record at the end of the history, or one without a time
	case !okStart:
		im.Skipped = append(im.Skipped, fmt.Sprintf("task %s: its start program cannot run here", id))
		return nil, nil
	}
	// The paper's 19 tasks leave record 6's out: its script is record 7's,
	// the record came from outside the program (a PyTorch upgrade), and its
	// published gap is negative. A task whose goal runs the start's very
	// script, or is not faster, has nothing to reproduce: FSR would be 0
	// whatever a search did.
	start, _ := s.Record(id)
	goal, _ := s.Record(next)
	tdir := filepath.Join(o.From, filepath.FromSlash(TemplatesDir))
	a, errA := os.ReadFile(filepath.Join(tdir, id, scriptFile))
	b, errB := os.ReadFile(filepath.Join(tdir, next, scriptFile))
	switch {
	case errA == nil && errB == nil && bytes.Equal(a, b):
		im.Skipped = append(im.Skipped, fmt.Sprintf("task %s: record %d runs the same script as record %d (its gain came from outside the program); there is nothing to reproduce (the paper leaves it out)", id, n+1, n))
		return nil, nil
	case start != nil && goal != nil && goal.TimeMs >= start.TimeMs:
		im.Skipped = append(im.Skipped, fmt.Sprintf("task %s: record %d is not faster than record %d (%.0f ms vs %.0f ms): its FSR would be 0 whatever a search did (the paper leaves such a task out)",
			id, n+1, n, goal.TimeMs, start.TimeMs))
		return nil, nil
	}
	t := &bench.Task{Name: id, Start: id, Goal: next}
	kdir := filepath.Join(o.From, filepath.FromSlash(KnowledgeDir), id)
	copyHint := func(file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(kdir, file))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		} else if err != nil {
			return "", err
		}
		rel := "hints/" + id + "/" + file
		dst := filepath.Join(o.Out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		return rel, os.WriteFile(dst, b, 0o644)
	}
	var err error
	if t.Hints.Pseudocode, err = copyHint(hintFiles[1]); err != nil {
		return nil, err
	}
	if t.Hints.Description, err = copyHint(hintFiles[2]); err != nil {
		return nil, err
	}
	if t.Hints.Paper, err = copyHint(hintFiles[3]); err != nil {
		return nil, err
	}
	if t.Diff, err = copyHint(diffFile); err != nil {
		return nil, err
	}
	if len(t.Hints.Levels()) < 3 {
		im.Notes = append(im.Notes, fmt.Sprintf("task %s has hints at levels %v only", id, t.Hints.Levels()))
	}
	return t, nil
}

// writeSuite writes suite.yaml and the README.
func writeSuite(o Options, s *bench.Suite, im *Imported) error {
	b, err := yaml.MarshalWithOptions(s, yaml.Flow(false))
	if err != nil {
		return err
	}
	head := "# Imported by frontier bench import from " + filepath.Clean(o.From) + ".\n" +
		"# The records' scripts run unmodified under the legacy log contract (see README.md).\n"
	if err := os.WriteFile(filepath.Join(o.Out, bench.SuiteFile), append([]byte(head), b...), 0o644); err != nil {
		return err
	}
	var r bytes.Buffer
	if err := readme.Execute(&r, map[string]any{"Suite": s, "Imported": im, "From": filepath.Clean(o.From)}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.Out, "README.md"), r.Bytes(), 0o644)
}

var readme = template.Must(template.New("readme").Parse(`# {{.Suite.Name}}

The Automated LLM Speedrunning Benchmark (facebookresearch/llm-speedrunner, arXiv 2506.22419),
imported by ` + "`frontier bench import --from {{.From}}`" + `. Task *record_i* gives a search the
script of NanoGPT speedrun record i and scores how much of the speedup to record i+1 it recovers
(FSR). Hints: level 1 pseudocode, level 2 a description, level 3 a mini-paper;
` + "`level_0_diff.txt`" + ` is the ground-truth diff, kept for analysis and never shown to a model.

**Verification: the legacy log contract.** Each record's script runs as its authors wrote it, under
` + "`torchrun`" + ` on 8 GPUs; frontier injects the data paths and ` + "`val_tokens`" + ` and reads the validation loss
and the train time the script prints. That is weaker than the harness contract: the program's
own clock and loss decide. Each record is its own track (` + "`tracks/record_<i>`" + `) because its
protected regions (validation, timing) are its own.

The published times are the benchmark's ` + "`results.json`" + `, re-measured by its authors on 8xH100;
run ` + "`frontier bench calibrate {{.Suite.Name}}`" + ` on your machine before comparing scores with them.

Records: {{range $i, $r := .Imported.Records}}{{if $i}}, {{end}}{{$r}}{{end}}.
Tasks: {{range $i, $t := .Imported.Tasks}}{{if $i}}, {{end}}{{$t}}{{end}}.
{{- if .Imported.Notes}}

## Notes
{{range .Imported.Notes}}
- {{.}}
{{- end}}
{{- end}}
{{- if .Imported.Skipped}}

## Left out
{{range .Imported.Skipped}}
- {{.}}
{{- end}}
{{- end}}
`))

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty: choose another --out", dir)
	}
	return nil
}
