package search

import (
	"sync"
	"testing"
)

// The first request's reason stands, from whichever goroutine made it,
// and the drain reads as requested from then on.
func TestDrainFirstReasonStands(t *testing.T) {
	d := NewDrain()
	if r := d.Reason(); r != "" {
		t.Fatalf("reason before any request = %q, want none", r)
	}
	select {
	case <-d.Requested():
		t.Fatal("requested before any request")
	default:
	}
	d.Request("first")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); d.Request("later") }()
	}
	wg.Wait()
	<-d.Requested()
	if r := d.Reason(); r != "first" {
		t.Fatalf("reason = %q, want the first request's", r)
	}
}
