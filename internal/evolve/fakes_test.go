package evolve

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/store"
)

// fakeEvaluator judges programs without running them: the outcome
// follows from the program's hash (hashOutcome), so the same program
// always gets the same result. With a store it records evaluations as the
// real evaluator does (a running row first, then the result).
func fakeEvaluator(st store.Store) *evaltest.Scripted {
	return &evaltest.Scripted{Store: storeOrNil(st), Else: hashOutcome}
}

// storeOrNil keeps a nil store.Store from becoming a non-nil eval.Store.
func storeOrNil(st store.Store) eval.Store {
	if st == nil {
		return nil
	}
	return st
}

// hashOutcome: one program in seven fails its fast check; the rest get a
// loss between 4.35 and 4.74 (the quick track's target is 4.65) and a time
// between 0.8 and 1.8 s, from the hash.
func hashOutcome(req eval.Request, hash string) evaltest.Outcome {
	b := []byte(hash)
	if req.FastOnly && b[0]%7 == 0 {
		return evaltest.Outcome{Crash: "NameError: name 'fake' is not defined", Reason: "fast check: NameError: name 'fake' is not defined",
			Traceback: "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nNameError: name 'fake' is not defined"}
	}
	return evaltest.Outcome{ValLoss: 4.35 + float64(int(b[1])%40)/100, TrainTimeMs: 800 + float64(int(b[2])*4)}
}

// gated is fakeEvaluator with every full run held until it receives from
// release, to catch the engine with work in flight.
func gated(st store.Store, release <-chan struct{}) *evaltest.Scripted {
	ev := fakeEvaluator(st)
	ev.Else = func(req eval.Request, hash string) evaltest.Outcome {
		o := hashOutcome(req, hash)
		o.Gate = release
		return o
	}
	return ev
}

// delayed is hashOutcome with each fast check taking fast and each full
// run full.
func delayed(fast, full time.Duration) func(eval.Request, string) evaltest.Outcome {
	return func(req eval.Request, hash string) evaltest.Outcome {
		o := hashOutcome(req, hash)
		o.FastDelay, o.FullDelay = fast, full
		return o
	}
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
