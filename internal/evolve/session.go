package evolve

import (
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/store"
)

// session is how the engine's one Run call stands: whether it is stopping
// and the first reason it was given, the error that stopped it, the drain
// requests other goroutines send, and the run's active time (this
// session's and the sessions' before it).
type session struct {
	log      *slog.Logger
	drains   *search.Drain
	ran      bool
	stopping bool
	reason   string
	detail   string
	fatal    error
	started  time.Time
	// before is the active time of the sessions before this one.
	before time.Duration
}

func newSession(log *slog.Logger) *session {
	return &session{log: log, drains: search.NewDrain()}
}

// begin starts the session of a run that was active for activeMs before.
func (s *session) begin(activeMs int64) error {
	if s.ran {
		return errors.New("evolve: Run called twice")
	}
	s.ran, s.started, s.before = true, time.Now(), time.Duration(activeMs)*time.Millisecond
	return nil
}

// drain asks the session to stop taking new work; safe from any goroutine.
func (s *session) drain(reason string) { s.drains.Request(reason) }

// drainRequested is closed once a drain is requested; drained then
// stops the session for the drain's reason.
func (s *session) drainRequested() <-chan struct{} { return s.drains.Requested() }

func (s *session) drained() { s.stop(StopInterrupted, s.drains.Reason()) }

// stopped says whether the session is stopping: no new work starts.
func (s *session) stopped() bool { return s.stopping }

// hasReason says whether something gave the session a reason to stop.
func (s *session) hasReason() bool { return s.reason != "" }

// err is the error that stopped the session, nil when none did.
func (s *session) err() error { return s.fatal }

// report shows how the session stands in the status.
func (s *session) report(st *Status) {
	st.Elapsed, st.Draining, st.StopReason = s.elapsed(), s.stopping, s.reason
}

// stop ends the run cleanly: no new work starts; what runs finishes. The
// first reason given is the one recorded.
func (s *session) stop(reason, detail string) {
	if s.reason == "" {
		s.reason, s.detail = reason, detail
		s.log.Info("evolve: stopping", "reason", reason, "detail", detail)
	}
	s.stopping = true
}

// abort records a cancellation. It outranks a drain already under way
// (Ctrl-C twice): running evaluations were killed, not finished, and the
// record must say so.
func (s *session) abort() {
	if s.reason == StopInterrupted {
		s.reason = ""
	}
	s.stop(StopAborted, "canceled: running evaluations were stopped and their children will be evaluated again on resume")
}

// fail stops the run on an error the engine cannot work around.
func (s *session) fail(err error) {
	if s.fatal == nil {
		s.fatal = err
		s.log.Error("evolve: cannot continue", "err", err)
	}
	reason := StopError
	if diskFull(err) {
		reason = StopDiskFull // the user's to fix, and the run resumes after
	}
	s.stop(reason, err.Error())
}

// diskFull reports whether err comes from a full disk (or quota).
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, store.ErrDiskFull)
}

// end settles why the session ends when nothing stopped it on the way:
// the reason given, else this one.
func (s *session) end(reason, detail string) (string, string) {
	if s.reason == "" {
		s.reason, s.detail = reason, detail
	}
	return s.reason, s.detail
}

// elapsed is the run's active time, all sessions.
func (s *session) elapsed() time.Duration { return s.before + time.Since(s.started) }
