package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The check after a copy finds a row that differs, and says where.
func TestCopyCheckFindsDifferences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := open(ctx, filepath.Join(dir, "a.db"), Self())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := open(ctx, filepath.Join(dir, "b.db"), Self())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	h, err := src.PutProgram(ctx, []byte("print(1)\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.CreateEvaluation(ctx, &Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, dst, src, nil); err != nil {
		t.Fatal(err)
	}
	cols, err := matchColumns(ctx, dst, src, "evaluations")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.db.ExecContext(ctx, `UPDATE evaluations SET track = 'other'`); err != nil {
		t.Fatal(err)
	}
	if _, err := compareTable(ctx, dst, src, "evaluations", "id", cols); err == nil || !strings.Contains(err.Error(), "track is tiny in the source but other in the copy") {
		t.Errorf("a changed row: %v", err)
	}
	if _, err := dst.db.ExecContext(ctx, `DELETE FROM evaluations`); err != nil {
		t.Fatal(err)
	}
	if _, err := compareTable(ctx, dst, src, "evaluations", "id", cols); err == nil || !strings.Contains(err.Error(), "more rows") {
		t.Errorf("a missing row: %v", err)
	}
}
