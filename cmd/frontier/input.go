package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/frontier-bench/frontier/internal/bounded"
	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
)

// Inputs a user names on the command line (a program, a baseline, a
// model's answer, a record): each read through internal/bounded, so that
// a named pipe, a device or a folder is refused at once, a file over the
// limit before a byte of it is read, and stdin after at most one byte
// more than the limit, with a signal ending the wait.

// readInput reads path ("-": stdin) as what, a few words that say what it
// is ("program", "the answer"), under limit bytes. Every refusal is a
// usage error that names what and where; a read canceled by a signal
// stays a cancellation (exit 130).
func readInput(ctx context.Context, g *globals, path, what string, limit int64) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		stdin := g.stdin
		if stdin == nil {
			stdin = os.Stdin
		}
		g.log.Debug("reading from stdin", "what", what, "limit_bytes", limit)
		b, err = bounded.ReadInput(ctx, stdin, "stdin", limit)
	} else {
		b, err = bounded.ReadFile(path, limit)
	}
	var (
		tooLarge   *bounded.TooLargeError
		notRegular *bounded.NotRegularError
	)
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		return nil, err
	case errors.As(err, &tooLarge):
		return nil, usage(fmt.Errorf("%s: %w (max_program_size in frontier.yaml sets the limit)", what, err))
	case errors.As(err, &notRegular) && path != "-" && (what == "program" || what == "answer"):
		return nil, usage(fmt.Errorf("%s: %w: name a file, or give - and send it on stdin", what, err))
	case errors.As(err, &notRegular):
		return nil, usage(fmt.Errorf("%s: %w: name a file", what, err))
	case errors.Is(err, fs.ErrNotExist):
		return nil, usage(fmt.Errorf("%s %s does not exist", what, path))
	}
	return nil, usage(fmt.Errorf("%s: %w", what, err))
}

// readProgram reads a Python program the user names (a file, or "-" for
// stdin) under the configured limit, and refuses one that is not a
// Python program at all (binary, empty, not .py) before anything slower,
// like the Python probe, runs. It returns the source and the name it is
// shown under.
func readProgram(ctx context.Context, g *globals, cfg *config.Config, path, what string) ([]byte, string, error) {
	src, err := readInput(ctx, g, path, what, int64(cfg.MaxProgramSize))
	if err != nil {
		return nil, "", err
	}
	name := path
	if path == "-" {
		name = "stdin.py"
	}
	if err := eval.CheckProgram(src, name); err != nil {
		if what != "program" {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return nil, "", usage(err)
	}
	return src, name, nil
}
