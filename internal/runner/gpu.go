package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// GPUPool hands out disjoint sets of GPU device indices to jobs that run
// at the same time. Acquire blocks until enough devices are free. There
// is no queue: a waiting request for many devices can be overtaken by
// later requests for fewer (no fairness), but a release always wakes every
// waiter, so nobody waits while its request could be served.
type GPUPool struct {
	devices []int

	mu      sync.Mutex
	busy    map[int]bool
	changed chan struct{} // closed and replaced on every release
}

// NewGPUPool returns a pool of the given device indices, as the CUDA
// driver numbers them (after any CUDA_VISIBLE_DEVICES of the runner).
func NewGPUPool(devices []int) (*GPUPool, error) {
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 {
			return nil, fmt.Errorf("GPU pool: negative device index %d", d)
		}
		if seen[d] {
			return nil, fmt.Errorf("GPU pool: device %d listed twice", d)
		}
		seen[d] = true
	}
	return &GPUPool{devices: slices.Clone(devices), busy: map[int]bool{}, changed: make(chan struct{})}, nil
}

// ParseDevices parses a comma-separated list of device indices such as
// "0,1,3" (the form of CUDA_VISIBLE_DEVICES). An empty string is no
// device.
func ParseDevices(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("GPU device list %q: %q is not a device index (want numbers such as 0,1,3; GPU UUIDs are not supported)", s, f)
		}
		out = append(out, d)
	}
	return out, nil
}

// CUDAVisibleDevices returns the CUDA_VISIBLE_DEVICES value that confines
// a process to devices, for example "0,2". An empty set gives "", which
// hides every GPU (CUDA reads an empty value as no device; an unset
// variable would instead expose all of them).
func CUDAVisibleDevices(devices []int) string {
	s := make([]string, len(devices))
	for i, d := range devices {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, ",")
}

// Size returns the number of devices in the pool.
func (p *GPUPool) Size() int { return len(p.devices) }

// Acquire waits until n devices are free and takes them, in the order the
// pool lists them. release returns them; calling it more than once is
// harmless. Asking for more devices than the pool has fails at once, and a
// canceled ctx ends the wait with ctx's error.
func (p *GPUPool) Acquire(ctx context.Context, n int) (devices []int, release func(), err error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("acquire GPUs: asked for %d devices; want at least 1", n)
	}
	if n > len(p.devices) {
		return nil, nil, fmt.Errorf("acquire GPUs: asked for %d devices but the pool has %d (%s)", n, len(p.devices), CUDAVisibleDevices(p.devices))
	}
	for {
		p.mu.Lock()
		got := p.takeLocked(n)
		changed := p.changed
		p.mu.Unlock()
		if got != nil {
			var once sync.Once
			return got, func() { once.Do(func() { p.put(got) }) }, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("acquire %d GPUs: %w", n, context.Cause(ctx))
		case <-changed:
		}
	}
}

// takeLocked marks n free devices busy and returns them, or returns nil
// if fewer than n are free.
func (p *GPUPool) takeLocked(n int) []int {
	var free []int
	for _, d := range p.devices {
		if !p.busy[d] {
			free = append(free, d)
			if len(free) == n {
				for _, d := range free {
					p.busy[d] = true
				}
				return free
			}
		}
	}
	return nil
}

func (p *GPUPool) put(devices []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range devices {
		delete(p.busy, d)
	}
	close(p.changed)
	p.changed = make(chan struct{})
}
