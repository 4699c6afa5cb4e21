package eval

import (
	"context"
	"errors"

	"github.com/frontier-bench/frontier/internal/track"
)

// runLogPhase runs a program under the legacy "log" contract: an unmodified
// speedrun script whose parameters are injected and whose log lines are
// parsed.
func (e *Evaluator) runLogPhase(ctx context.Context, spec *track.Spec, files *DataFiles, req Request, dir, mode string) (*phaseOutcome, []byte, error) {
	return nil, nil, errors.New("track " + spec.Name + ": the log contract is not available in this build")
}
