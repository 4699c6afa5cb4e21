package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// An evaluation's owner is the process that runs it, written
// "host/boot/pid/start": the host's name, the kernel's boot id, the
// process id and the process's start time (both since boot; "" where the
// system does not say). A pid alone is reused; with the boot and the
// start time, a row names exactly one process that ever lived.

// processOwner is this process's owner string.
func processOwner() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return strings.Join([]string{host, bootID(), strconv.Itoa(pid), processStart(pid)}, "/")
}

// ownerGone says whether the process that owner names has ended. It is
// sure only on this host: a row of another machine, or of before owners
// were recorded, is never taken for gone.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 4 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host || host == "" {
		return false
	}
	if boot := bootID(); boot != "" && parts[1] != "" && parts[1] != boot {
		return true // the machine has restarted since
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return false
	}
	if !processAlive(pid) {
		return true
	}
	// Alive, but the same process only if it started when the owner did.
	start := processStart(pid)
	return parts[3] != "" && start != "" && start != parts[3]
}

// InterruptOrphans marks as interrupted every evaluation that a process of
// this machine left running when it ended (a kill -9, a crash, a failure
// before the outcome was recorded), and returns them as they were, for the
// caller to clean up after them (their run folders) and say so. Rows that a
// live process runs, rows of other machines and rows from before owners
// were recorded are left alone.
func (s *Store) InterruptOrphans(ctx context.Context) ([]*Evaluation, error) {
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
		if ownerGone(e.Owner) {
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
		if parts := strings.Split(e.Owner, "/"); len(parts) == 4 {
			pid = "its process (pid " + parts[2] + ")"
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
