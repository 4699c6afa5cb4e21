package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// A search's signals, evolve's and bench's alike: Ctrl-C once drains,
// twice aborts.

// drainer is a search that can be asked to drain: *evolve.Engine and
// *bench.Bench are.
type drainer interface{ Drain(reason string) }

// drainWords are what a search says on a signal: the reason it records
// when drained by Ctrl-C (drained) or by the command's context ending
// without one (stopped), and the lines it prints on the first Ctrl-C and
// the second.
type drainWords struct {
	drained, stopped string
	first, second    string
}

var (
	evolveDrainWords = drainWords{
		drained: "Ctrl-C: no new work started; running evaluations finished",
		stopped: "Ctrl-C: no new work started; running evaluations finished",
		first:   "frontier: draining: no new work starts; running evaluations finish. Press Ctrl-C again to abort.",
		second:  "frontier: aborting: stopping every training process; the run can be resumed.",
	}
	benchDrainWords = drainWords{
		drained: "Ctrl-C: the node in progress finished",
		stopped: "stopped: the node in progress finished",
		first:   "frontier: stopping after the node in progress; Ctrl-C again aborts it. The run can be resumed.",
		second:  "frontier: aborting: stopping the training process; the run can be resumed.",
	}
)

// drainOnSignals runs a search's signal state machine: the first Ctrl-C
// (or SIGTERM) drains the search, the second aborts it by canceling the
// context it returns. main's context is canceled on the first signal too;
// that drains as well. sigs replaces the process's signals when set
// (tests); messages go to w. Call stop when the search ends.
func drainOnSignals(ctx context.Context, sigs <-chan os.Signal, s drainer, words drainWords, w io.Writer) (runCtx context.Context, stop func()) {
	runCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	var unnotify func()
	if sigs == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		sigs, unnotify = ch, func() { signal.Stop(ch) }
	}
	done := make(chan struct{})
	go func() {
		parent, n := ctx.Done(), 0
		for {
			select {
			case <-done:
				return
			case <-parent:
				// Not counted: the same Ctrl-C also arrives on sigs.
				parent = nil
				s.Drain(words.stopped)
			case <-sigs:
				if n++; n == 1 {
					fmt.Fprintln(w, words.first)
					s.Drain(words.drained)
					continue
				}
				fmt.Fprintln(w, words.second)
				abort()
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
