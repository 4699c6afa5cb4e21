package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/slurm"
)

func TestSlurmSection(t *testing.T) {
	dir := t.TempDir()
	src := `slurm:
  partition: gpu
  account: speedrun
  qos: normal
  constraint: "h100&ib"
  gpu_type: h100
  directives: ["--reservation=speedrun", "--exclusive"]
  bin: slurm/bin
  poll: 10s
  outage: 5m
`
	c, err := Parse(filepath.Join(dir, "frontier.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Slurm
	if s.Partition != "gpu" || s.Account != "speedrun" || s.QoS != "normal" || s.Constraint != "h100&ib" || s.GPUType != "h100" {
		t.Errorf("section %+v", s)
	}
	if s.Bin != filepath.Join(dir, "slurm/bin") {
		t.Errorf("bin %q: want it resolved against the file's folder", s.Bin)
	}
	cl := s.Client()
	if cl.Bin != s.Bin || cl.Poll != 10*time.Second || cl.Outage != 5*time.Minute {
		t.Errorf("client %+v", cl)
	}
	spec := slurm.Spec{Directives: []string{"--nice=10"}}
	s.Apply(&spec)
	if spec.Partition != "gpu" || spec.Account != "speedrun" || spec.QoS != "normal" || spec.Constraint != "h100&ib" ||
		spec.GPUType != "h100" || strings.Join(spec.Directives, " ") != "--nice=10 --reservation=speedrun --exclusive" {
		t.Errorf("spec %+v", spec)
	}
}

func TestSlurmSectionErrors(t *testing.T) {
	src := `slurm:
  partition: "gpu a"
  directives:
    - --job-name=mine
    - exclusive
  poll: 100ms
  outage: 25h
`
	_, err := Parse("frontier.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"frontier.yaml:2:14: slurm.partition: \"gpu a\": use letters, digits",
		"frontier.yaml:4:7: slurm.directives[0]: \"--job-name=mine\": frontier sets --job-name itself",
		"frontier.yaml:5:7: slurm.directives[1]: \"exclusive\": write an sbatch option as --option",
		"frontier.yaml:6:9: slurm.poll: 100ms is outside 1s..10m",
		"frontier.yaml:7:11: slurm.outage: 25h0m0s is outside 1m..24h",
	}
	got := strings.Split(err.Error(), "\n")
	for i, w := range want {
		if i >= len(got) || !strings.HasPrefix(got[i], w) {
			t.Errorf("error %d: %q, want it to start with %q\n(all: %v)", i+1, got[min(i, len(got)-1)], w, err)
		}
	}
	_, err = Parse("frontier.yaml", []byte("slurm:\n  partitions: gpu\n"))
	if w := "frontier.yaml:2:3: slurm.partitions: unknown key (the keys under slurm: partition,"; err == nil || !strings.HasPrefix(err.Error(), w) {
		t.Errorf("an unknown key: %v, want %q", err, w)
	}
}
