// Package eval evaluates one candidate program on a track: it prepares a run
// folder, verifies the data, runs a fast check and then the full run through
// a runner, reads the harness's telemetry, and returns a verdict that comes
// only from what the environment measured itself.
package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
)

// Evaluator runs evaluations: the pipeline of Evaluate (pipeline.go) over
// an Executor that runs each phase on a node. Its fields are set once;
// Evaluate may be called from several goroutines.
type Evaluator struct {
	// Executor runs the phases (see Node for this machine's).
	Executor Executor
	// Store, when set, records the program, the evaluation and its
	// telemetry. The evaluation row exists before the process starts.
	Store Store
	// Python is the interpreter that runs programs on this machine's
	// executor (see pyenv.Find), for the result.
	Python string
	// Version is frontier's own, recorded with every result.
	Version string
	// Torch is its PyTorch version, for the report.
	Torch string
	// RunsDir holds the run folders.
	RunsDir string
	// Data resolves and verifies a track's data (see Data).
	Data DataResolver
	// Checks run on the program before any process starts.
	Checks []Check
	// Sandbox names the confinement the executor applies, for the report
	// ("bwrap", "landlock", "none").
	Sandbox string
	Log     *slog.Logger
	// FullLimit, when set, is every full run's wall-clock limit, fixed
	// (--limit): not sized from the fast check, not extended while the
	// run steps. Zero sizes it (fullLimit) and lets a run still stepping
	// at it go on up to the track's full_run_max (deadline).
	FullLimit time.Duration
	// Progress, when set, receives a line per phase and per designated
	// step, for a live display.
	Progress func(line string)
}

// DataResolver returns the data files of a track after verifying them.
type DataResolver interface {
	Resolve(ctx context.Context, spec *track.Spec) (*DataFiles, error)
}

// Request is one evaluation to run.
type Request struct {
	Track   *track.Spec
	Program []byte
	// Name is how the program is shown (a file name).
	Name string
	Seed int
	// FastOnly stops after the fast check.
	FastOnly bool
	// SkipFast goes straight to the full run: for callers that ran the
	// fast check already (the evolution engine's fix loop).
	SkipFast bool
	// ReferenceWall is how long the track's reference took in its full
	// run on this machine, when the caller measured it (the evolution
	// engine does, first): the full run's first deadline is then at least
	// twice that, up to the track's full_run_max. A measurement of a whole
	// run at the machine's present load says more than a few steps do.
	ReferenceWall time.Duration
	// Keep, when set, is where the run folder is moved afterwards;
	// otherwise it is removed once everything is stored.
	Keep string
	// Key, when set, names this evaluation across restarts of the caller
	// (the engine's run, child, attempt and seed): an executor that runs
	// phases on a cluster finds a phase still in flight, or one that
	// ended while the caller was down, by it instead of running it twice.
	Key string
}

// ErrBadProgram is returned (wrapped) when the program cannot be evaluated
// at all: empty, not text, not Python.
var ErrBadProgram = errors.New("bad program")

// SpecHash identifies a track version: the SHA-256 of its spec as decoded
// (so comments and formatting do not matter), without the folder it was
// read from: a track folder that only moved is the same track.
func SpecHash(spec *track.Spec) (string, error) {
	return specHashIn(spec, "")
}

// SpecMatches reports whether hash, stored with a run, an evaluation or a
// calibration, names spec's version. Hashes stored before SpecHash left
// the folder out held the folder's path; such a hash matches when one of
// dirs is the folder it was read from then (its folder now, and the one
// recorded with a run).
func SpecMatches(spec *track.Spec, hash string, dirs ...string) bool {
	if h, err := SpecHash(spec); err == nil && h == hash {
		return true
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if h, err := specHashIn(spec, d); err == nil && h == hash {
			return true
		}
	}
	return false
}

// specHashIn hashes spec as if it had been read from dir.
func specHashIn(spec *track.Spec, dir string) (string, error) {
	c := *spec
	c.Dir = dir
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("hash track spec: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readRunFile reads a file a program may have written: only a regular
// file, not through a link, opened without blocking (a named pipe would
// hang a plain open), and at most max bytes.
func readRunFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d expected", path, fi.Size(), max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
