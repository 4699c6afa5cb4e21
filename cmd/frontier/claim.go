package main

import (
	"context"
	"errors"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// runClaim is this process's claim of the run it runs (store.KeepRun):
// a second session of a run that a live process runs, here or on another
// machine, is refused; and a session whose claim another process took
// over (it stalled past its lease) stops writing at once.
type runClaim struct {
	lease   time.Duration
	lost    context.Context
	setLost context.CancelCauseFunc
	release func()
}

func newRunClaim() *runClaim {
	lost, setLost := context.WithCancelCause(context.Background())
	return &runClaim{lease: store.Lease, lost: lost, setLost: setLost}
}

// hold claims run id for this process until Release.
func (c *runClaim) hold(ctx context.Context, st store.Claimer, id int64) error {
	release, err := store.KeepRun(ctx, st, id, c.lease, func(err error) { c.setLost(err) })
	if err != nil {
		return err
	}
	c.release = release
	return nil
}

// watch returns ctx, canceled when the claim is lost.
func (c *runClaim) watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.lost, func() { cancel(context.Cause(c.lost)) })
	return ctx, func() { stop(); cancel(nil) }
}

// err is why the claim was lost (another process took the run over);
// nil while it holds, and after Release.
func (c *runClaim) err() error {
	if cause := context.Cause(c.lost); errors.Is(cause, store.ErrHeld) {
		return cause
	}
	return nil
}

// Release gives the run up (for the next session, here or elsewhere).
func (c *runClaim) Release() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
	c.setLost(nil)
}
