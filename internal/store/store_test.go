package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

func openTest(t *testing.T) *sqlStore {
	t.Helper()
	s, err := open(context.Background(), filepath.Join(t.TempDir(), "sub", "f.db"), Self())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestProgramRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	src := []byte("print('hi')\n")
	h, err := s.PutProgram(ctx, src, "norm1")
	if err != nil {
		t.Fatal(err)
	}
	if h != Hash(src) {
		t.Fatalf("hash %s, want %s", h, Hash(src))
	}
	// Storing twice is a no-op.
	if _, err := s.PutProgram(ctx, src, "norm1"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Program(ctx, h)
	if err != nil || string(got) != string(src) {
		t.Fatalf("Program = %q, %v", got, err)
	}
	hs, err := s.ProgramsByNormHash(ctx, "norm1")
	if err != nil || len(hs) != 1 || hs[0] != h {
		t.Fatalf("ProgramsByNormHash = %v, %v", hs, err)
	}
	if _, err := s.Program(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing program: %v", err)
	}
}

func TestEvaluationLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	h, _ := s.PutProgram(ctx, []byte("x"), "")
	e := &Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th", Seed: 3}
	if err := s.CreateEvaluation(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Evaluation(ctx, e.ID)
	if err != nil || got.State != StateRunning || !got.FinishedAt.IsZero() {
		t.Fatalf("running evaluation = %+v, %v", got, err)
	}
	e.Verdict, e.Reason, e.ValLoss, e.TrainTimeMs, e.Steps = "acceptable", "ok", 1.5, 1234, 100
	e.Result = json.RawMessage(`{"a":1}`)
	if err := s.FinishEvaluation(ctx, e, []byte("{\"event\":\"final\"}\n")); err != nil {
		t.Fatal(err)
	}
	got, err = s.Evaluation(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateDone || got.Verdict != "acceptable" || got.ValLoss != 1.5 || got.Steps != 100 || string(got.Result) != `{"a":1}` {
		t.Fatalf("finished evaluation = %+v", got)
	}
	tel, err := s.Telemetry(ctx, e.ID)
	if err != nil || string(tel) != "{\"event\":\"final\"}\n" {
		t.Fatalf("telemetry = %q, %v", tel, err)
	}
	list, err := s.Evaluations(ctx, Filter{Track: "tiny", Verdict: "acceptable"})
	if err != nil || len(list) != 1 {
		t.Fatalf("Evaluations = %v, %v", list, err)
	}
	if list, _ := s.Evaluations(ctx, Filter{Track: "other"}); len(list) != 0 {
		t.Fatalf("filter by track returned %d", len(list))
	}
	if err := s.FinishEvaluation(ctx, &Evaluation{ID: 999}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finishing a missing evaluation: %v", err)
	}
}

func TestEvaluationNeedsProgram(t *testing.T) {
	s := openTest(t)
	err := s.CreateEvaluation(context.Background(), &Evaluation{ProgramHash: "missing", Track: "tiny"})
	if err == nil {
		t.Fatal("an evaluation of an unknown program was stored")
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	s, err := open(ctx, path, Self())
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.PutProgram(ctx, []byte("y"), "")
	s.Close()
	s, err = open(ctx, path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Program(ctx, h); err != nil {
		t.Fatal(err)
	}
}
