package evolve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/store"
)

// fakeEvaluator judges programs without running them: the verdict and
// metrics follow from the program's hash, so the same program always gets
// the same result. With a store it records evaluations as the real
// evaluator does (a running row first, then the result).
type fakeEvaluator struct {
	st         store.Store
	fast, full time.Duration
	// killAfter, when positive, makes the process kill itself right after
	// recording its killAfter-th evaluation, before returning it.
	killAfter int64
	n         atomic.Int64
}

func (f *fakeEvaluator) Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error) {
	h := store.Hash(req.Program)
	var rec *store.Evaluation
	if f.st != nil {
		if _, err := f.st.PutProgram(ctx, req.Program, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: h, Track: req.Track.Name, TrackHash: "fake", Seed: req.Seed, FastOnly: req.FastOnly}
		if err := f.st.CreateEvaluation(ctx, rec); err != nil {
			return nil, err
		}
	}
	d := f.full
	if req.FastOnly {
		d = f.fast
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("evaluation canceled: %w", ctx.Err())
		}
	}
	res := fakeOutcome(h, req)
	if rec != nil {
		doc, _ := json.Marshal(res)
		rec.Verdict, rec.Reason, rec.Result = string(res.Verdict), res.Reason, doc
		rec.ValLoss, rec.TrainTimeMs, rec.StepAvgMs = res.Metrics.ValLoss, res.Metrics.TrainTimeMs, res.Metrics.StepAvgMs
		if err := f.st.FinishEvaluation(context.WithoutCancel(ctx), rec, nil); err != nil {
			return nil, err
		}
		res.EvaluationID = rec.ID
		if f.killAfter > 0 && f.n.Add(1) == f.killAfter {
			syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return res, nil
}

// fakeOutcome: one program in seven fails its fast check; the rest get a
// loss between 4.35 and 4.74 (the quick track's target is 4.65) and a time
// between 0.8 and 1.8 s, from the hash.
func fakeOutcome(h string, req eval.Request) *eval.Result {
	b := []byte(h)
	res := &eval.Result{Track: eval.TrackInfo{Name: req.Track.Name, Target: req.Track.TargetValLoss}}
	if req.FastOnly {
		if b[0]%7 == 0 {
			res.Verdict, res.Reason = eval.Error, "fast check: NameError: name 'fake' is not defined"
			res.Traceback = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nNameError: name 'fake' is not defined"
			return res
		}
		res.Verdict, res.Reason = eval.FastOK, "fast check passed"
		return res
	}
	loss := 4.35 + float64(int(b[1])%40)/100
	ms := 800 + float64(int(b[2])*4)
	res.Metrics = eval.Metrics{ValLoss: loss, TrainTimeMs: ms, StepAvgMs: ms / 60, Steps: 60, Score: ms / 60 * loss}
	res.Verdict, res.Reason = eval.Acceptable, "fake: at or under the target"
	if loss > req.Track.TargetValLoss {
		res.Verdict, res.Reason = eval.LossTooHigh, "fake: above the target"
	}
	return res
}

// fakeModel answers like a model that appends a distinct comment to the
// program, and answers idea prompts with an idea. Every call costs $0.001.
func fakeModel(delay time.Duration) *llmtest.Fake {
	var n atomic.Int64
	f := &llmtest.Fake{}
	f.Respond = func(req llm.Request) llmtest.Reply {
		k := n.Add(1)
		user := req.Messages[len(req.Messages)-1].Content
		r := llmtest.Reply{Usage: llm.Usage{InputTokens: int64(len(user) / 4), OutputTokens: 40}, CostUSD: 0.001, Delay: delay}
		if strings.Contains(user, "## Task: an idea first") {
			r.Text = fmt.Sprintf("Idea %d: annotate the program.", k)
			return r
		}
		r.Text = fmt.Sprintf("Append a note.\n\n<<<<<<< SEARCH\n=======\n# variant %d\n>>>>>>> REPLACE\n", k)
		return r
	}
	return f
}
