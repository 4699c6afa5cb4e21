package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The targets, measured (docs/dashboard.md, Measurements):
//
//	go test -run '^$' -bench . -benchtime 20x ./internal/dashboard
//
// BenchmarkRunPage loads a run's page and its members' first page for a
// run of 10,000 programs (the first load reads the run; the others are
// served from memory), and reports the server's heap once the run is
// held. BenchmarkEvents counts the member events a watcher receives per
// second while a search writes as fast as the store takes it.

func BenchmarkRunPage(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("programs=%d", n), func(b *testing.B) {
			wd := newWorld(b, "", n)
			c := wd.ts.Client()
			page := fmt.Sprintf("%s/runs/%d", wd.ts.URL, wd.fix.Run.ID)
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			if code, body, _ := get(b, c, page); code != http.StatusOK {
				b.Fatalf("%d: %.300s", code, body)
			}
			first := time.Since(start)
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			var bytes int
			for b.Loop() {
				_, body, _ := get(b, c, page)
				bytes = len(body)
				if _, body, _ := get(b, c, page+"?page=100&sort=time"); !strings.Contains(body, "member-rows") {
					b.Fatal("no members table")
				}
			}
			// Reported after the loop: the timer's reset deletes metrics.
			b.ReportMetric(float64(bytes)/1024, "page-KiB")
			b.ReportMetric(float64(first.Milliseconds()), "first-load-ms")
			b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MB")
			b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "run-heap-MB")
		})
	}
}

func BenchmarkEvents(b *testing.B) {
	wd := newWorld(b, "", 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/events?run=%d", wd.ts.URL, wd.fix.Run.ID), nil)
	resp, err := wd.ts.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan struct{}, 1<<16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if sc.Text() == "event: member" {
				got <- struct{}{}
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	start := time.Now()
	it := wd.fix.Run.Iterations
	for i := 0; b.Loop(); i++ {
		// A proposal writes a child twice (queued, then with its program);
		// a watcher polling every 50 ms sees one change or two.
		if _, err := wd.fix.Propose(context.Background(), wd.w, it, fmt.Sprintf("child %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	wrote := b.N
	deadline := time.After(10 * time.Second)
	received := 0
	for received < wrote {
		select {
		case <-got:
			received++
		case <-deadline:
			b.Fatalf("received %d member events of %d children written", received, wrote)
		}
	}
	el := time.Since(start)
	b.ReportMetric(float64(received)/el.Seconds(), "events/s")
}
