package data

import (
	"context"
	"sync"
	"time"
)

// Progress is a snapshot of a long download or preparation, for display.
type Progress struct {
	// Op is "fetch" or "prepare".
	Op string
	// Done and Total count bytes: downloaded and to download (fetch), or
	// input bytes read and the inputs' total size (prepare; compressed
	// bytes for .gz inputs). Total is 0 when unknown.
	Done, Total int64
	// Rate is bytes per second over the last few seconds.
	Rate float64
	// ETA is the time left at Rate, 0 when unknown.
	ETA time.Duration
	// Files and FilesDone count the files of the operation.
	Files, FilesDone int
	// Tokens is the number of tokens written so far (prepare).
	Tokens int64
	// Elapsed is the time since the operation started.
	Elapsed time.Duration
	// Final marks the last report, sent once when the operation ends.
	Final bool
}

// rateWindow is how far back the rate looks: long enough to smooth
// bursts, short enough to follow a change of speed.
const rateWindow = 10 * time.Second

// meter turns byte counts sampled over time into a rate.
type meter struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	t time.Time
	n int64
}

// add records the count n at time t and returns the rate over the window.
func (m *meter) add(t time.Time, n int64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, sample{t, n})
	cut := 0
	for cut < len(m.samples)-2 && t.Sub(m.samples[cut+1].t) >= rateWindow {
		cut++
	}
	m.samples = m.samples[cut:]
	first := m.samples[0]
	dt := t.Sub(first.t).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(n-first.n) / dt
}

// eta is the time to do total-done bytes at rate, 0 when unknown.
func eta(done, total int64, rate float64) time.Duration {
	if total <= 0 || rate <= 0 || done >= total {
		return 0
	}
	return time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
}

// reportProgress calls fn every interval with snap's progress, its rate
// and ETA filled in, until ctx ends; it then returns without a final
// report (the caller sends that). snap also returns the bytes moved by
// this run, which the rate is computed from (Done may include bytes that
// were already there, like a partial download). fn must not block long.
func reportProgress(ctx context.Context, every time.Duration, fn func(Progress), snap func() (Progress, int64)) {
	if fn == nil {
		return
	}
	if every <= 0 {
		every = time.Second
	}
	var m meter
	start := time.Now()
	m.add(start, 0)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p, moved := snap()
			p.Rate = m.add(now, moved)
			p.ETA = eta(p.Done, p.Total, p.Rate)
			p.Elapsed = now.Sub(start)
			fn(p)
		}
	}
}
