package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/frontier-bench/frontier/"

// allowed lists, for every package of the module (its path relative to the
// module), the packages of the module its non-test files may import. "*"
// allows any: only the command wires everything together. Tests may import
// more (fakes, fixtures, real evaluators).
var allowed = map[string][]string{
	"cmd/frontier": {"*"},

	// Leaves: they import nothing of the module.
	"internal/bench/fsr":      {},
	"internal/bounded":        {},
	"internal/edit/pysrc":     {},
	"internal/harness":        {},
	"internal/catalog":        {},
	"internal/hostload":       {},
	"internal/layering":       {},
	"internal/pyenv":          {},
	"internal/runner":         {},
	"internal/stats":          {},
	"internal/runs":           {},
	"internal/testdeps":       {},
	"internal/testsummary":    {},
	"internal/verify/redteam": {},
	"suites":                  {},
	"tracks":                  {},

	"internal/bench":               {"internal/bench/fsr", "internal/bench/scaffold", "internal/catalog", "internal/eval", "internal/evolve", "internal/hostload", "internal/llm", "internal/propose", "internal/runs", "internal/search", "internal/stats", "internal/store", "internal/track", "internal/yamlfile"},
	"internal/bench/benchreport":   {"internal/bench/fsr", "internal/runview"},
	"internal/bench/benchtest":     {"internal/eval", "internal/eval/evaltest"},
	"internal/bench/published":     {"internal/bench", "internal/importer"},
	"internal/bench/scaffold":      {"internal/edit", "internal/eval", "internal/llm", "internal/propose", "internal/runs", "internal/search", "internal/store", "internal/track"},
	"internal/config":              {"internal/evolve", "internal/llm", "internal/slurm", "internal/store", "internal/track", "internal/yamlfile"},
	"internal/dashboard":           {"internal/bench/benchreport", "internal/eval", "internal/harness", "internal/llm", "internal/report", "internal/runs", "internal/runview", "internal/store"},
	"internal/data":                {"internal/track"},
	"internal/data/datatest":       {"internal/data"},
	"internal/edit":                {"internal/edit/pysrc"},
	"internal/eval":                {"internal/data", "internal/harness", "internal/hostload", "internal/importer", "internal/runner", "internal/runs", "internal/stats", "internal/store", "internal/track"},
	"internal/eval/executortest":   {"internal/eval", "internal/eval/evaltest", "internal/track", "internal/verify", "internal/verify/redteam"},
	"internal/eval/evaltest":       {"internal/eval", "internal/pyenv", "internal/runner", "internal/sandbox", "internal/store", "internal/testdeps", "internal/verify"},
	"internal/evolve":              {"internal/edit", "internal/eval", "internal/harness", "internal/llm", "internal/llm/provider", "internal/propose", "internal/runs", "internal/search", "internal/stats", "internal/store", "internal/track"},
	"internal/importer":            {"internal/edit", "internal/track"},
	"internal/llm":                 {"internal/bounded", "internal/yamlfile"},
	"internal/llm/anthropic":       {"internal/llm", "internal/llm/internal/wire"},
	"internal/llm/gemini":          {"internal/llm", "internal/llm/internal/wire"},
	"internal/llm/internal/wire":   {"internal/llm"},
	"internal/llm/llmtest":         {"internal/llm"},
	"internal/llm/openai":          {"internal/llm", "internal/llm/internal/wire"},
	"internal/llm/provider":        {"internal/llm", "internal/llm/anthropic", "internal/llm/gemini", "internal/llm/openai"},
	"internal/propose":             {"internal/bounded", "internal/edit", "internal/edit/pysrc", "internal/llm"},
	"internal/report":              {"internal/edit", "internal/harness", "internal/runs"},
	"internal/runner/runnertest":   {"internal/runner"},
	"internal/runview":             {"internal/bench/fsr", "internal/edit", "internal/eval", "internal/harness", "internal/report", "internal/runs", "internal/store"},
	"internal/runview/runviewtest": {"internal/eval", "internal/harness", "internal/llm", "internal/runs", "internal/stats", "internal/store"},
	"internal/sandbox":             {"internal/runner"},
	"internal/search":              {"internal/eval", "internal/llm", "internal/store"},
	"internal/slurm":               {"internal/eval", "internal/runner"},
	"internal/store":               {"internal/runs"},
	"internal/store/storetest":     {"internal/runs", "internal/store", "internal/testdeps"},
	"internal/track":               {"internal/catalog", "internal/yamlfile"},
	"internal/yamlfile":            {"internal/bounded"},
	"internal/verify":              {"internal/edit", "internal/edit/pysrc", "internal/eval", "internal/track"},
}

// never states the rules the table must keep, with their reasons, so that
// a change to the table that breaks one is caught too. A prefix matches
// the package and those under it.
var never = []struct {
	from, to, why string
	except        []string
}{
	{"internal/report", "internal/evolve", "reports read the store, not the engine: a report of a run must not depend on how the engine runs one", nil},
	{"internal/store", "internal/", "the store is a boundary with several implementations; it holds rows, not the logic of their users (its test kit, storetest, asks testdeps what a missing PostgreSQL means)",
		[]string{"internal/runs", "internal/testdeps"}},
	{"internal/runs", "internal/", "runs is the vocabulary every reader and writer of a run shares; it depends on nothing", nil},
	{"internal/llm", "internal/store", "model clients are decorators over a wire protocol; recording calls is the engine's job", nil},
	{"internal/runner", "internal/eval", "a runner runs a process; judging it is the evaluator's job", nil},
	{"internal/runner", "internal/sandbox", "the sandbox wraps a runner, not the other way round", nil},
	{"internal/eval", "internal/evolve", "the evaluator judges one program; the search is above it", nil},
	{"internal/propose", "internal/store", "proposers turn a parent into a child; the engine records what they did", nil},
	{"internal/bench/benchreport", "internal/evolve", "a bench report reads the store, not the engine", nil},
	{"internal/bench/benchreport", "internal/bench", "a bench report renders what the read model (runview) read; the benchmark runs searches, and through them the engine",
		[]string{"internal/bench/fsr"}},
	{"internal/dashboard", "internal/evolve", "the dashboard shows what the read model (runview) read: the page, the report and runs show cannot disagree, and a dashboard never depends on how a run is run", nil},
	{"internal/runview", "internal/evolve", "the read model reads what the engine stored, never the engine: the CLI, the reports and the dashboard must not depend on how a run is run", nil},
	{"internal/runview", "internal/bench", "the read model reads what the benchmark stored; the benchmark drives the engine", []string{"internal/bench/fsr"}},
	{"internal/bench/fsr", "internal/", "the benchmark's score is arithmetic over times; it depends on nothing", nil},
	{"internal/evolve", "internal/bench", "the benchmark drives the engine; the engine knows nothing of it", nil},
	{"internal/eval", "internal/bench", "the evaluator judges one program, whoever asks", nil},
	{"internal/search", "internal/evolve", "the parts searches share know no search", nil},
	{"internal/search", "internal/bench", "the parts searches share know no search", nil},
	{"internal/bench/scaffold", "internal/evolve", "the scaffolds are searches of their own; the evolve scaffold is wired in internal/bench", nil},
}

// debts are imports that break a rule of never today, each with the step
// that removes it. The test fails once one is paid, so that the entry goes.
var debts = map[[2]string]string{}

// TestImports fails when a package imports a package of the module that
// its row does not list, when a package has no row, or when the table
// itself breaks a rule of never.
func TestImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports, err := moduleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found %d packages under %s: is this the module's root?", len(imports), root)
	}
	for _, pkg := range sortedKeys(imports) {
		ok, listed := allowed[pkg]
		if !listed {
			t.Errorf("%s is not in the table of allowed imports (internal/layering/layering_test.go): add it with what it may import", pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if !slices.Contains(ok, "*") && !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s, which its row does not allow%s", pkg, imp, reason(pkg, imp))
			}
		}
	}
	for _, pkg := range sortedKeys(allowed) {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("the table lists %s, which does not exist any more: remove its row", pkg)
		}
		for _, imp := range allowed[pkg] {
			why := reason(pkg, imp)
			_, owed := debts[[2]string{pkg, imp}]
			switch {
			case why != "" && !owed:
				t.Errorf("the table allows %s to import %s%s", pkg, imp, why)
			case owed && !slices.Contains(imports[pkg], imp):
				t.Errorf("%s no longer imports %s: remove the entry from debts and its row", pkg, imp)
			}
		}
	}
}

// reason returns ": <why>" when a rule of never forbids from importing to.
func reason(from, to string) string {
	for _, r := range never {
		// A package may import within its own subtree (storetest -> store).
		if under(from, r.from) && under(to, r.to) && !under(to, r.from) && !slices.Contains(r.except, to) {
			return ": " + r.why
		}
	}
	return ""
}

func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, strings.TrimSuffix(prefix, "/")+"/")
}

// moduleImports reads the import lines of every non-test Go file under
// root and returns, per package, the packages of the module it imports.
// Files of every build tag count: a package may not import on one platform
// what it must not import on another.
func moduleImports(root string) (map[string][]string, error) {
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	for _, imps := range out {
		slices.Sort(imps)
	}
	return out, err
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// TestModuleRoot guards the walk above: the module file is where it
// expects it.
func TestModuleRoot(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "module "+strings.TrimSuffix(module, "/")+"\n") {
		t.Fatalf("go.mod does not declare module %s", strings.TrimSuffix(module, "/"))
	}
}
