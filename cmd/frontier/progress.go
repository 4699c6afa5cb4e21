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
	"github.com/frontier-bench/frontier/internal/runs"
)

// The progress display of a search: a live status line redrawn in place
// on a terminal, with log lines above it; elsewhere a log line when the
// counts change.

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
// else a log line when the counts change (at most every `every`). The
// evaluator's progress lines (evalLine) name the step the running
// evaluation is at.
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
	status   evolve.Status
	// step is what the evaluator last said of the running evaluation
	// ("step 120", "pair 2 of 5: program"); running the evaluations it is
	// about, so that it is dropped when they change.
	step    string
	running string
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
	p.status = s
	if key := runningKey(s); key != p.running {
		p.running, p.step = key, ""
	}
	line := statusLine(s, p.step)
	if p.live != nil {
		if line != p.lastLine || time.Since(p.last) > time.Second {
			p.live.set(line)
			p.lastLine, p.last = line, time.Now()
		}
		return
	}
	key := fmt.Sprintf("%d/%d/%d/%d/%d/%d/%d", s.Iteration, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates, s.Evaluations, s.BestTimeID)
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
		attrs = append(attrs, "record", fmt.Sprintf("#%d", s.BestTimeID), "record_time", secsText(s.BestTimeMs),
			"evidence", s.RecordBrief, "reference_time", secsText(s.ReferenceTimeMs))
	}
	if s.FastestID != 0 {
		attrs = append(attrs, "candidate", fmt.Sprintf("#%d", s.FastestID), "candidate_time", secsText(s.FastestMs), "claim", s.FastestClaim)
	}
	if s.BestLoss > 0 {
		attrs = append(attrs, "best_loss", fmt.Sprintf("%.4f", s.BestLoss))
	}
	if r := runningText(s, p.step); r != "" {
		attrs = append(attrs, "evaluating", r)
	}
	attrs = append(attrs, "usd", fmt.Sprintf("%.4f", s.USD), "elapsed", s.Elapsed.Round(time.Second).String())
	p.log.Info("evolve: progress", attrs...)
}

// evalLine takes a progress line of the evaluator: the step a run is at,
// or the pair of a series; the live line shows it next to what runs.
func (p *evolveProgress) evalLine(line string) {
	step := stepOf(line)
	if step == "" || p.quiet {
		return
	}
	p.mu.Lock()
	p.step = step
	s := p.status
	live := p.live
	p.mu.Unlock()
	if live != nil {
		line := statusLine(s, step)
		p.mu.Lock()
		if line != p.lastLine {
			live.set(line)
			p.lastLine, p.last = line, time.Now()
		}
		p.mu.Unlock()
	}
}

// stepOf reads an evaluator's progress line: "step:120 ..." is "step
// 120", "pair 2 of 5: program (seed 3)" is "pair 2/5 program"; other
// lines say nothing about where a run is.
func stepOf(line string) string {
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "step:"); ok {
		n, _, _ := strings.Cut(rest, " ")
		return "step " + n
	}
	var i, n int
	var who string
	if k, _ := fmt.Sscanf(line, "pair %d of %d: %s", &i, &n, &who); k == 3 {
		return fmt.Sprintf("pair %d/%d %s", i, n, who)
	}
	return ""
}

func runningKey(s evolve.Status) string {
	var b strings.Builder
	for _, r := range s.Running {
		fmt.Fprintf(&b, "%d/%s,", r.ChildID, r.Kind)
	}
	return b.String()
}

// runningText names what the slots evaluate: "#14 full step 120", or for
// several, each child and kind (the step is the newest line of any).
func runningText(s evolve.Status, step string) string {
	var parts []string
	for _, r := range s.Running {
		parts = append(parts, fmt.Sprintf("#%d %s", r.ChildID, r.Kind))
	}
	if len(parts) == 0 {
		return ""
	}
	out := strings.Join(parts, ", ")
	if step != "" {
		if len(parts) > 1 {
			out += " (latest " + step + ")"
		} else {
			out += " " + step
		}
	}
	return out
}

func iterText(s evolve.Status) string {
	if s.MaxIterations > 0 {
		return fmt.Sprintf("%d/%d", s.Iteration, s.MaxIterations)
	}
	return fmt.Sprint(s.Iteration)
}

func secsText(ms float64) string { return fmt.Sprintf("%.2fs", ms/1000) }

// statusLine is the live line: iteration, slots, proposals, counts, the
// record against the reference with what it rests on, a faster candidate,
// the best loss, what is being evaluated (at which step) and the spend.
func statusLine(s evolve.Status, step string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  it %s  slots %d/%d  llm %d  queue %d  |  acc %d  high %d  bug %d  dup %d",
		s.RunName, iterText(s), s.SlotsBusy, s.Slots, s.ProposalsInFlight, s.Queued, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates)
	if s.BestTimeMs > 0 {
		if s.BestTimeMs == s.ReferenceTimeMs || s.RecordBrief == "" || s.RecordBrief == "reference" {
			fmt.Fprintf(&b, "  |  record: the reference %s", secsText(s.BestTimeMs))
		} else {
			fmt.Fprintf(&b, "  |  record #%d %s %s (%s)", s.BestTimeID, secsText(s.BestTimeMs),
				runs.FormatSpeedup(s.RecordSpeedup), s.RecordBrief)
		}
	}
	if s.FastestID != 0 {
		fmt.Fprintf(&b, "  cand #%d %s once (%s)", s.FastestID, secsText(s.FastestMs), orDash(s.FastestClaim))
	}
	if s.BestLoss > 0 {
		fmt.Fprintf(&b, "  loss %.4f", s.BestLoss)
	}
	if r := runningText(s, step); r != "" {
		fmt.Fprintf(&b, "  |  eval %s", r)
	}
	fmt.Fprintf(&b, "  |  $%.2f  %s", s.USD, s.Elapsed.Round(time.Second))
	if s.Draining {
		b.WriteString("  [draining]")
	}
	return b.String()
}
