package main

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/data/datatest"
)

// sharedData is a data folder (frontier.yaml's data_dir) for the tests
// whose programs train on the tiny corpus without testing the corpus: it
// is built once per test binary instead of once per test's home, each
// build about 11 s of CPU. This package's tests run one at a time, so the
// corpus is never built twice at once; TestMain removes the folder.
var sharedData struct {
	once sync.Once
	dir  string
	err  error
}

// sharedDataDir returns the shared data folder, made on first use.
func sharedDataDir(t *testing.T) string {
	t.Helper()
	sharedData.once.Do(func() {
		sharedData.dir, sharedData.err = os.MkdirTemp("", "frontier-test-data-")
		if sharedData.err == nil {
			// The quick tracks' targets hold on this corpus on every machine.
			sharedData.err = datatest.PinTinyTracks(context.Background(), sharedData.dir, "quick", "quick-bench")
		}
	})
	if sharedData.err != nil {
		t.Fatal(sharedData.err)
	}
	return sharedData.dir
}

// removeSharedData removes the shared data folder, if a test made it.
func removeSharedData() {
	if sharedData.dir != "" {
		os.RemoveAll(sharedData.dir)
	}
}
