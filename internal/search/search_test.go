package search

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// callLog keeps what a Recorder recorded, and fails when told to.
type callLog struct {
	started, finished []store.LLMCall
	startErr, finErr  error
	// finCtxErr is the error of the context CallFinished was given.
	finCtxErr error
}

func (l *callLog) CallStarted(ctx context.Context, call *store.LLMCall) error {
	if l.startErr != nil {
		return l.startErr
	}
	call.ID = int64(len(l.started) + 1)
	l.started = append(l.started, *call)
	return nil
}

func (l *callLog) CallFinished(ctx context.Context, call *store.LLMCall) error {
	l.finCtxErr = ctx.Err()
	if l.finErr != nil {
		return l.finErr
	}
	l.finished = append(l.finished, *call)
	return nil
}

func redactKey(s string) string { return strings.ReplaceAll(s, "sk-secret", "[redacted]") }

func request(text string) llm.Request {
	return llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: text}}}
}

// A call is recorded, redacted, before the model sees it; its answer,
// usage and cost after.
func TestRecorderRecordsBeforeAndAfter(t *testing.T) {
	log := &callLog{}
	var seenBefore int
	rec := &Recorder{Log: log, Redact: redactKey, Purpose: "fix", Inner: llm.ClientFunc(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		seenBefore = len(log.started)
		return &llm.Response{Text: "answer with sk-secret", Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.25, Model: "m-1", Provider: "p"}, nil
	})}
	resp, err := rec.Complete(context.Background(), request("fix it with sk-secret"))
	if err != nil || resp == nil {
		t.Fatalf("Complete: %v, %v", resp, err)
	}
	if seenBefore != 1 {
		t.Fatalf("the model was called with %d calls recorded, want 1 (recorded before sending)", seenBefore)
	}
	if got := log.started[0]; got.Purpose != "fix" || got.Model != "m" || strings.Contains(got.Request, "sk-secret") || !strings.Contains(got.Request, "[redacted]") {
		t.Errorf("recorded request %+v", got)
	}
	fin := log.finished[0]
	if fin.State != store.CallDone || fin.Answer != "answer with [redacted]" || fin.InputTokens != 10 || fin.OutputTokens != 5 || fin.CostUSD != 0.25 || fin.ServerModel != "m-1" {
		t.Errorf("recorded answer %+v", fin)
	}
	if len(rec.Calls) != 1 || rec.Calls[0].ID != 1 || rec.Err != nil {
		t.Errorf("calls %v, err %v", rec.Calls, rec.Err)
	}
}

// A failed call is recorded as failed with its (redacted) error, and the
// error is the model's, not a StoreError.
func TestRecorderFailedCall(t *testing.T) {
	log := &callLog{}
	rec := &Recorder{Log: log, Redact: redactKey, Inner: llm.ClientFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		return nil, errors.New("401: key sk-secret refused")
	})}
	_, err := rec.Complete(context.Background(), request("x"))
	var se *StoreError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("error %v: want the model's error", err)
	}
	if fin := log.finished[0]; fin.State != store.CallFailed || fin.Error != "401: key [redacted] refused" {
		t.Errorf("recorded %+v", fin)
	}
}

// A call that cannot be recorded is not sent, and ends with a StoreError.
func TestRecorderStoreFailure(t *testing.T) {
	sent := false
	rec := &Recorder{Log: &callLog{startErr: errors.New("disk full")}, Inner: llm.ClientFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		sent = true
		return &llm.Response{}, nil
	})}
	_, err := rec.Complete(context.Background(), request("x"))
	var se *StoreError
	if !errors.As(err, &se) || sent || rec.Err == nil || rec.Err.Error() != "disk full" {
		t.Fatalf("error %v (sent %v, Err %v): want a StoreError before sending", err, sent, rec.Err)
	}
	log := &callLog{finErr: errors.New("locked")}
	rec = &Recorder{Log: log, Inner: llm.ClientFunc(func(context.Context, llm.Request) (*llm.Response, error) { return &llm.Response{}, nil })}
	if _, err := rec.Complete(context.Background(), request("x")); !errors.As(err, &se) || rec.Err == nil {
		t.Fatalf("an answer that cannot be recorded: %v", err)
	}
}

// An answer that came in while the search was being canceled is recorded
// all the same.
func TestRecorderFinishesUnderCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	log := &callLog{}
	rec := &Recorder{Log: log, Inner: llm.ClientFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		cancel()
		return &llm.Response{Text: "late"}, nil
	})}
	if _, err := rec.Complete(ctx, request("x")); err != nil {
		t.Fatal(err)
	}
	if log.finCtxErr != nil || len(log.finished) != 1 || log.finished[0].Answer != "late" {
		t.Errorf("finished with a context error %v: %+v", log.finCtxErr, log.finished)
	}
}

// A replayed answer is recorded as a call that reached no client.
func TestRecorderReplayed(t *testing.T) {
	log := &callLog{}
	rec := &Recorder{Log: log, Purpose: "template"}
	if err := rec.Replayed(context.Background(), request("x"), &llm.Response{Text: "recorded", CostUSD: 0.5}); err != nil {
		t.Fatal(err)
	}
	if len(log.finished) != 1 || log.finished[0].Answer != "recorded" || log.finished[0].CostUSD != 0.5 || log.finished[0].State != store.CallDone {
		t.Errorf("recorded %+v", log.finished)
	}
}

type evaluations struct {
	row *store.Evaluation
	err error
	// fastOnly and since are what the last call asked for.
	fastOnly bool
	since    time.Time
}

func (e *evaluations) LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*store.Evaluation, error) {
	e.fastOnly, e.since = fastOnly, since
	return e.row, e.err
}

func TestAdopt(t *testing.T) {
	ctx := context.Background()
	doc, _ := json.Marshal(eval.Result{Verdict: runs.Acceptable, Reason: "ok", Traceback: ""})
	since := time.Now().Add(-time.Minute)
	good := &store.Evaluation{ID: 7, Track: "quick", Result: doc}

	st := &evaluations{row: good}
	res, row, err := Adopt(ctx, st, "quick", "h", true, since)
	if err != nil || res == nil || res.EvaluationID != 7 || res.Verdict != runs.Acceptable || row != good || !st.fastOnly || !st.since.Equal(since) {
		t.Fatalf("a finished evaluation: %+v, %v, %v", res, row, err)
	}
	if res, _, err := Adopt(ctx, st, "", "h", false, since); err != nil || res == nil {
		t.Errorf("any track: %+v, %v", res, err)
	}
	if res, _, err := Adopt(ctx, st, "other", "h", false, since); err != nil || res != nil {
		t.Errorf("another track's evaluation was adopted: %+v, %v", res, err)
	}
	if res, _, err := Adopt(ctx, &evaluations{err: store.ErrNotFound}, "quick", "h", false, since); err != nil || res != nil {
		t.Errorf("none: %+v, %v", res, err)
	}
	if _, _, err := Adopt(ctx, &evaluations{err: errors.New("locked")}, "quick", "h", false, since); err == nil {
		t.Error("a store failure was taken for no evaluation")
	}
	for _, bad := range [][]byte{[]byte("{"), []byte(`{"verdict": ""}`)} {
		if res, _, err := Adopt(ctx, &evaluations{row: &store.Evaluation{ID: 8, Track: "quick", Result: bad}}, "quick", "h", false, since); err != nil || res != nil {
			t.Errorf("an unreadable result %s was adopted: %+v, %v", bad, res, err)
		}
	}
}
