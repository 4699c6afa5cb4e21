package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/frontier-bench/frontier/internal/evolve"
)

// A search's signals: Ctrl-C once drains, twice aborts.

// drainOnSignals runs a session's signal state machine: the first Ctrl-C
// (or SIGTERM) drains the engine, the second aborts it by canceling the
// context it returns. main's context is canceled on the first signal too;
// that drains as well. sigs replaces the process's signals when set
// (tests); messages go to w. Call stop when the session ends.
func drainOnSignals(ctx context.Context, sigs <-chan os.Signal, e *evolve.Engine, w io.Writer) (runCtx context.Context, stop func()) {
	runCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	var unnotify func()
	if sigs == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		unnotify = func() { signal.Stop(ch) }
		sigs = ch
	}
	done := make(chan struct{})
	go func() {
		n := 0
		parent := ctx.Done()
		for {
			select {
			case <-done:
				return
			case <-parent:
				// Not counted: the same Ctrl-C also arrives on sigs.
				parent = nil
				e.Drain("Ctrl-C: no new work started; running evaluations finished")
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintln(w, "frontier: draining: no new work starts; running evaluations finish. Press Ctrl-C again to abort.")
					e.Drain("Ctrl-C: no new work started; running evaluations finished")
				} else {
					fmt.Fprintln(w, "frontier: aborting: stopping every training process; the run can be resumed.")
					abort()
				}
			}
		}
	}()
	return runCtx, func() {
		close(done)
		if unnotify != nil {
			unnotify()
		}
		abort()
	}
}
