package evolve

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
)

// copyTrack copies the quick track's folder to dir and loads it there.
func copyTrack(t *testing.T, dir string) *track.Spec {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"track.yaml", "train.py"} {
		b, err := os.ReadFile(filepath.Join("testdata", "quick", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := track.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// A run on a track folder resumes after the folder moved: the spec's hash
// is its content's, not its path's. A run recorded before the hash left
// the folder out (its stored hash includes the folder it was read from)
// resumes too, from the folder it recorded or from its new place.
func TestResumeAfterTrackMoved(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "current hash"
		if legacy {
			name = "hash with the folder's path"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, "")
			root := t.TempDir()
			opts := fakeOptions(t, st)
			opts.Track = copyTrack(t, filepath.Join(root, "first", "quick"))
			cfg := smallConfig()
			cfg.Budget.MaxIterations = 1
			e, _ := runEngine(t, opts, cfg)
			run, err := st.Run(ctx, e.RunName())
			if err != nil {
				t.Fatal(err)
			}
			if legacy {
				// What runs started before the change stored.
				b, _ := json.Marshal(opts.Track)
				h := sha256.Sum256(b)
				run.TrackHash = hex.EncodeToString(h[:])
				db, err := sql.Open("sqlite", st.Location())
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.ExecContext(ctx, `UPDATE runs SET track_hash = $1 WHERE id = $2`, run.TrackHash, run.ID); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(filepath.Join(root, "first")); err != nil {
				t.Fatal(err)
			}
			opts.Track = copyTrack(t, filepath.Join(root, "second", "quick"))
			r, err := Resume(ctx, opts, run, Overrides{Budget: BudgetConfig{MaxIterations: 2}})
			if err != nil {
				t.Fatalf("resume after the track folder moved: %v", err)
			}
			sum, err := r.Run(ctx)
			if err != nil || sum.Status.Iteration != 2 {
				t.Fatalf("resumed run: %v, %+v", err, sum)
			}
			again, _ := st.Run(ctx, e.RunName())
			if want := filepath.Join(root, "second", "quick"); again.TrackDir != want {
				t.Errorf("track dir %q, want %q", again.TrackDir, want)
			}
		})
	}
}

// A changed spec is still refused.
func TestResumeRefusesChangedTrack(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "")
	root := t.TempDir()
	opts := fakeOptions(t, st)
	opts.Track = copyTrack(t, filepath.Join(root, "quick"))
	cfg := smallConfig()
	cfg.Budget.MaxIterations = 1
	e, _ := runEngine(t, opts, cfg)
	run, _ := st.Run(ctx, e.RunName())
	opts.Track.TargetValLoss += 0.01
	if _, err := Resume(ctx, opts, run, Overrides{}); err == nil {
		t.Fatal("a run resumed on a changed spec")
	}
}
