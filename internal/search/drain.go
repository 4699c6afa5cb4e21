package search

import "sync"

// Drain is a request to stop taking new work while what runs finishes
// (Ctrl-C once). Any goroutine may make it; the search's own loop reads
// it. The first reason given stands: a second request, made while the
// first is under way, says nothing new.
type Drain struct {
	once   sync.Once
	done   chan struct{}
	reason string // written once, before done is closed
}

// NewDrain returns a drain that nobody has requested yet.
func NewDrain() *Drain { return &Drain{done: make(chan struct{})} }

// Request asks the search to drain, for reason. Safe from any goroutine.
func (d *Drain) Request(reason string) {
	d.once.Do(func() {
		d.reason = reason
		close(d.done)
	})
}

// Requested is closed once a drain is requested.
func (d *Drain) Requested() <-chan struct{} { return d.done }

// Reason is the first request's reason; "" while none was made.
func (d *Drain) Reason() string {
	select {
	case <-d.done:
		return d.reason
	default:
		return ""
	}
}
