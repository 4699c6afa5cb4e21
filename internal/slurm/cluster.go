package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cluster is what sinfo says of a cluster, for a person deciding whether
// frontier can run there.
type Cluster struct {
	Partitions []Partition
	Nodes      []Node
}

// Partition is one partition of a cluster.
type Partition struct {
	Name    string
	Default bool   // jobs that name no partition go here
	State   string // "up", "down", "drain", "inact"
	// TimeLimit is the longest time limit a job may ask for, as Slurm
	// writes it ("infinite", "2-00:00:00").
	TimeLimit string
	Nodes     int
}

// Node is one node of a cluster.
type Node struct {
	Name       string
	State      string // "idle", "mixed", "allocated", "down", "drained", ...
	CPUs       int
	MemoryMiB  int64
	GPUs       int    // GPUs in its gres, 0 when none
	Gres       string // its generic resources as Slurm writes them ("gpu:h100:8"); "" when none
	Partitions []string
}

// Describe asks sinfo for the cluster's partitions and nodes.
func (c *Client) Describe(ctx context.Context) (Cluster, error) {
	var cl Cluster
	out, err := c.command(ctx, nil, "sinfo", "--noheader", "--format=%P|%a|%l|%D")
	if err != nil {
		return cl, fmt.Errorf("describe the cluster: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 {
			continue
		}
		p := Partition{Name: strings.TrimSuffix(f[0], "*"), Default: strings.HasSuffix(f[0], "*"), State: f[1], TimeLimit: f[2]}
		p.Nodes, _ = strconv.Atoi(f[3])
		cl.Partitions = append(cl.Partitions, p)
	}
	out, err = c.command(ctx, nil, "sinfo", "--noheader", "--Node", "--Format=NodeList:0|,StateLong:0|,CPUs:0|,Memory:0|,Gres:0|,Partition:0")
	if err != nil {
		return cl, fmt.Errorf("describe the cluster's nodes: %w", err)
	}
	byName := map[string]int{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 {
			continue
		}
		part := strings.TrimSuffix(f[5], "*")
		if i, ok := byName[f[0]]; ok {
			// sinfo writes a node once per partition it is in.
			cl.Nodes[i].Partitions = append(cl.Nodes[i].Partitions, part)
			continue
		}
		n := Node{Name: f[0], State: f[1], Gres: f[4], Partitions: []string{part}}
		if n.Gres == "(null)" {
			n.Gres = ""
		}
		n.CPUs, _ = strconv.Atoi(f[2])
		n.MemoryMiB, _ = strconv.ParseInt(f[3], 10, 64)
		n.GPUs = gresGPUs(n.Gres)
		byName[n.Name] = len(cl.Nodes)
		cl.Nodes = append(cl.Nodes, n)
	}
	return cl, nil
}

// gresGPUs counts the GPUs of a node's gres: "gpu:8", "gpu:h100:4(S:0-1)",
// "gpu:a100:2,gpu:v100:2,shard:4" (the counts of every gpu entry).
func gresGPUs(gres string) int {
	n := 0
	for _, g := range strings.Split(gres, ",") {
		g, _, _ = strings.Cut(g, "(")
		f := strings.Split(g, ":")
		if len(f) < 2 || f[0] != "gpu" {
			continue
		}
		if k, err := strconv.Atoi(f[len(f)-1]); err == nil {
			n += k
		}
	}
	return n
}

// Visibility is what a probe job found of a folder on a node.
type Visibility struct {
	Visible bool
	Node    string
	// Detail says what the probe found, in words.
	Detail string
}

// Probe says whether the folder dir is the same folder on a node as here
// (a shared file system): it writes a file of random content into dir and
// runs a job, with base's partition, account, QoS, constraint and
// directives, that compares the file's content. ctx bounds the wait for a
// job that does not start; an error means the probe could not tell.
func (c *Client) Probe(ctx context.Context, dir string, base Spec) (Visibility, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Visibility{}, err
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return Visibility{}, err
	}
	token := hex.EncodeToString(nonce[:])
	marker := filepath.Join(dir, ".frontier-probe-"+token)
	if err := os.WriteFile(marker, []byte(token), 0o600); err != nil {
		return Visibility{}, fmt.Errorf("probe %s: %w", dir, err)
	}
	defer os.Remove(marker)
	s := Spec{
		Name:    "frontier-probe-" + token[:12],
		Comment: "frontier doctor: is the run folder shared with the nodes?",
		Argv: []string{"/bin/sh", "-c", `if [ ! -e "$1" ]; then exit 3; fi; [ "$(cat "$1")" = "$2" ] || exit 4`,
			"probe", marker, token},
		Dir: "/", Output: "/dev/null", TimeLimit: time.Minute, CPUs: 1, Memory: 64 << 20,
		Partition: base.Partition, Account: base.Account, QoS: base.QoS, Constraint: base.Constraint,
		Directives: base.Directives,
	}
	id, err := c.Submit(ctx, s)
	if err != nil {
		return Visibility{}, fmt.Errorf("probe %s: %w", dir, err)
	}
	in, err := c.Wait(ctx, id, nil)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = c.Cancel(cctx, id)
		if in.State == Pending {
			return Visibility{}, fmt.Errorf("probe %s: job %s did not start (pending: %s): %w", dir, id, in.Reason, err)
		}
		return Visibility{}, fmt.Errorf("probe %s: job %s: %w", dir, id, err)
	}
	v := Visibility{Node: in.Node}
	switch {
	case in.State == Completed:
		v.Visible, v.Detail = true, fmt.Sprintf("visible on node %s", in.Node)
	case in.State == Failed && in.ExitCode == 3:
		v.Detail = fmt.Sprintf("not visible on node %s: a file written here is missing there; runs_dir must be on a file system the nodes share", in.Node)
	case in.State == Failed && in.ExitCode == 4:
		v.Detail = fmt.Sprintf("not the same folder on node %s: a file written here has other content there", in.Node)
	default:
		return v, fmt.Errorf("probe %s: the probe job %s ended %s on node %q (%s), so it cannot tell", dir, id, in.State, in.Node, exitText(in))
	}
	return v, nil
}
