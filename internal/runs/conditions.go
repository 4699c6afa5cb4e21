package runs

import (
	"fmt"
	"strings"
)

// Conditions are what is known of a machine's state while something was
// measured: a timing on a shared machine means little without them. They
// are stored as JSON, so that what is recorded can grow.
type Conditions struct {
	// LoadAvg is the load average over 1, 5 and 15 minutes when the
	// measurement began, LoadAvgEnd when it ended; empty when unknown.
	LoadAvg    []float64 `json:"load_avg,omitempty"`
	LoadAvgEnd []float64 `json:"load_avg_end,omitempty"`
	// CPU is what the machine's CPUs did while the measured process ran;
	// nil when it was not read (no /proc, or taken before it was).
	CPU *CPUUse `json:"cpu,omitempty"`
}

// CPUUse is the measured job's CPU time beside its wall time and beside
// what the rest of the machine took meanwhile.
type CPUUse struct {
	// WallMs is the job's wall time, as the runner measured it.
	WallMs float64 `json:"wall_ms"`
	// OwnMs is the job's own CPU time (user and system); OwnSource says
	// where it was read: "cgroup" (the job cgroup's cpu.stat, every
	// process counted) or "rusage" (its main process and the children
	// it waited for).
	OwnMs     float64 `json:"own_ms"`
	OwnSource string  `json:"own_source,omitempty"`
	// OthersMs is the CPU time every other process of the machine took
	// during the job's run: /proc/stat's busy time less the job's own and
	// the judge's. StealMs is the time a hypervisor gave the machine's
	// CPUs to other machines. CPUs is how many the machine has: OthersMs
	// / WallMs is how many of them other work kept busy on average.
	OthersMs float64 `json:"others_ms"`
	StealMs  float64 `json:"steal_ms"`
	CPUs     int     `json:"cpus"`
}

// Summary says in one line what a timing was taken under: the job's own
// CPU time, what other processes and a hypervisor took meanwhile (in CPUs
// kept busy on average), and the one-minute load average at the start and
// end. It is "" when nothing is known.
func (c *Conditions) Summary() string {
	if c == nil {
		return ""
	}
	var parts []string
	if u := c.CPU; u != nil {
		parts = append(parts, fmt.Sprintf("own CPU %s (%s)", seconds(u.OwnMs), u.OwnSource))
		if u.WallMs > 0 {
			others := fmt.Sprintf("others %.2f of %d CPUs", u.OthersMs/u.WallMs, u.CPUs)
			if u.StealMs > 0 {
				others += fmt.Sprintf(", steal %.2f", u.StealMs/u.WallMs)
			}
			parts = append(parts, others)
		}
	}
	if len(c.LoadAvg) > 0 || len(c.LoadAvgEnd) > 0 {
		parts = append(parts, "load "+load1(c.LoadAvg)+" -> "+load1(c.LoadAvgEnd))
	}
	return strings.Join(parts, ", ")
}

// OthersCPUs is how many CPUs other processes kept busy on average while
// the job ran; ok is false when it was not measured.
func (c *Conditions) OthersCPUs() (float64, bool) {
	if c == nil || c.CPU == nil || c.CPU.WallMs <= 0 {
		return 0, false
	}
	return c.CPU.OthersMs / c.CPU.WallMs, true
}

// load1 is the one-minute load average, or "?".
func load1(l []float64) string {
	if len(l) == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f", l[0])
}

// seconds writes milliseconds as seconds ("12.34s").
func seconds(ms float64) string {
	return fmt.Sprintf("%.2fs", ms/1000)
}
