package verify

import (
	"context"

	"github.com/frontier-bench/frontier/internal/eval"
)

// RuleProtected is the rule of protected-region findings.
const RuleProtected = "protected-region"

// Checks returns the checks the evaluator runs on every candidate, in
// order: protected regions first, so that the static rules judge the
// program that will run.
func Checks() []eval.Check {
	return []eval.Check{Protected{}, NewStatic()}
}

// Protected restores the reference's protected regions into the candidate
// when the track asks for it (verification.protected_regions).
type Protected struct{}

// Check implements eval.Check.
func (Protected) Check(ctx context.Context, in eval.CheckInput) (*eval.CheckResult, error) {
	return nil, nil
}

// Static runs the track's static rules. Create it with NewStatic; it is
// safe for concurrent use.
type Static struct{}

// NewStatic returns a Static check.
func NewStatic() *Static { return &Static{} }

// Check implements eval.Check.
func (s *Static) Check(ctx context.Context, in eval.CheckInput) (*eval.CheckResult, error) {
	return nil, nil
}

// Rule describes one static rule.
type Rule struct {
	ID      string
	Summary string // one line
	// Harness and Log say whether the rule is in the default set of the
	// harness and log contracts.
	Harness, Log bool
}

// Rules returns every static rule in documentation order.
func Rules() []Rule { return nil }

// Options configure Inspect.
type Options struct {
	// Rules are the ids of the rules to run; nil runs all of them.
	Rules []string
	// ValFile is the name of the track's validation shard (data.val), extra
	// evidence for the val-data rule.
	ValFile string
	// Reference, when set, is the track's reference program: a finding on a
	// statement the reference holds too (as many times) is not reported.
	Reference []byte
}

// Inspect runs static rules on a program and returns their findings, in
// line order; every finding is eval.SeverityInvalid. An unknown rule id is
// an error.
func Inspect(program []byte, opts Options) ([]eval.Finding, error) {
	return nil, nil
}
