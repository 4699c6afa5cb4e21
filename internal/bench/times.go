package bench

import (
	"context"
	"fmt"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Where a score's times come from.
const (
	// TimesCalibrated: both records were re-timed on this machine class
	// (frontier bench calibrate), like the search's own programs.
	TimesCalibrated = "calibrated"
	// TimesPublished: the suite's times, measured elsewhere: the gap is
	// right, but the search's programs were timed on this machine.
	TimesPublished = "published"
)

// taskTimes are the times that score a task; startCal is the start's
// calibration when they are calibrated.
type taskTimes struct {
	start, goal float64
	source      string
	startCal    *store.Calibration
}

// times returns the start's and the goal's train times for task on
// machine class: both calibrated when this class has a calibration of
// both records (same program, same track version), else both published.
// An empty class is the class of the newest evaluation on the start's
// track: before an attempt has run anything, that is the best guess of
// this machine's.
func (b *Bench) times(ctx context.Context, task *Task, spec *track.Spec, class string) (taskTimes, error) {
	return taskTimesFor(ctx, b.env.Store, b.env.Tracks, b.suite, task, spec, class)
}

func taskTimesFor(ctx context.Context, st Store, tracks Tracks, s *Suite, task *Task, spec *track.Spec, class string) (taskTimes, error) {
	startRec, err := s.Record(task.Start)
	if err != nil {
		return taskTimes{}, err
	}
	goalRec, err := s.Record(task.Goal)
	if err != nil {
		return taskTimes{}, err
	}
	published := taskTimes{start: startRec.TimeMs, goal: goalRec.TimeMs, source: TimesPublished}
	if class == "" {
		evs, err := st.Evaluations(ctx, store.Filter{Track: spec.Name, Limit: 20})
		if err != nil {
			return taskTimes{}, err
		}
		for _, e := range evs {
			if e.FingerprintClass != "" {
				class = e.FingerprintClass
				break
			}
		}
	}
	if class == "" || goalRec.Program == "" {
		return published, nil
	}
	cals, err := st.Calibrations(ctx, s.Name, class)
	if err != nil {
		return taskTimes{}, err
	}
	start, err := calibrated(s, tracks, cals, startRec)
	if err != nil || start == nil {
		return published, err
	}
	goal, err := calibrated(s, tracks, cals, goalRec)
	if err != nil || goal == nil {
		return published, err
	}
	return taskTimes{start: start.MeanMs, goal: goal.MeanMs, source: TimesCalibrated, startCal: start}, nil
}

// calibrated returns the calibration of record r that still applies: the
// same program on the same track version. nil when there is none.
func calibrated(s *Suite, tracks Tracks, cals []*store.Calibration, r *Record) (*store.Calibration, error) {
	src, err := s.Program(r.ID)
	if err != nil {
		return nil, err
	}
	spec, err := tracks.Get(s.TrackOf(r))
	if err != nil {
		return nil, fmt.Errorf("the track of record %s: %w", r.ID, err)
	}
	h := store.Hash(src)
	for _, c := range cals {
		if c.Record == r.ID && c.ProgramHash == h && eval.SpecMatches(spec, c.TrackHash, spec.Dir) {
			return c, nil
		}
	}
	return nil, nil
}
