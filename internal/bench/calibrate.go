package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Calibration re-times a suite's records on this machine, so that a score
// compares times measured in the same place: the search's programs run
// here, and so must the records whose gap they are scored against.

// CalibrateOptions say what to re-time and how often.
type CalibrateOptions struct {
	// Repeats is the number of runs of each record (at least 2).
	Repeats int
	// Tasks restricts the calibration to the records of these tasks.
	Tasks []string
	// Alpha is the level of each task's Welch test (default 0.01).
	Alpha float64
}

// Calibrated is one record re-timed.
type Calibrated struct {
	Record      string  `json:"record"`
	Track       string  `json:"track"`
	PublishedMs float64 `json:"published_ms"`
	// TrainTimeMs and ValLoss summarize the acceptable runs.
	TrainTimeMs stats.Summary `json:"train_time_ms"`
	ValLoss     stats.Summary `json:"val_loss"`
	Runs        []CalRun      `json:"runs"`
	// Failed says why the record has no calibration (a run was not
	// acceptable); its published time stays in use.
	Failed string `json:"failed,omitempty"`
}

// CalRun is one timed run of a record.
type CalRun struct {
	Seed         int          `json:"seed"`
	EvaluationID int64        `json:"evaluation_id"`
	Verdict      runs.Verdict `json:"verdict"`
	TrainTimeMs  float64      `json:"train_time_ms"`
	ValLoss      float64      `json:"val_loss"`
}

// Gap is a task's speedup as calibrated: Welch's one-sided test that the
// goal's time is below the start's.
type Gap struct {
	Task       string       `json:"task"`
	StartMs    float64      `json:"start_ms"`
	GoalMs     float64      `json:"goal_ms"`
	SpeedupPct float64      `json:"speedup_pct"`
	Test       *stats.TTest `json:"welch,omitempty"`
}

// CalibrationReport is what Calibrate did.
type CalibrationReport struct {
	Suite   string `json:"suite"`
	Class   string `json:"fingerprint_class"`
	Repeats int    `json:"repeats"`
	// At is when it ended; Conditions the load it was taken under.
	At         time.Time        `json:"at"`
	Conditions store.Conditions `json:"conditions"`
	Records    []Calibrated     `json:"records"`
	Gaps       []Gap            `json:"gaps"`
}

type calTarget struct {
	rec  *Record
	spec *track.Spec
	src  []byte
	out  *Calibrated
}

// Calibrate runs every record of the suite (with a program, and in
// opts.Tasks when given) Repeats times in alternation: round r runs each
// record once with seed r, in the suite's order in even rounds and in
// reverse in odd ones, so that a machine whose speed drifts during the
// calibration affects every record alike. Each record with only acceptable
// runs gets a calibration (mean and noise of its train time) recorded per
// machine class; a task's score then uses these times (see times.go).
func Calibrate(ctx context.Context, env Env, s *Suite, opts CalibrateOptions) (*CalibrationReport, error) {
	if opts.Repeats < 2 {
		return nil, fmt.Errorf("calibration needs at least 2 runs of each record, got %d", opts.Repeats)
	}
	if opts.Alpha == 0 {
		opts.Alpha = 0.01
	}
	tasks := opts.Tasks
	if len(tasks) == 0 {
		for _, t := range s.Tasks {
			tasks = append(tasks, t.Name)
		}
	}
	var ids []string
	for _, name := range tasks {
		t, err := s.Task(name)
		if err != nil {
			return nil, err
		}
		ids = append(ids, t.Start, t.Goal)
	}
	var targets []*calTarget
	for i := range s.Records {
		r := &s.Records[i]
		if r.Program == "" || !slices.Contains(ids, r.ID) {
			continue
		}
		src, err := s.Program(r.ID)
		if err != nil {
			return nil, err
		}
		spec, err := env.Tracks.Get(s.TrackOf(r))
		if err != nil {
			return nil, fmt.Errorf("the track of record %s: %w", r.ID, err)
		}
		targets = append(targets, &calTarget{rec: r, spec: spec, src: src,
			out: &Calibrated{Record: r.ID, Track: spec.Name, PublishedMs: r.TimeMs}})
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("suite %s has no record with a program to calibrate", s.Name)
	}
	rep := &CalibrationReport{Suite: s.Name, Repeats: opts.Repeats, Conditions: store.Conditions{LoadAvg: env.loadAvg()}}
	classes := map[string]int{}
	for round := 0; round < opts.Repeats; round++ {
		order := slices.Clone(targets)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, tg := range order {
			if tg.out.Failed != "" {
				continue
			}
			if env.Progress != nil {
				env.Progress(fmt.Sprintf("calibrate %s: round %d of %d, record %s", s.Name, round+1, opts.Repeats, tg.rec.ID))
			}
			res, err := env.Evaluator.Evaluate(ctx, eval.Request{Track: tg.spec, Program: tg.src, Name: programName(tg.spec),
				Seed: round, SkipFast: round > 0})
			if err != nil {
				return nil, fmt.Errorf("calibrate record %s: %w", tg.rec.ID, err)
			}
			run := CalRun{Seed: round, EvaluationID: res.EvaluationID, Verdict: res.Verdict,
				TrainTimeMs: res.Metrics.TrainTimeMs, ValLoss: res.Metrics.ValLoss}
			tg.out.Runs = append(tg.out.Runs, run)
			if res.Verdict != eval.Acceptable {
				tg.out.Failed = fmt.Sprintf("the run with seed %d is %s: %s", round, res.Verdict, res.Reason)
				continue
			}
			classes[res.FingerprintClass]++
		}
	}
	for c, n := range classes {
		if n > classes[rep.Class] || (n == classes[rep.Class] && c < rep.Class) {
			rep.Class = c
		}
	}
	if len(classes) > 1 {
		return nil, fmt.Errorf("the calibration's runs report %d machine classes: times from different machines cannot be one calibration", len(classes))
	}
	rep.At, rep.Conditions.LoadAvgEnd = time.Now(), env.loadAvg()
	for _, tg := range targets {
		var times, losses []float64
		var evIDs []int64
		for _, r := range tg.out.Runs {
			times, losses, evIDs = append(times, r.TrainTimeMs), append(losses, r.ValLoss), append(evIDs, r.EvaluationID)
		}
		tg.out.TrainTimeMs, tg.out.ValLoss = stats.Summarize(times, 0.95), stats.Summarize(losses, 0.95)
		rep.Records = append(rep.Records, *tg.out)
		if tg.out.Failed != "" || rep.Class == "" {
			continue
		}
		th, err := eval.SpecHash(tg.spec)
		if err != nil {
			return nil, err
		}
		t := tg.out.TrainTimeMs
		c := &store.Calibration{Suite: s.Name, Record: tg.rec.ID, ProgramHash: store.Hash(tg.src), Track: tg.spec.Name,
			TrackHash: th, FingerprintClass: rep.Class, N: t.N, MeanMs: t.Mean, SDMs: t.SD, LoMs: t.CILo, HiMs: t.CIHi,
			ValLoss: tg.out.ValLoss.Mean, EvaluationIDs: evIDs, Conditions: rep.Conditions, CreatedAt: rep.At}
		if err := env.Store.PutCalibration(ctx, c); err != nil {
			return nil, err
		}
	}
	for _, name := range tasks {
		t, _ := s.Task(name)
		rep.Gaps = append(rep.Gaps, gapOf(t, rep.Records, opts.Alpha))
	}
	return rep, nil
}

// gapOf tests a task's calibrated speedup.
func gapOf(t *Task, recs []Calibrated, alpha float64) Gap {
	g := Gap{Task: t.Name}
	var start, goal *Calibrated
	for i := range recs {
		switch recs[i].Record {
		case t.Start:
			start = &recs[i]
		case t.Goal:
			goal = &recs[i]
		}
	}
	if start == nil || goal == nil || start.Failed != "" || goal.Failed != "" {
		return g
	}
	g.StartMs, g.GoalMs = start.TrainTimeMs.Mean, goal.TrainTimeMs.Mean
	g.SpeedupPct = 100 * (g.StartMs - g.GoalMs) / g.StartMs
	var st, gt []float64
	for _, r := range start.Runs {
		st = append(st, r.TrainTimeMs)
	}
	for _, r := range goal.Runs {
		gt = append(gt, r.TrainTimeMs)
	}
	if w, err := stats.WelchLess(gt, st, alpha); err == nil {
		g.Test = &w
	} else if !errors.Is(err, stats.ErrTooFew) {
		return g
	}
	return g
}
