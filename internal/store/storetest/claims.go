package storetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// Claims checks who may run a run: a run that a live process runs, here
// or on another machine, is refused to another, with the owner's host and
// pid; the owner renews its claim; a claim that lapsed, or whose process
// of this machine has ended, is taken over; a released run is free; and
// of two processes that claim a free run at once, one gets it. openAs
// opens the store at location as an owner (store.OpenAs).
func Claims(t *testing.T, location string, openAs func(ctx context.Context, location string, owner store.Owner) (store.Store, error)) {
	ctx := context.Background()
	open := func(o store.Owner) store.Store {
		t.Helper()
		s, err := openAs(ctx, location, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	me := open(store.Self())
	elsewhere := store.Owner{Host: "elsewhere.example", Boot: "b0", PID: 4242, Start: "77"}
	other := open(elsewhere)
	r := &store.Run{Name: "claimed", Track: "tiny", TrackHash: "th"}
	must(t, me.CreateRun(ctx, r))

	// Nobody runs it: the first claim takes it.
	must(t, other.ClaimRun(ctx, r.ID, time.Hour))
	got, err := me.Run(ctx, "claimed")
	if err != nil || got.Owner != elsewhere.String() || time.Until(got.LeaseUntil) < 50*time.Minute {
		t.Fatalf("a claimed run reads back with owner %q until %v (%v); want %q for an hour", got.Owner, got.LeaseUntil, err, elsewhere)
	}
	// Alive on another machine: refused, naming the owner.
	err = me.ClaimRun(ctx, r.ID, time.Minute)
	var held *store.HeldError
	if !errors.As(err, &held) || !errors.Is(err, store.ErrHeld) || held.Owner != elsewhere ||
		!strings.Contains(err.Error(), "elsewhere.example") || !strings.Contains(err.Error(), "4242") {
		t.Fatalf("claiming a run that a live process elsewhere runs: %v; want a HeldError naming its host and pid", err)
	}
	// The owner renews; another's release leaves it alone; its own frees it.
	must(t, other.ClaimRun(ctx, r.ID, time.Hour))
	must(t, me.ReleaseRun(ctx, r.ID))
	if err := me.ClaimRun(ctx, r.ID, time.Minute); !errors.Is(err, store.ErrHeld) {
		t.Fatalf("a release by a process that does not own the run freed it: %v", err)
	}
	must(t, other.ReleaseRun(ctx, r.ID))
	must(t, me.ClaimRun(ctx, r.ID, time.Minute))
	must(t, me.ReleaseRun(ctx, r.ID))

	// A claim that lapsed (its process stalled or died elsewhere) is
	// taken over.
	must(t, other.ClaimRun(ctx, r.ID, 50*time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	if err := me.ClaimRun(ctx, r.ID, time.Minute); err != nil {
		t.Fatalf("a lapsed claim was not taken over: %v", err)
	}
	if err := other.ClaimRun(ctx, r.ID, time.Minute); !errors.Is(err, store.ErrHeld) {
		t.Fatalf("the process whose claim lapsed took the run back: %v", err)
	}
	must(t, me.ReleaseRun(ctx, r.ID))

	// A process of this machine that has ended: taken over at once,
	// however long its lease.
	self := store.Self()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a short-lived process: %v\n%s", err, out)
	}
	dead := open(store.Owner{Host: self.Host, Boot: self.Boot, PID: cmd.Process.Pid, Start: "1"})
	must(t, dead.ClaimRun(ctx, r.ID, time.Hour))
	if err := me.ClaimRun(ctx, r.ID, time.Minute); err != nil {
		t.Fatalf("the run of a process of this machine that has ended was not taken over: %v", err)
	}
	must(t, me.ReleaseRun(ctx, r.ID))

	// Two processes claim a free run at once: one gets it.
	for round := range 10 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []store.Store{me, other} {
			wg.Go(func() { errs[i] = s.ClaimRun(ctx, r.ID, time.Hour) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrHeld):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of two simultaneous claims won (%v), want one", round, won, errs)
		}
		must(t, me.ReleaseRun(ctx, r.ID))
		must(t, other.ReleaseRun(ctx, r.ID))
	}
	if err := me.ClaimRun(ctx, r.ID+100, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("claiming a run that does not exist: %v, want ErrNotFound", err)
	}
}
