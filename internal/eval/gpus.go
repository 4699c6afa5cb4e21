package eval

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

// NodeGPUs returns the device indices of this node's GPUs that evaluations
// may use, for runner.NewGPUPool. In order of precedence: configured (a
// list such as "0,1,3" from the user's configuration), then the
// CUDA_VISIBLE_DEVICES that frontier itself was started with (inherited,
// "" when unset; evaluated programs do not inherit it, so the pool must
// name the same devices), then every device the Python probe saw (probed,
// pyenv.Info.GPUs). No GPUs gives an empty list.
func NodeGPUs(configured, inherited string, probed int) ([]int, error) {
	if strings.TrimSpace(configured) != "" {
		devs, err := runner.ParseDevices(configured)
		if err != nil {
			return nil, fmt.Errorf("configured GPUs: %w", err)
		}
		return devs, nil
	}
	if strings.TrimSpace(inherited) != "" {
		devs, err := runner.ParseDevices(inherited)
		if err != nil {
			return nil, fmt.Errorf("CUDA_VISIBLE_DEVICES of frontier's environment: %w; list the GPUs to use by index in frontier.yaml instead", err)
		}
		if probed > 0 && len(devs) > probed {
			devs = devs[:probed]
		}
		return devs, nil
	}
	devs := make([]int, probed)
	for i := range devs {
		devs[i] = i
	}
	return devs, nil
}

// NewNodeGPUPool is NodeGPUs made into a pool, reading frontier's own
// CUDA_VISIBLE_DEVICES. It returns nil (no pool: programs see the node's
// GPUs as they are) when the node has none.
func NewNodeGPUPool(configured string, probed int) (*runner.GPUPool, error) {
	devs, err := NodeGPUs(configured, os.Getenv("CUDA_VISIBLE_DEVICES"), probed)
	if err != nil || len(devs) == 0 {
		return nil, err
	}
	return runner.NewGPUPool(devs)
}

// assignGPUs gives one process of an evaluation its devices: the
// environment entries to add and a release function to call when the
// process has ended. A cpu track sees no GPU (CUDA_VISIBLE_DEVICES=""), so
// its results never depend on one. A cuda track takes hardware.gpus devices
// from the pool, waiting while other evaluations hold them, so evaluations
// that need fewer GPUs than the node has run side by side. Without a pool
// a cuda track sees the GPUs frontier itself sees.
func (l *Local) assignGPUs(ctx context.Context, spec *track.Spec, say func(string, ...any)) (env []string, release func(), err error) {
	release = func() {}
	if spec.Hardware.Device != "cuda" {
		return []string{"CUDA_VISIBLE_DEVICES="}, release, nil
	}
	if l.GPUs == nil {
		if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
			env = []string{"CUDA_VISIBLE_DEVICES=" + v}
		}
		return env, release, nil
	}
	n := max(spec.Hardware.GPUs, 1)
	if n > l.GPUs.Size() {
		return nil, nil, fmt.Errorf("track %s needs %d GPUs but this node's pool has %d: run it on a larger node, or choose a track for fewer GPUs (nanogpt-1gpu)", spec.Name, n, l.GPUs.Size())
	}
	say("%s: acquiring %d GPU(s)", spec.Name, n)
	devs, release, err := l.GPUs.Acquire(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	say("%s: running on GPU(s) %s", spec.Name, runner.CUDAVisibleDevices(devs))
	return []string{"CUDA_VISIBLE_DEVICES=" + runner.CUDAVisibleDevices(devs)}, release, nil
}

// Comparable reports whether two results may be compared (ranked, put on
// one frontier, tested against each other): both were measured on the same
// track version, under the same verification level, and on the same
// fingerprint class (device model and count, PyTorch and CUDA versions,
// a CPU's BLAS kernels; see FingerprintClass). A result without a
// fingerprint class is comparable to nothing.
func Comparable(a, b *Result) bool {
	if a == nil || b == nil || a.FingerprintClass == "" {
		return false
	}
	return a.FingerprintClass == b.FingerprintClass && a.Track.Hash == b.Track.Hash && a.Verification == b.Verification
}
