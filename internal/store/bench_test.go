package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Every write of the bench tables goes through write: on a store that may
// not write, each says ErrReadOnly (and so, on a full disk, each gets the
// reserve) instead of SQLite's bare error.
func TestBenchWritesGoThroughWrite(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	r := &BenchRun{Suite: "s", SuiteHash: "h", Scaffold: "flat", Model: "m", Hints: "none"}
	if err := s.CreateBenchRun(ctx, r); err != nil || r.Name != "bench-1" {
		t.Fatalf("CreateBenchRun: %v, name %q", err, r.Name)
	}
	as := []*BenchAttempt{{RunID: r.ID, Task: "t", Seed: 0}}
	if err := s.InsertBenchAttempts(ctx, as); err != nil || as[0].ID == 0 {
		t.Fatalf("InsertBenchAttempts: %v, id %d", err, as[0].ID)
	}
	n := &BenchNode{AttemptID: as[0].ID, Kind: "start", State: NodeDone}
	if err := s.InsertBenchNode(ctx, n); err != nil {
		t.Fatal(err)
	}

	s.readOnly = true
	writes := map[string]func() error{
		"CreateBenchRun":      func() error { return s.CreateBenchRun(ctx, &BenchRun{Suite: "s", Config: nil}) },
		"UpdateBenchRun":      func() error { return s.UpdateBenchRun(ctx, r) },
		"InsertBenchAttempts": func() error { return s.InsertBenchAttempts(ctx, []*BenchAttempt{{RunID: r.ID, Task: "u"}}) },
		"UpdateBenchAttempt":  func() error { return s.UpdateBenchAttempt(ctx, as[0]) },
		"InsertBenchNode":     func() error { return s.InsertBenchNode(ctx, &BenchNode{AttemptID: as[0].ID, Seq: 1}) },
		"UpdateBenchNode":     func() error { return s.UpdateBenchNode(ctx, n) },
		"InsertBenchCall":     func() error { return s.InsertBenchCall(ctx, n.ID, &LLMCall{Model: "m"}) },
		"MarkLostBenchCalls":  func() error { _, err := s.MarkLostBenchCalls(ctx, r.ID); return err },
		"PutCalibration":      func() error { return s.PutCalibration(ctx, &Calibration{Suite: "s", Record: "r0"}) },
	}
	for name, w := range writes {
		if err := w(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
}

// A bench run's name is checked like an evolution run's, and a name that
// is taken says what to do.
func TestBenchRunName(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.CreateBenchRun(ctx, &BenchRun{Name: "a\nb", Suite: "s"}); err == nil {
		t.Error("a name with a newline was accepted")
	}
	if err := s.CreateBenchRun(ctx, &BenchRun{Name: "x", Suite: "s"}); err != nil {
		t.Fatal(err)
	}
	err := s.CreateBenchRun(ctx, &BenchRun{Name: "x", Suite: "s"})
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second run named x: %v", err)
	}
	if _, err := s.BenchRun(ctx, "nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "frontier bench runs") {
		t.Errorf("an unknown run: %v", err)
	}
}
