package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Owner is a process, as the evaluations it runs and the runs it claims
// record it: the host's name, the kernel's boot id, the process id and the
// process's start time (in clock ticks since boot; "" where the system does
// not say). A pid alone is reused; with the boot and the start time, an
// owner names exactly one process that ever lived.
type Owner struct {
	Host  string
	Boot  string
	PID   int
	Start string
}

// Self is this process.
func Self() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return Owner{Host: host, Boot: bootID(), PID: pid, Start: processStart(pid)}
}

// String writes the owner as rows record it: "host/boot/pid/start".
func (o Owner) String() string {
	return strings.Join([]string{o.Host, o.Boot, strconv.Itoa(o.PID), o.Start}, "/")
}

// ParseOwner reads an owner that String wrote.
func ParseOwner(s string) (Owner, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return Owner{}, false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil {
		return Owner{}, false
	}
	return Owner{Host: parts[0], Boot: parts[1], PID: pid, Start: parts[3]}, true
}

// Gone says whether the process has ended. It is sure only on this host:
// a process of another machine is never taken for gone.
func (o Owner) Gone() bool {
	host, _ := os.Hostname()
	if o.Host != host || host == "" {
		return false
	}
	if boot := bootID(); boot != "" && o.Boot != "" && o.Boot != boot {
		return true // the machine has restarted since
	}
	if o.PID <= 0 {
		return false
	}
	if !processAlive(o.PID) {
		return true
	}
	// Alive, but the same process only if it started when the owner did.
	start := processStart(o.PID)
	return o.Start != "" && start != "" && start != o.Start
}

// ErrHeld is the error (within a *HeldError) of a run that a live process
// runs.
var ErrHeld = errors.New("the run is held by another process")

// HeldError says who runs a run that ClaimRun could not take.
type HeldError struct {
	Run   string
	Owner Owner
	// Until is when the owner's claim lapses unless it renews it.
	Until time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("run %s is being run by process %d on host %s, which renews its claim while it runs: stop that process (Ctrl-C there) before resuming here; if it is gone, its claim lapses at %s and the run can then be resumed",
		e.Run, e.Owner.PID, e.Owner.Host, e.Until.Format("2006-01-02 15:04:05"))
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// ClaimRun takes run runID for this store's owner (see RunStore). The
// database's clock times the lease, so that machines whose clocks differ
// agree on when it lapses.
func (s *sqlStore) ClaimRun(ctx context.Context, runID int64, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("claim run %d: a lease of %s", runID, lease)
	}
	self := s.owner.String()
	for attempt := 0; ; attempt++ {
		var name, holder string
		var until, now int64
		err := s.db.QueryRowContext(ctx, `SELECT name, owner, lease_until, `+s.dialect.nowMs+` FROM runs WHERE id = $1`, runID).
			Scan(&name, &holder, &until, &now)
		if notFound(err) {
			return fmt.Errorf("claim run %d: %w", runID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("claim run %d: %w", runID, s.explain(err))
		}
		// Whether the holder's process has ended is known only here, so
		// the update takes the run only from the holder seen, with the
		// lease seen: whoever changed either meanwhile wins.
		prev, parsed := ParseOwner(holder)
		free := holder == "" || holder == self || until < now || (parsed && prev.Gone())
		if !free {
			return fmt.Errorf("claim run %d: %w", runID, &HeldError{Run: name, Owner: prev, Until: time.UnixMilli(until)})
		}
		var n int64
		err = s.write(ctx, func() error {
			res, err := s.db.ExecContext(ctx, `UPDATE runs SET owner = $1, lease_until = `+s.dialect.nowMs+` + $2
				WHERE id = $3 AND owner = $4 AND lease_until = $5`,
				self, lease.Milliseconds(), runID, holder, until)
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("claim run %d: %w", runID, err)
		}
		if n == 1 {
			return nil
		}
		if attempt >= 3 {
			return fmt.Errorf("claim run %d: other processes keep changing its owner", runID)
		}
	}
}

// ReleaseRun ends this owner's claim of a run.
func (s *sqlStore) ReleaseRun(ctx context.Context, runID int64) error {
	err := s.write(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `UPDATE runs SET owner = '', lease_until = 0 WHERE id = $1 AND owner = $2`, runID, s.owner.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("release run %d: %w", runID, err)
	}
	return nil
}

// Lease is how long a claim of a run lasts unless it is renewed:
// KeepRun renews it every quarter of it, so a process must miss three
// renewals (a stalled machine, a lost network) before another may take
// the run over; and a run whose process died elsewhere waits this long.
const Lease = 2 * time.Minute

// Claimer claims runs (a RunStore is one).
type Claimer interface {
	ClaimRun(ctx context.Context, runID int64, lease time.Duration) error
	ReleaseRun(ctx context.Context, runID int64) error
}

// KeepRun claims run runID for lease (Lease, but for tests) and renews
// the claim every quarter of it until release is called, which gives it
// up. When a renewal finds the run taken by
// another process (this one stalled past its lease), it calls lost, once,
// and stops: the caller must stop writing the run. A renewal that fails
// otherwise (the database unreachable for a moment) is tried again at the
// next tick.
func KeepRun(ctx context.Context, c Claimer, runID int64, lease time.Duration, lost func(error)) (release func(), err error) {
	if err := c.ClaimRun(ctx, runID, lease); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := c.ClaimRun(ctx, runID, lease); errors.Is(err, ErrHeld) {
				if lost != nil {
					lost(err)
				}
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		c.ReleaseRun(rctx, runID)
	}, nil
}

// InterruptOrphans marks as interrupted every evaluation that a process of
// this machine left running when it ended (a kill -9, a crash, a failure
// before the outcome was recorded), and returns them as they were, for the
// caller to clean up after them (their run folders) and say so. Rows that a
// live process runs, rows of other machines and rows from before owners
// were recorded are left alone.
func (s *sqlStore) InterruptOrphans(ctx context.Context) ([]*Evaluation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+evalColumns+` FROM evaluations WHERE state = $1 AND owner <> '' ORDER BY id`, StateRunning)
	if err != nil {
		return nil, s.explain(fmt.Errorf("find running evaluations: %w", err))
	}
	var orphans []*Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("find running evaluations: %w", err)
		}
		if o, ok := ParseOwner(e.Owner); ok && o.Gone() {
			orphans = append(orphans, e)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find running evaluations: %w", err)
	}
	now := time.Now().UnixMilli()
	for _, e := range orphans {
		pid := "its process"
		if o, ok := ParseOwner(e.Owner); ok {
			pid = "its process (pid " + strconv.Itoa(o.PID) + ")"
		}
		reason := "interrupted: " + pid + " ended before it recorded an outcome (killed, or a failure); found by a later evaluation"
		err := s.write(ctx, func() error {
			// The state is checked again: only a row still running is
			// taken over.
			_, err := s.db.ExecContext(ctx, `UPDATE evaluations SET state = $1, reason = $2, finished_at = $3
				WHERE id = $4 AND state = $5 AND owner = $6`, StateInterrupted, reason, now, e.ID, StateRunning, e.Owner)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("mark evaluation %d interrupted: %w", e.ID, err)
		}
	}
	return orphans, nil
}
