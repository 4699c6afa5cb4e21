// Package datatest gives tests the same tiny corpus on every machine.
//
// An installation draws its tiny corpus from a random secret, and the
// corpus sets how low a program's loss goes: the eval tests' bigram,
// trained for 100 steps, ended at 4.17 to 4.41 in a plain-PyTorch replay
// of its training on sixteen secrets, and under the judge at 4.50 on the
// corpus a test machine drew, against a target of 4.45. A
// test that sets a target for its program then holds on one machine and
// fails on the next. Tests whose programs must reach (or miss) a target
// draw their corpus from Secret instead: the same bytes everywhere.
package datatest

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/frontier-bench/frontier/internal/data"
)

// Secret is the secret of the tests' tiny corpus (the eval tests' bigram
// ends at 4.23 to 4.26 on it). It is public, so the corpus is nobody's
// secret: never an installation's.
var Secret = data.TinySecret{'f', 'r', 'o', 'n', 't', 'i', 'e', 'r'}

// PinTiny builds the corpus of Secret in dir (created if needed), so that
// an evaluation that later finds dir uses it rather than drawing one.
func PinTiny(ctx context.Context, dir string) error {
	s := Secret
	if _, err := data.EnsureTiny(ctx, dir, data.TinyOptions{Secret: &s}); err != nil {
		return fmt.Errorf("build the tests' tiny corpus in %s: %w", dir, err)
	}
	return nil
}

// PinTinyTracks pins the corpus of each named track in root, a data_dir
// that holds one folder per track.
func PinTinyTracks(ctx context.Context, root string, tracks ...string) error {
	for _, name := range tracks {
		if err := PinTiny(ctx, filepath.Join(root, name)); err != nil {
			return err
		}
	}
	return nil
}
