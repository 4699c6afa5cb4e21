package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/slurm"
)

// Slurm is the slurm section of frontier.yaml: where on a Slurm cluster
// evaluations run and who pays for them. The resources of a job (GPUs,
// CPUs, memory, time) come from the track, not from here.
//
//	slurm:
//	  partition: gpu
//	  account: speedrun
//	  qos: normal
//	  constraint: h100
//	  gpu_type: h100
//	  directives: ["--reservation=speedrun"]
//
// The zero value uses the cluster's defaults and the commands on PATH.
type Slurm struct {
	// Partition, Account, QoS and Constraint are passed to sbatch as
	// --partition, --account, --qos and --constraint; empty leaves each to
	// the cluster's default.
	Partition  string `yaml:"partition"`
	Account    string `yaml:"account"`
	QoS        string `yaml:"qos"`
	Constraint string `yaml:"constraint"`
	// GPUType asks for GPUs of one type, as the cluster's gres names them
	// (--gres=gpu:TYPE:N); empty takes any.
	GPUType string `yaml:"gpu_type"`
	// Directives are more sbatch options, one "--option=value" each.
	Directives []string `yaml:"directives"`
	// Bin is the folder of the Slurm commands; empty means PATH.
	Bin string `yaml:"bin"`
	// Poll is the longest wait between two looks at a job; 0 means 30s.
	Poll llm.Duration `yaml:"poll"`
	// Outage is how long slurmctld may not answer before frontier stops
	// following a job (the job runs on); 0 means 10m.
	Outage llm.Duration `yaml:"outage"`
	// Jobs is how many evaluation phases may be in flight at once (queued
	// or running) when evaluations run on the cluster; 0 means 64. A
	// search's evolve.slots, when set, takes precedence.
	Jobs int `yaml:"jobs"`
	// Frontier is the frontier binary as the nodes see it; empty means the
	// binary that submits, which must then lie on a shared file system.
	Frontier string `yaml:"frontier"`
	// Workers, when above 0, runs phases in long-lived worker jobs, up to
	// this many per kind of node, instead of a job per phase: a phase
	// starts as soon as a worker is free. WorkerTime is each worker's
	// time limit (0: 4h), WorkerIdle how long it waits for a phase before
	// it ends (0: 5m).
	Workers    int          `yaml:"workers"`
	WorkerTime llm.Duration `yaml:"worker_time"`
	WorkerIdle llm.Duration `yaml:"worker_idle"`
}

// MaxJobs is the number of phases in flight at once.
func (s Slurm) MaxJobs() int {
	if s.Jobs > 0 {
		return s.Jobs
	}
	return 64
}

// Validate returns every problem of the section, each naming its key.
func (s Slurm) Validate() error {
	var errs []error
	for _, f := range []struct{ key, v string }{
		{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QoS},
		{"constraint", s.Constraint}, {"gpu_type", s.GPUType},
	} {
		if err := slurm.CheckValue(f.v); err != nil {
			errs = append(errs, fmt.Errorf("slurm.%s: %w", f.key, err))
		}
	}
	for i, d := range s.Directives {
		if err := slurm.CheckDirective(d); err != nil {
			errs = append(errs, fmt.Errorf("slurm.directives[%d]: %w", i, err))
		}
	}
	if p := s.Poll.D(); p != 0 && (p < time.Second || p > 10*time.Minute) {
		errs = append(errs, fmt.Errorf("slurm.poll: %v is outside 1s..10m", p))
	}
	if o := s.Outage.D(); o != 0 && (o < time.Minute || o > 24*time.Hour) {
		errs = append(errs, fmt.Errorf("slurm.outage: %v is outside 1m..24h", o))
	}
	if s.Jobs < 0 || s.Jobs > 100000 {
		errs = append(errs, fmt.Errorf("slurm.jobs: %d: want 1..100000 (0: 64)", s.Jobs))
	}
	if s.Workers < 0 || s.Workers > 10000 {
		errs = append(errs, fmt.Errorf("slurm.workers: %d: want 0..10000 (0: a job per phase)", s.Workers))
	}
	if t := s.WorkerTime.D(); t != 0 && (t < 15*time.Minute || t > 30*24*time.Hour) {
		errs = append(errs, fmt.Errorf("slurm.worker_time: %v is outside 15m..720h", t))
	}
	if t := s.WorkerIdle.D(); t != 0 && (t < 10*time.Second || t > 24*time.Hour) {
		errs = append(errs, fmt.Errorf("slurm.worker_idle: %v is outside 10s..24h", t))
	}
	if s.Frontier != "" && !filepath.IsAbs(s.Frontier) {
		errs = append(errs, fmt.Errorf("slurm.frontier: %q: want an absolute path, as the nodes see it", s.Frontier))
	}
	return errors.Join(errs...)
}

// Client returns a client of the cluster the section describes.
func (s Slurm) Client() *slurm.Client {
	return &slurm.Client{Bin: s.Bin, Poll: s.Poll.D(), Outage: s.Outage.D()}
}

// WorkerMode returns the section's worker settings.
func (s Slurm) WorkerMode() slurm.Workers {
	return slurm.Workers{N: s.Workers, Time: s.WorkerTime.D(), Idle: s.WorkerIdle.D()}
}

// Apply sets the fields of a job spec that the section decides: the
// partition, account, QoS, constraint, GPU type and extra directives.
func (s Slurm) Apply(spec *slurm.Spec) {
	spec.Partition, spec.Account, spec.QoS, spec.Constraint = s.Partition, s.Account, s.QoS, s.Constraint
	spec.GPUType = s.GPUType
	spec.Directives = append(spec.Directives, s.Directives...)
}
