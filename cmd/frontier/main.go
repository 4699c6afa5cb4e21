// Command frontier runs candidate LLM-pretraining programs on standardized
// tracks, verifies and times them, and hosts an LLM-driven evolutionary
// search for faster training programs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C (or SIGTERM) cancels the command's context: the
	// command stops what it does and says so. From then on the next one
	// takes its default action and ends the process, whatever the command
	// still waits for: no wait outlives two signals. A search and a bench
	// run catch the signals themselves (a drain, then an abort), and keep
	// doing so; training processes die with frontier (Pdeathsig).
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
