package eval

import (
	"context"
	"fmt"

	"github.com/frontier-bench/frontier/internal/track"
)

// Check inspects a candidate program before any process starts: static
// rules, protected regions. A Check may return a rewritten program (for
// example with protected regions restored from the reference), which is
// what then runs.
type Check interface {
	Check(ctx context.Context, in CheckInput) (*CheckResult, error)
}

// CheckInput is what a check sees.
type CheckInput struct {
	Track     *track.Spec
	Reference []byte // the track's reference program
	Program   []byte // the candidate, after earlier checks' rewrites
	Name      string
}

// Severity of a finding.
type Severity string

const (
	// SeverityInvalid makes the verdict invalid: the program does not run.
	SeverityInvalid Severity = "invalid"
	// SeverityWarning is reported with the result; the program runs.
	SeverityWarning Severity = "warning"
)

// Finding is one thing a check found.
type Finding struct {
	Rule     string   `json:"rule"` // e.g. "no-inductor-config", "protected-region"
	Severity Severity `json:"severity"`
	Line     int      `json:"line,omitempty"` // 1-based line in the program; 0 when not tied to one
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", f.Rule, f.Line, f.Message)
	}
	return fmt.Sprintf("%s: %s", f.Rule, f.Message)
}

// CheckResult is a check's outcome. Program is nil when unchanged.
type CheckResult struct {
	Program  []byte
	Findings []Finding
}
