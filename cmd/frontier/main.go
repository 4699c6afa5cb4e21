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
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
