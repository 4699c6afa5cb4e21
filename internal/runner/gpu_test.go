package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGPUPoolDisjointUnderContention(t *testing.T) {
	pool, err := NewGPUPool([]int{0, 1, 2, 3, 5})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inUse := map[int]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 50 {
				n := 1 + rng.IntN(pool.Size())
				devs, release, err := pool.Acquire(context.Background(), n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if len(devs) != n {
					t.Errorf("asked for %d devices, got %v", n, devs)
				}
				for _, d := range devs {
					if inUse[d] {
						t.Errorf("device %d handed out twice", d)
					}
					inUse[d] = true
				}
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				mu.Lock()
				for _, d := range devs {
					delete(inUse, d)
				}
				mu.Unlock()
				release()
				// Pause between jobs: without fairness, a worker that
				// re-acquired at once could starve a large request.
				time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("workers still waiting after 20s: deadlock")
	}
}

func TestGPUPoolBlocksUntilRelease(t *testing.T) {
	pool, _ := NewGPUPool([]int{0, 1, 2, 3})
	first, release, err := pool.Acquire(context.Background(), 3)
	if err != nil || !slices.Equal(first, []int{0, 1, 2}) {
		t.Fatalf("first = %v, %v", first, err)
	}
	got := make(chan []int)
	go func() {
		devs, rel, err := pool.Acquire(context.Background(), 2)
		if err != nil {
			t.Error(err)
		}
		defer rel()
		got <- devs
	}()
	select {
	case d := <-got:
		t.Fatalf("got %v while only one device was free", d)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	release() // a second call must not free devices twice
	select {
	case d := <-got:
		if len(d) != 2 {
			t.Errorf("got %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by release")
	}
}

func TestGPUPoolCancel(t *testing.T) {
	pool, _ := NewGPUPool([]int{4})
	_, release, err := pool.Acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = pool.Acquire(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
}

func TestGPUPoolBadRequests(t *testing.T) {
	pool, _ := NewGPUPool([]int{0, 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an immediate error must not depend on the context
	for n, want := range map[int]string{3: "asked for 3 devices but the pool has 2 (0,1)", 0: "want at least 1", -1: "want at least 1"} {
		if _, _, err := pool.Acquire(ctx, n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire(%d) err = %v, want %q", n, err, want)
		}
	}
	if _, err := NewGPUPool([]int{0, 1, 0}); err == nil || !strings.Contains(err.Error(), "device 0 listed twice") {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewGPUPool([]int{-1}); err == nil {
		t.Error("negative device accepted")
	}
	empty, _ := NewGPUPool(nil)
	if _, _, err := empty.Acquire(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "pool has 0") {
		t.Errorf("empty pool: %v", err)
	}
}

func TestParseDevices(t *testing.T) {
	for in, want := range map[string][]int{"": nil, " ": nil, "0": {0}, "0,1, 3": {0, 1, 3}} {
		got, err := ParseDevices(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseDevices(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != " " && strings.ReplaceAll(in, " ", "") != CUDAVisibleDevices(got) {
			t.Errorf("CUDAVisibleDevices(%v) = %q", got, CUDAVisibleDevices(got))
		}
	}
	for _, in := range []string{"0,,1", "GPU-8d6f", "-1", "1;2"} {
		if _, err := ParseDevices(in); err == nil {
			t.Errorf("ParseDevices(%q) accepted", in)
		}
	}
}
