package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cluster is what sinfo says of a cluster, for a person deciding whether
// frontier can run there.
type Cluster struct {
	Partitions []Partition `json:"partitions"`
	Nodes      []Node      `json:"nodes"`
}

// Partition is one partition of a cluster.
type Partition struct {
	Name    string `json:"name"`
	Default bool   `json:"default"` // jobs that name no partition go here
	State   string `json:"state"`   // "up", "down", "drain", "inact"
	// TimeLimit is the longest time limit a job may ask for, as Slurm
	// writes it ("infinite", "2-00:00:00").
	TimeLimit string `json:"time_limit"`
	Nodes     int    `json:"nodes"`
}

// Node is one node of a cluster.
type Node struct {
	Name       string   `json:"name"`
	State      string   `json:"state"` // "idle", "mixed", "allocated", "down", "drained", ...
	CPUs       int      `json:"cpus"`
	MemoryMiB  int64    `json:"memory_mib"`
	GPUs       int      `json:"gpus"` // GPUs in its gres, 0 when none
	Gres       string   `json:"gres"` // its generic resources as Slurm writes them ("gpu:h100:8"); "" when none
	Partitions []string `json:"partitions"`
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
	Visible bool   `json:"visible"`
	Node    string `json:"node"`
	// Detail says what the probe found, in words.
	Detail string `json:"detail"`
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

// Check is what a look at this machine's Slurm setup found, as frontier
// doctor shows it.
type Check struct {
	// Commands are the Slurm commands found, by name, with their paths;
	// Missing those that were not.
	Commands map[string]string `json:"commands"`
	Missing  []string          `json:"missing,omitempty"`
	Cluster  *Cluster          `json:"cluster,omitempty"`
	// Error says why the cluster could not be described ("" when it was).
	Error string `json:"error,omitempty"`
	// ProbeDir is the folder whose visibility from a node was probed (""
	// when none was), Probe what the probe found, ProbeError why it could
	// not tell.
	ProbeDir   string      `json:"probe_dir,omitempty"`
	Probe      *Visibility `json:"probe,omitempty"`
	ProbeError string      `json:"probe_error,omitempty"`
}

// Check looks for the Slurm commands and asks sinfo about the cluster;
// when probeDir is not "", it also runs a job (with base's partition,
// account, QoS, constraint and directives) to see whether probeDir is
// visible from a node, which waits for the job to start: ctx bounds it.
func (c *Client) Check(ctx context.Context, probeDir string, base Spec) Check {
	ch := Check{Commands: map[string]string{}}
	for _, name := range Commands {
		if p, err := c.Path(name); err == nil {
			ch.Commands[name] = p
		} else {
			ch.Missing = append(ch.Missing, name)
		}
	}
	if _, ok := ch.Commands["sinfo"]; !ok {
		return ch
	}
	if cl, err := c.Describe(ctx); err != nil {
		ch.Error = err.Error()
	} else {
		ch.Cluster = &cl
	}
	if probeDir == "" || ch.Cluster == nil {
		return ch
	}
	ch.ProbeDir = probeDir
	if v, err := c.Probe(ctx, probeDir, base); err != nil {
		ch.ProbeError = err.Error()
	} else {
		ch.Probe = &v
	}
	return ch
}

// Lines says what the check found, one finding a line.
func (ch Check) Lines() []string {
	if len(ch.Commands) == 0 {
		return []string{"not found: no Slurm command on PATH (needed only to run evaluations on a Slurm cluster; slurm.bin names their folder)"}
	}
	found := slices.Sorted(maps.Keys(ch.Commands))
	line := "commands: " + strings.Join(found, ", ")
	if len(ch.Missing) > 0 {
		line += "; MISSING: " + strings.Join(ch.Missing, ", ")
	}
	lines := []string{line}
	if ch.Error != "" {
		return append(lines, "cluster: "+ch.Error)
	}
	if ch.Cluster == nil {
		return lines
	}
	var parts []string
	for _, p := range ch.Cluster.Partitions {
		d := ""
		if p.Default {
			d = "default, "
		}
		parts = append(parts, fmt.Sprintf("%s (%s%s, %s, time limit %s)", p.Name, d, p.State, count(p.Nodes, "node"), p.TimeLimit))
	}
	lines = append(lines, "partitions: "+strings.Join(parts, "; "))
	lines = append(lines, nodeGroups(ch.Cluster.Nodes)...)
	switch {
	case ch.ProbeDir == "":
	case ch.ProbeError != "":
		lines = append(lines, "run folder: cannot tell: "+ch.ProbeError)
	case ch.Probe != nil:
		lines = append(lines, fmt.Sprintf("run folder %s: %s", ch.ProbeDir, ch.Probe.Detail))
	}
	return lines
}

// nodeGroups describes the nodes in groups of one kind (CPUs, memory,
// gres), a line each, with how many of them are in each state: a cluster
// has thousands of nodes and a few kinds.
func nodeGroups(nodes []Node) []string {
	type kind struct {
		cpus int
		mem  int64
		gres string
	}
	states := map[kind]map[string]int{}
	var order []kind
	for _, n := range nodes {
		k := kind{n.CPUs, n.MemoryMiB, n.Gres}
		if states[k] == nil {
			states[k] = map[string]int{}
			order = append(order, k)
		}
		states[k][n.State]++
	}
	var lines []string
	for _, k := range order {
		total := 0
		var st []string
		for _, s := range slices.Sorted(maps.Keys(states[k])) {
			total += states[k][s]
			st = append(st, fmt.Sprintf("%d %s", states[k][s], s))
		}
		gpus := "no GPUs"
		if g := gresGPUs(k.gres); g > 0 {
			gpus = fmt.Sprintf("%d GPUs (%s)", g, k.gres)
		}
		lines = append(lines, fmt.Sprintf("%s with %d CPUs, %.1f GiB, %s: %s", count(total, "node"), k.cpus, float64(k.mem)/1024, gpus, strings.Join(st, ", ")))
	}
	return lines
}

// count writes n things: "1 node", "3 nodes".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
