// Package hostload reads what the rest of a machine is doing: the load
// average, the CPU time all of its processes took and the time its
// hypervisor stole, from /proc. A timing taken on a shared machine means
// little without them: the same program runs at a different speed beside
// other work.
package hostload

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/stat and /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture frontier runs on.
const clockTick = 10 * time.Millisecond

// Sample is the machine's state at one moment. Its zero fields are what
// could not be read (not Linux, or no /proc).
type Sample struct {
	At time.Time
	// LoadAvg is the load average over 1, 5 and 15 minutes; nil when
	// unknown.
	LoadAvg []float64
	// Busy is the CPU time every process of the machine has taken since
	// boot (user, nice, system, irq and softirq, summed over its CPUs);
	// Steal the time the hypervisor gave the machine's virtual CPUs to
	// others. OK says whether they were read.
	Busy, Steal time.Duration
	OK          bool
	// CPUs is how many CPUs /proc/stat lists.
	CPUs int
}

// Dir is where Read looks: /proc, or a folder laid out like it (tests).
type Dir string

// Proc is the machine's own /proc.
const Proc Dir = "/proc"

// Now reads the machine's state from /proc.
func Now() Sample { return Proc.Read() }

// Read reads the state from the folder d.
func (d Dir) Read() Sample {
	s := Sample{At: time.Now()}
	if b, err := os.ReadFile(string(d) + "/loadavg"); err == nil {
		s.LoadAvg = parseLoadAvg(b)
	}
	if b, err := os.ReadFile(string(d) + "/stat"); err == nil {
		s.Busy, s.Steal, s.CPUs, s.OK = parseStat(b)
	}
	return s
}

// parseLoadAvg reads "0.52 0.58 0.59 1/467 1234"; nil when malformed.
func parseLoadAvg(b []byte) []float64 {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return nil
		}
		out[i] = v
	}
	return out
}

// parseStat reads the machine's line of /proc/stat ("cpu  user nice
// system idle iowait irq softirq steal guest guest_nice"; guest time is
// counted in user already) and counts the per-CPU lines.
func parseStat(b []byte) (busy, steal time.Duration, cpus int, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cpus++
			continue
		}
		if len(f) < 8 {
			return 0, 0, 0, false
		}
		var v [8]int64
		for i := range v {
			if i+1 >= len(f) {
				break
			}
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil || n < 0 {
				return 0, 0, 0, false
			}
			v[i] = n
		}
		user, nice, system, irq, softirq, st := v[0], v[1], v[2], v[5], v[6], v[7]
		busy = time.Duration(user+nice+system+irq+softirq) * clockTick
		steal = time.Duration(st) * clockTick
		ok = true
	}
	return busy, steal, cpus, ok
}

// ProcessCPU is the CPU time (user and system) process pid has taken so
// far, its reaped children included, from /proc/PID/stat.
func (d Dir) ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", d, pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields that follow start after the last
	// ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s/%d/stat: no command name", d, pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields 14-17 of the file (utime, stime, cutime, cstime) are 11-14
	// after the command name.
	if len(f) < 15 {
		return 0, fmt.Errorf("%s/%d/stat: %d fields after the command name, want at least 15", d, pid, len(f))
	}
	var sum int64
	for _, x := range f[11:15] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%d/stat: %w", d, pid, err)
		}
		sum += n
	}
	return time.Duration(sum) * clockTick, nil
}

// ProcessCPU is the CPU time of process pid, from /proc.
func ProcessCPU(pid int) (time.Duration, error) { return Proc.ProcessCPU(pid) }

// Use is what the machine did between two samples, besides the measured
// job.
type Use struct {
	// Wall is the time between the samples.
	Wall time.Duration
	// Others is the CPU time processes other than the job's took:
	// the machine's busy time less the job's own CPU time (never below
	// 0: the two are read at slightly different moments).
	Others time.Duration
	// Steal is the CPU time the hypervisor gave to other machines.
	Steal time.Duration
	// CPUs is how many CPUs the machine has.
	CPUs int
}

// Between is what the machine did from start to end, given the CPU time
// the job itself took meanwhile. ok is false when either sample lacks
// /proc/stat.
func Between(start, end Sample, own time.Duration) (u Use, ok bool) {
	if !start.OK || !end.OK || end.Busy < start.Busy {
		return Use{}, false
	}
	cpus := end.CPUs
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	return Use{
		Wall:   end.At.Sub(start.At),
		Others: max(end.Busy-start.Busy-own, 0),
		Steal:  max(end.Steal-start.Steal, 0),
		CPUs:   cpus,
	}, true
}
