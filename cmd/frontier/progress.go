package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/frontier-bench/frontier/internal/evolve"
)

// The progress display of a search: a live status line redrawn in place
// on a terminal, with log lines above it; elsewhere a log line when the
// counts change.

// logLevel returns the level of the --log-level flag.
func logLevel(g *globals) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(g.logLevel)); err != nil {
		return slog.LevelInfo
	}
	return l
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveWriter owns a terminal: one status line redrawn in place, with log
// lines printed above it.
type liveWriter struct {
	mu     sync.Mutex
	w      io.Writer
	status string
}

// Write prints a log line above the status line.
func (l *liveWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprint(l.w, "\r\x1b[K")
	n, err := l.w.Write(p)
	if l.status != "" {
		fmt.Fprint(l.w, l.status)
	}
	return n, err
}

func (l *liveWriter) set(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status = s
	fmt.Fprint(l.w, "\r\x1b[K"+s)
}

func (l *liveWriter) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status != "" {
		fmt.Fprintln(l.w)
		l.status = ""
	}
}

// lineStart returns a writer for a message line: it clears the live status
// line first when there is one.
func lineStart(w io.Writer, lw *liveWriter) io.Writer {
	if lw != nil {
		return lw
	}
	return w
}

// evolveProgress shows the engine's status: a live line on a terminal,
// else a log line when the counts change (at most every `every`).
type evolveProgress struct {
	mu       sync.Mutex
	live     *liveWriter
	log      *slog.Logger
	quiet    bool
	every    time.Duration
	last     time.Time
	lastLine string
	lastKey  string
	extra    func(evolve.Status)
}

func (p *evolveProgress) show(s evolve.Status) {
	if p.extra != nil {
		p.extra(s)
	}
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := statusLine(s)
	if p.live != nil {
		if line != p.lastLine || time.Since(p.last) > time.Second {
			p.live.set(line)
			p.lastLine, p.last = line, time.Now()
		}
		return
	}
	key := fmt.Sprintf("%d/%d/%d/%d/%d/%d", s.Iteration, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates, s.Evaluations)
	if key == p.lastKey && time.Since(p.last) < 5*p.every {
		return
	}
	if time.Since(p.last) < p.every && s.StopReason == "" {
		return
	}
	p.last, p.lastKey = time.Now(), key
	attrs := []any{"run", s.RunName, "iteration", iterText(s), "slots", fmt.Sprintf("%d/%d", s.SlotsBusy, s.Slots),
		"proposing", s.ProposalsInFlight, "queued", s.Queued, "acceptable", s.Acceptable, "loss_too_high", s.LossTooHigh,
		"buggy", s.Buggy, "duplicates", s.Duplicates}
	if s.BestTimeMs > 0 {
		attrs = append(attrs, "best_time", secsText(s.BestTimeMs), "reference_time", secsText(s.ReferenceTimeMs))
	}
	if s.BestLoss > 0 {
		attrs = append(attrs, "best_loss", fmt.Sprintf("%.4f", s.BestLoss))
	}
	attrs = append(attrs, "usd", fmt.Sprintf("%.4f", s.USD), "elapsed", s.Elapsed.Round(time.Second).String())
	p.log.Info("evolve: progress", attrs...)
}

func iterText(s evolve.Status) string {
	if s.MaxIterations > 0 {
		return fmt.Sprintf("%d/%d", s.Iteration, s.MaxIterations)
	}
	return fmt.Sprint(s.Iteration)
}

func secsText(ms float64) string { return fmt.Sprintf("%.2fs", ms/1000) }

// statusLine is the live line: iteration, slots, proposals, counts, the
// record against the reference, the best loss and the spend.
func statusLine(s evolve.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  it %s  slots %d/%d  llm %d  queue %d  |  acc %d  high %d  bug %d  dup %d",
		s.RunName, iterText(s), s.SlotsBusy, s.Slots, s.ProposalsInFlight, s.Queued, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates)
	if s.BestTimeMs > 0 {
		fmt.Fprintf(&b, "  |  best %s", secsText(s.BestTimeMs))
		if s.ReferenceTimeMs > 0 {
			fmt.Fprintf(&b, " (ref %s, %+.1f%%)", secsText(s.ReferenceTimeMs), 100*(s.BestTimeMs-s.ReferenceTimeMs)/s.ReferenceTimeMs)
		}
	}
	if s.BestLoss > 0 {
		fmt.Fprintf(&b, "  loss %.4f", s.BestLoss)
	}
	fmt.Fprintf(&b, "  |  $%.2f  %s", s.USD, s.Elapsed.Round(time.Second))
	if s.Draining {
		b.WriteString("  [draining]")
	}
	return b.String()
}
