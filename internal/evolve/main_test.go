package evolve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/frontier-bench/frontier/internal/data/datatest"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// shared holds what the package's tests share: the tiny data (generated
// once).
var shared struct {
	dataDir string
}

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	dir, err := os.MkdirTemp("", "evolvetest-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared.dataDir = dir
	// The tests expect the quick track's programs to reach its target, and
	// some children to miss it: true of this corpus on every machine.
	if err := datatest.PinTiny(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// quickTrack loads the test track in testdata/quick: the tiny data and a
// bigram reference that trains in about a second.
func quickTrack(t testing.TB) *track.Spec {
	t.Helper()
	spec, err := track.NewRegistry(tracks.FS, "testdata").Get("quick")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// realEvaluator returns an evaluator over st that runs programs under the
// real harness, or skips the test when no Python with PyTorch exists.
func realEvaluator(t testing.TB, st store.Store) *eval.Evaluator {
	t.Helper()
	return evaltest.New(t, evaltest.Options{Store: st, Data: map[string]string{"quick": shared.dataDir}})
}

func openStore(t testing.TB, path string) store.Store { return storetest.SQLite(t, path) }

// testLog writes the engine's log to the test's log.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
