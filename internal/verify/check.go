package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/track"
)

// RuleProtected is the rule of protected-region findings.
const RuleProtected = "protected-region"

// maxFindings bounds the findings of one program: a program that trips a
// rule on every line needs no thousand-line report.
const maxFindings = 50

// Checks returns the checks the evaluator runs on every candidate, in
// order: protected regions first, so that the static rules judge the
// program that will run.
func Checks() []eval.Check {
	return []eval.Check{Protected{}, NewStatic()}
}

// Protected restores the reference's protected regions into the candidate
// when the track asks for it (verification.protected_regions). A changed
// region is a warning: the restored program runs and the report says that
// an attempt was made. A candidate whose regions cannot be located
// (markers removed, renamed, reordered into nesting, or added) is invalid.
type Protected struct{}

// Check implements eval.Check.
func (Protected) Check(ctx context.Context, in eval.CheckInput) (*eval.CheckResult, error) {
	if in.Track == nil || !in.Track.Verification.ProtectedRegions {
		return nil, nil
	}
	if _, err := edit.Regions(in.Reference); err != nil {
		return nil, fmt.Errorf("track %s: the reference program's protected regions: %w", in.Track.Name, err)
	}
	restored, changed, err := edit.RestoreProtected(in.Reference, in.Program)
	if err != nil {
		return &eval.CheckResult{Findings: []eval.Finding{{
			Rule:     RuleProtected,
			Severity: eval.SeverityInvalid,
			Message: fmt.Sprintf("the protected regions cannot be restored: %s; keep every \"# frontier:protected begin/end NAME\" marker of the reference as it is",
				strings.TrimSuffix(strings.TrimPrefix(err.Error(), "candidate program: "), "; it cannot be restored")),
		}}}, nil
	}
	if len(changed) == 0 {
		return nil, nil
	}
	regions, _ := edit.Regions(in.Program) // RestoreProtected read them already
	refRegions, _ := edit.Regions(in.Reference)
	res := &eval.CheckResult{Program: restored}
	for _, name := range changed {
		f := eval.Finding{Rule: RuleProtected, Severity: eval.SeverityWarning}
		var cand, ref edit.Region
		for _, r := range regions {
			if r.Name == name {
				cand = r
			}
		}
		for _, r := range refRegions {
			if r.Name == name {
				ref = r
			}
		}
		f.Line = cand.StartLine + edit.FirstDiffLine(ref.Content, cand.Content)
		f.Message = fmt.Sprintf("protected region %q (lines %d-%d) was changed; it was restored from the reference before the run", name, cand.StartLine, cand.EndLine)
		res.Findings = append(res.Findings, f)
	}
	return res, nil
}

// Static runs the track's static rules (track.Spec.StaticRules) on the
// candidate. Statements the track's reference holds are allowed (see
// Options.Reference). Create it with NewStatic; it is safe for concurrent
// use.
type Static struct {
	mu    sync.Mutex
	cache map[baselineKey]map[string]int // reference findings, by reference and options
}

type baselineKey struct {
	ref   [sha256.Size]byte
	rules string
	val   string
}

// NewStatic returns a Static check.
func NewStatic() *Static { return &Static{cache: map[baselineKey]map[string]int{}} }

// Check implements eval.Check.
func (s *Static) Check(ctx context.Context, in eval.CheckInput) (*eval.CheckResult, error) {
	if in.Track == nil {
		return nil, nil
	}
	rules := in.Track.StaticRules()
	if len(rules) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := Options{Rules: rules, ValFile: in.Track.Data.Val}
	base := s.baseline(in.Reference, opts)
	fs, err := inspect(in.Program, opts, base)
	if err != nil {
		return nil, fmt.Errorf("track %s: %w", in.Track.Name, err)
	}
	if len(fs) == 0 {
		return nil, nil
	}
	return &eval.CheckResult{Findings: fs}, nil
}

// baseline returns the reference's findings, keyed by rule and statement.
func (s *Static) baseline(ref []byte, opts Options) map[string]int {
	if len(ref) == 0 {
		return nil
	}
	k := baselineKey{ref: sha256.Sum256(ref), rules: strings.Join(opts.Rules, ","), val: opts.ValFile}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.cache[k]; ok {
		return b
	}
	b := baselineOf(ref, opts)
	if len(s.cache) >= 64 {
		clear(s.cache) // tracks are few; this only bounds a long-lived process
	}
	s.cache[k] = b
	return b
}

// Rule describes one static rule.
type Rule struct {
	ID      string
	Summary string // one line
	// Harness and Log say whether the rule is in the default set of the
	// harness and the log contract.
	Harness, Log bool
}

// Rules returns every static rule in documentation order.
func Rules() []Rule {
	h, l := track.DefaultStaticRules("harness"), track.DefaultStaticRules("log")
	out := make([]Rule, len(ruleDefs))
	for i, d := range ruleDefs {
		out[i] = Rule{ID: d.id, Summary: d.summary, Harness: slices.Contains(h, d.id), Log: slices.Contains(l, d.id)}
	}
	return out
}

// Options configure Inspect.
type Options struct {
	// Rules are the ids of the rules to run; nil runs all of them.
	Rules []string
	// ValFile is the name of the track's validation shard (data.val), extra
	// evidence for the val-data rule.
	ValFile string
	// Reference, when set, is the track's reference program: a finding on a
	// statement that the reference holds too (as many times, with the same
	// finding) is not reported, so that a track may allow what its own
	// reference does.
	Reference []byte
}

// Inspect runs static rules on a program and returns their findings in
// line order; every finding is eval.SeverityInvalid. An unknown rule id is
// an error.
func Inspect(program []byte, opts Options) ([]eval.Finding, error) {
	var base map[string]int
	if len(opts.Reference) > 0 {
		base = baselineOf(opts.Reference, opts)
	}
	return inspect(program, opts, base)
}

func baselineOf(ref []byte, opts Options) map[string]int {
	fs, err := run(ref, opts)
	if err != nil {
		return nil
	}
	b := map[string]int{}
	for _, f := range fs {
		b[f.key()]++
	}
	return b
}

// key identifies a finding by rule, message and statement, not by line, so
// that a reference's finding matches the same code anywhere.
func (f finding) key() string {
	k := f.rule + "\x00" + f.msg
	if i := strings.LastIndex(k, ": `"); i >= 0 {
		k = k[:i] // the quote is a line, not the statement
	}
	if f.st != nil {
		k += "\x00" + f.st.root().key
	}
	return k
}

func inspect(program []byte, opts Options, base map[string]int) ([]eval.Finding, error) {
	fs, err := run(program, opts)
	if err != nil {
		return nil, err
	}
	base = maps.Clone(base)
	var out []eval.Finding
	dropped := 0
	for _, f := range fs {
		if k := f.key(); base[k] > 0 {
			base[k]--
			continue
		}
		if len(out) == maxFindings {
			dropped++
			continue
		}
		out = append(out, eval.Finding{Rule: f.rule, Severity: eval.SeverityInvalid, Line: f.line, Message: f.msg})
	}
	if dropped > 0 {
		out = append(out, eval.Finding{Rule: out[0].Rule, Severity: eval.SeverityInvalid,
			Message: fmt.Sprintf("and %d more findings", dropped)})
	}
	return out, nil
}

// run analyzes a program and runs the rules, returning the findings sorted
// by line and then by rule order, without duplicates.
func run(program []byte, opts Options) ([]finding, error) {
	ids := opts.Rules
	if ids == nil {
		ids = track.StaticRuleIDs()
	}
	var defs []ruleDef
	for _, id := range ids {
		k := slices.IndexFunc(ruleDefs, func(d ruleDef) bool { return d.id == id })
		if k < 0 {
			return nil, fmt.Errorf("unknown static rule %q (the rules are %s)", id, strings.Join(track.StaticRuleIDs(), ", "))
		}
		defs = append(defs, ruleDefs[k])
	}
	if bytes.IndexByte(program, 0) >= 0 {
		program = bytes.ReplaceAll(program, []byte{0}, []byte(" "))
	}
	p := analyze(program)
	var all []finding
	for _, d := range defs {
		c := &checker{p: p, rule: d.id, valFile: opts.ValFile}
		d.run(c)
		all = append(all, c.out...)
	}
	order := func(id string) int { return slices.IndexFunc(ruleDefs, func(d ruleDef) bool { return d.id == id }) }
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].line != all[j].line {
			return all[i].line < all[j].line
		}
		return order(all[i].rule) < order(all[j].rule)
	})
	seen := map[string]bool{}
	out := all[:0]
	for _, f := range all {
		k := fmt.Sprintf("%s\x00%d\x00%s", f.rule, f.line, f.msg)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out, nil
}
