package evolve

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/frontier-bench/frontier/internal/llm"
)

//go:embed prompts/*.tmpl
var builtinPrompts embed.FS

// Prompts that are not in the templated pool: the two meta-prompting
// stages and the two fixes.
const (
	promptIdea      = "meta_idea"
	promptImplement = "meta_implement"
	promptFixRun    = "fix_run"
	promptFixApply  = "fix_apply"
	promptCommon    = "common"
)

// BuiltinTemplates lists the templated prompts of the pool.
func BuiltinTemplates() []string {
	return []string{"speed", "profile", "convergence", "combine", "explore"}
}

// prompts is a parsed set of prompt templates: the pool and the special
// prompts, each a template with "system" and "user" blocks, and what each
// template of the pool needs to make sense (see Needs).
type prompts struct {
	pool  []string
	byID  map[string]*template.Template
	needs map[string][]string
}

// Things a template may need, declared in it as {{/* needs: top */}}: a
// template is drawn only for an iteration that has them. "combine" asks
// the model to bring in an idea of the top programs, which an empty top
// set makes a prompt about programs that are not there.
const (
	NeedTop     = "top"     // a non-empty top set
	NeedDiverse = "diverse" // a non-empty diverse set
	NeedProfile = "profile" // the parent's profile (sections, operators)
)

var needsRe = regexp.MustCompile(`\{\{-?\s*/\*\s*needs:\s*([a-z_, ]*?)\s*\*/\s*-?\}\}`)

// parseNeeds reads a template's declared needs.
func parseNeeds(name, src string) ([]string, error) {
	m := needsRe.FindStringSubmatch(src)
	if m == nil {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(m[1], ",") {
		n = strings.TrimSpace(n)
		switch n {
		case "":
		case NeedTop, NeedDiverse, NeedProfile:
			out = append(out, n)
		default:
			return nil, fmt.Errorf("prompt template %s: unknown need %q (known: %s, %s, %s)", name, n, NeedTop, NeedDiverse, NeedProfile)
		}
	}
	return out, nil
}

// drawable returns the templates of the pool whose needs have holds, in
// the pool's order; when none qualifies, those that need nothing, and as a
// last resort the whole pool.
func (p *prompts) drawable(have map[string]bool) []string {
	var ok, free []string
	for _, name := range p.pool {
		all := true
		for _, n := range p.needs[name] {
			all = all && have[n]
		}
		if all {
			ok = append(ok, name)
		}
		if len(p.needs[name]) == 0 {
			free = append(free, name)
		}
	}
	switch {
	case len(ok) > 0:
		return ok
	case len(free) > 0:
		return free
	}
	return p.pool
}

// loadPrompts parses the built-in templates, then those of dir (which add
// to the pool or replace built-ins of the same name), and restricts the
// pool to names when given.
func loadPrompts(dir string, names []string) (*prompts, error) {
	sources := map[string]string{}
	read := func(fsys fs.FS, pattern, where string) error {
		files, err := fs.Glob(fsys, pattern)
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := fs.ReadFile(fsys, f)
			if err != nil {
				return fmt.Errorf("read prompt template %s: %w", filepath.Join(where, f), err)
			}
			sources[strings.TrimSuffix(filepath.Base(f), ".tmpl")] = string(b)
		}
		return nil
	}
	if err := read(builtinPrompts, "prompts/*.tmpl", ""); err != nil {
		return nil, err
	}
	pool := BuiltinTemplates()
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("evolve.prompt.template_dir %s: not a folder", dir)
		}
		extra, _ := fs.Glob(os.DirFS(dir), "*.tmpl")
		if err := read(os.DirFS(dir), "*.tmpl", dir); err != nil {
			return nil, err
		}
		for _, f := range extra {
			n := strings.TrimSuffix(f, ".tmpl")
			if n != promptCommon && n != promptIdea && n != promptImplement && n != promptFixRun && n != promptFixApply && !slices.Contains(pool, n) {
				pool = append(pool, n)
			}
		}
	}
	p := &prompts{byID: map[string]*template.Template{}, needs: map[string][]string{}}
	base, err := template.New(promptCommon).Option("missingkey=error").Parse(sources[promptCommon])
	if err != nil {
		return nil, fmt.Errorf("prompt template common: %w", err)
	}
	for name, src := range sources {
		if name == promptCommon {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.New(name).Parse(src); err != nil {
			return nil, fmt.Errorf("prompt template %s: %w", name, err)
		}
		if t.Lookup("user") == nil || t.Lookup("system") == nil {
			return nil, fmt.Errorf("prompt template %s: it must define a \"user\" block (and may redefine \"system\")", name)
		}
		needs, err := parseNeeds(name, src)
		if err != nil {
			return nil, err
		}
		p.byID[name], p.needs[name] = t, needs
	}
	for _, n := range []string{promptIdea, promptImplement, promptFixRun, promptFixApply} {
		if p.byID[n] == nil {
			return nil, fmt.Errorf("prompt template %s is missing", n)
		}
	}
	if len(names) > 0 {
		for _, n := range names {
			if !slices.Contains(pool, n) {
				return nil, fmt.Errorf("evolve.prompt.templates: no template %q (have: %s)", n, strings.Join(pool, ", "))
			}
		}
		pool = slices.Clone(names)
	}
	slices.Sort(pool)
	p.pool = pool
	return p, nil
}

// render fills template name with d and returns the system and user text.
func (p *prompts) render(name string, d *promptData) (system, user string, err error) {
	t := p.byID[name]
	if t == nil {
		return "", "", fmt.Errorf("no prompt template %q", name)
	}
	var sb, ub strings.Builder
	if err := t.ExecuteTemplate(&sb, "system", d); err != nil {
		return "", "", fmt.Errorf("prompt %s: %w", name, err)
	}
	if err := t.ExecuteTemplate(&ub, "user", d); err != nil {
		return "", "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return strings.TrimSpace(sb.String()), strings.TrimSpace(ub.String()) + "\n", nil
}

// request builds the model request for a prompt.
func (p *prompts) request(name, model string, d *promptData, cfg PromptConfig) (llm.Request, error) {
	sys, user, err := p.render(name, d)
	if err != nil {
		return llm.Request{}, err
	}
	req := llm.Request{Model: model, System: sys, Messages: []llm.Message{{Role: llm.RoleUser, Content: user}},
		MaxOutputTokens: cfg.MaxOutputTokens}
	if cfg.Temperature != nil {
		t := *cfg.Temperature
		req.Temperature = &t
	}
	return req, nil
}

// promptData is what templates see.
type promptData struct {
	Track       trackView
	Objective   string
	ProgramName string
	// Program is the source the answer's edit applies to: the parent, or
	// for fixes the child as it is now.
	Program   string
	Parent    programView
	Reference programView
	Record    string
	// Refuted are the newest claims a series did not confirm, with its
	// figures: speeds the model must not build on.
	Refuted   []string
	Top       []programView
	Diverse   []programView
	LastError string
	// Attempt is the child's 1-based position among the Branching
	// children of its iteration.
	Attempt, Branching, Iteration int
	Idea                          string
	// Error, Description and PreviousAnswer are for fixes.
	Error          string
	Description    string
	PreviousAnswer string
	// Change is, for a fix of a run that failed, the child's change to
	// its parent (a diff). Excerpts, when set, are the parts of Program a
	// fix prompt shows instead of all of it (ExcerptNote says which).
	Change      string
	Excerpts    []excerptView
	ExcerptNote string
}

type trackView struct {
	Name, Device, FullRun, CompileBudget string
	Target, Floor                        float64
	Threads                              int
}

type programView struct {
	ID          int64
	Metrics     string
	Summary     string
	Description string
	// Diff is the program's change to its own parent (ParentID), whose
	// measurements are ParentMetrics.
	Diff              string
	ParentID          int64
	ParentMetrics     string
	ParentDescription string
}

// objectiveText says what the search ranks acceptable programs by (which
// ones become parents and top programs) and what a record is, consistently
// with the configured objective: under the paper's score, cutting steps
// shortens the train time, which sets records, but does not raise a
// program's rank.
func objectiveText(objective string) string {
	const record = "A record is the shortest training time at the target, confirmed by repeated runs against the standing record."
	switch objective {
	case ObjectiveTime:
		return "among acceptable programs the search ranks by training time, lower is better: " +
			"fewer steps or faster steps both count. " + record
	case ObjectiveLoss:
		return "among acceptable programs the search ranks by validation loss, lower is better; " +
			"time does not change the rank. " + record
	}
	return "among acceptable programs the search ranks by step_avg_ms x val_loss, lower is better: " +
		"a faster step or a lower loss raises a program, while cutting the number of steps changes neither " +
		"(it shortens the training time, which is what a record is). " + record
}

// clip cuts s to at most n bytes, keeping its start and end.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	head := n * 2 / 3
	tail := n - head
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut ...]\n", len(s)-n) + s[len(s)-tail:]
}

// clipTail keeps the last n bytes of s (tracebacks end with the error).
func clipTail(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return fmt.Sprintf("[... %d bytes cut ...]\n", len(s)-n) + s[len(s)-n:]
}
