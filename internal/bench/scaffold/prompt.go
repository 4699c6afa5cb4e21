package scaffold

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/track"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Prompt names: the kinds of node that ask a model, and the re-ask after
// an answer that did not apply.
const (
	promptImprove  = "improve" // drafts and improvements
	promptDebug    = "debug"
	promptFixApply = "fix_apply"
)

// prompts are the parsed templates, by name.
type prompts map[string]*template.Template

func loadPrompts() (prompts, error) {
	common, err := promptFS.ReadFile("prompts/common.tmpl")
	if err != nil {
		return nil, err
	}
	base, err := template.New("common").Option("missingkey=error").Parse(string(common))
	if err != nil {
		return nil, fmt.Errorf("bench prompt common: %w", err)
	}
	out := prompts{}
	for _, name := range []string{promptImprove, promptDebug, promptFixApply} {
		src, err := promptFS.ReadFile("prompts/" + name + ".tmpl")
		if err != nil {
			return nil, err
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.New(name).Parse(string(src)); err != nil {
			return nil, fmt.Errorf("bench prompt %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// Hint is a hint a prompt shows: its level's name and its text.
type Hint struct {
	Level int
	Name  string
	Text  string
}

// promptData is what the templates see. It holds the hints and nothing of
// the task's ground truth: the search is never given the goal's diff.
type promptData struct {
	Track       trackView
	Kind        string
	Seq         int
	ProgramName string
	Program     string
	Metrics     string
	Hints       []Hint
	History     []historyLine
	Error       string
	// Missed says how a debugged program that ran missed the target loss
	// ("" when it failed instead).
	Missed   string
	Previous string
}

type trackView struct {
	Name, Device, FullRun, CompileBudget string
	Target                               float64
	Threads                              int
	// LogContract, for a track under the legacy log contract, says how
	// its programs run and are judged, in place of the harness's rules.
	LogContract string
}

type historyLine struct {
	Seq, Parent   int
	Kind, Outcome string
	Description   string
}

func viewOf(spec *track.Spec, hardware string) trackView {
	v := trackView{Name: spec.Name, Device: spec.Hardware.Device, Threads: spec.Hardware.Threads,
		Target: spec.TargetValLoss, FullRun: spec.Limits.FullRun.D().String(), CompileBudget: spec.Limits.CompileBudget.D().String()}
	if spec.Contract == "log" {
		v.LogContract = LogContract(spec, hardware)
	}
	return v
}

// LogContract says, for a prompt, how a program of a track under the
// legacy log contract (an imported speedrun script) is run and judged:
// the script as its authors wrote it, under torchrun on the hardware the
// records were timed on (hardware; empty: the track's device and GPUs),
// with the data paths and val_tokens injected and the validation loss and
// train time read from what it prints. It takes the place of the harness
// contract of frontier's own tracks, whose API these scripts do not use.
func LogContract(spec *track.Spec, hardware string) string {
	if hardware == "" {
		hardware = fmt.Sprintf("%d x %s", max(spec.Hardware.GPUs, spec.Launcher.NProcPerNode, 1), spec.Hardware.Device)
	}
	name := spec.Reference
	if name == "" {
		name = "train_gpt.py"
	}
	var b strings.Builder
	b.WriteString("## How programs are run and judged (the speedrun's log contract)\n\n")
	b.WriteString("- The program is a NanoGPT speedrun training script, run as it is written with\n")
	fmt.Fprintf(&b, "  `torchrun --nproc_per_node=%d %s` on %s. It must stay runnable that way.\n", max(spec.Launcher.NProcPerNode, 1), name, hardware)
	b.WriteString("- The data paths (the train and validation files of the `Hyperparameters` block) and\n" +
		"  `val_tokens` are set by the environment: do not change their values or set them anywhere\n" +
		"  else; the script's log shows what it used, and a run that used other values is invalid.\n")
	b.WriteString("- The validation loss and the train time are read from the lines the script prints\n" +
		"  (`step:N/M val_loss:... train_time:...ms step_avg:...ms`): keep those prints as they are.\n" +
		"  The train time is the script's own clock (`training_time_ms`, with its\n" +
		"  `torch.cuda.synchronize()` calls around validation).\n")
	b.WriteString("- Lines between `# frontier:protected begin NAME` and `# frontier:protected end NAME`\n" +
		"  (the injected settings, the validation code, the clock) must stay exactly as they are.\n")
	fmt.Fprintf(&b, "- A run is acceptable when its final validation loss is at or under %.4g; among\n", spec.TargetValLoss)
	b.WriteString("  acceptable runs the shortest train time wins. A run that misses the target, crashes or\n" +
		"  times out counts for nothing.\n")
	fmt.Fprintf(&b, "- A run is stopped after %s. The environment's Python packages (PyTorch and what the\n", spec.Limits.FullRun.D())
	b.WriteString("  script imports) are installed; nothing can be downloaded.")
	return b.String()
}

// request renders a prompt into a model request.
func (p prompts) request(name, model string, d *promptData, s PromptSettings) (llm.Request, error) {
	t := p[name]
	if t == nil {
		return llm.Request{}, fmt.Errorf("no bench prompt %q", name)
	}
	var sys, user strings.Builder
	if err := t.ExecuteTemplate(&sys, "system", d); err != nil {
		return llm.Request{}, fmt.Errorf("bench prompt %s: %w", name, err)
	}
	if err := t.ExecuteTemplate(&user, "user", d); err != nil {
		return llm.Request{}, fmt.Errorf("bench prompt %s: %w", name, err)
	}
	return search.Prompt(model, strings.TrimSpace(sys.String()), strings.TrimSpace(user.String())+"\n", s.MaxOutputTokens, s.Temperature), nil
}

// PromptSettings are sent with every request.
type PromptSettings struct {
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	// MaxErrorChars caps the error text a debug prompt shows (its end is
	// kept: tracebacks end with the error). 0 means 3000.
	MaxErrorChars int `json:"max_error_chars,omitempty"`
}

// metricsText describes a measured node for a prompt.
func metricsText(verdict runs.Verdict, valLoss, ms float64, start bool) string {
	switch {
	case start && ms > 0:
		return fmt.Sprintf("It trains to the target in %s (the record's time).", seconds(ms))
	case verdict == runs.Acceptable:
		return fmt.Sprintf("Measured: acceptable, val loss %.4f, train time %s.", valLoss, seconds(ms))
	case verdict == runs.LossTooHigh:
		return fmt.Sprintf("Measured: val loss %.4f, above the target; train time %s.", valLoss, seconds(ms))
	case verdict != "":
		return "Measured: " + string(verdict) + "."
	}
	return ""
}

func seconds(ms float64) string {
	return (time.Duration(ms) * time.Millisecond).Round(10 * time.Millisecond).String()
}

// clipTail keeps the last n bytes of s.
func clipTail(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return fmt.Sprintf("[... %d bytes cut ...]\n", len(s)-n) + s[len(s)-n:]
}
