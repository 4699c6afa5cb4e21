package slurm

import (
	"context"
	"strings"
	"testing"
)

func TestGresGPUs(t *testing.T) {
	for gres, want := range map[string]int{
		"": 0, "(null)": 0, "gpu:8": 8, "gpu:h100:4(S:0-1)": 4,
		"gpu:a100:2,gpu:v100:2,shard:4": 4, "mps:100": 0, "gpu:h100:8(S:0-1),nic:1": 8,
	} {
		if got := gresGPUs(gres); got != want {
			t.Errorf("gresGPUs(%q) = %d, want %d", gres, got, want)
		}
	}
}

func TestNodeGroups(t *testing.T) {
	nodes := []Node{
		{Name: "g1", State: "idle", CPUs: 96, MemoryMiB: 1 << 20, Gres: "gpu:h100:8"},
		{Name: "g2", State: "mixed", CPUs: 96, MemoryMiB: 1 << 20, Gres: "gpu:h100:8"},
		{Name: "g3", State: "idle", CPUs: 96, MemoryMiB: 1 << 20, Gres: "gpu:h100:8"},
		{Name: "c1", State: "down", CPUs: 32, MemoryMiB: 128 << 10},
	}
	got := strings.Join(nodeGroups(nodes), "\n")
	want := "3 nodes with 96 CPUs, 1024.0 GiB, 8 GPUs (gpu:h100:8): 2 idle, 1 mixed\n" +
		"1 node with 32 CPUs, 128.0 GiB, no GPUs: 1 down"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Without the Slurm commands, the check says so in one line and runs
// nothing.
func TestCheckWithoutSlurm(t *testing.T) {
	c := &Client{Bin: t.TempDir()}
	ch := c.Check(context.Background(), t.TempDir(), Spec{})
	if len(ch.Commands) != 0 || len(ch.Missing) != len(Commands) || ch.Cluster != nil || ch.Probe != nil {
		t.Fatalf("check %+v", ch)
	}
	if lines := ch.Lines(); len(lines) != 1 || !strings.HasPrefix(lines[0], "not found") {
		t.Errorf("lines %q", lines)
	}
}
