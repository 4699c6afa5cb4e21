package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group and asks the kernel
// to SIGKILL it if the thread that started it dies, which covers the
// runner itself being killed (see run for why the thread is locked).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// maxRSSKB reads the peak resident set from rusage, in KiB on Linux.
func maxRSSKB(state *os.ProcessState) int64 {
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// procStat is the part of /proc/PID/stat the tracker needs. start (clock
// ticks since boot) tells a process from a later one that reused its pid.
type procStat struct {
	pid, ppid, pgrp, sid int
	start                uint64
	state                byte
	cpu                  time.Duration // its own user and system time (utime + stime)
	// reaped is the user and system time of the children it waited for
	// (cutime + cstime): a process that ended and was reaped is counted
	// there, in its parent's.
	reaped time.Duration
}

// readProcStat reads /proc/PID/stat with plain system calls: os.ReadFile
// costs three times as much here (stat, poller registration), and a scan
// reads one file per process on the machine.
func readProcStat(pid int) (procStat, error) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, err
	}
	defer syscall.Close(fd)
	var buf [1024]byte // comm is at most 64 bytes; the rest is numbers
	n, err := syscall.Read(fd, buf[:])
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(pid, buf[:max(n, 0)])
}

// parseProcStat parses "pid (comm) state ppid pgrp session ... starttime".
// comm may contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseProcStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	p := procStat{pid: pid, state: f[0][0]}
	var err error
	for _, x := range []struct {
		dst *int
		s   string
	}{{&p.ppid, f[1]}, {&p.pgrp, f[2]}, {&p.sid, f[3]}} {
		if *x.dst, err = strconv.Atoi(x.s); err != nil {
			return procStat{}, err
		}
	}
	if p.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procStat{}, err
	}
	for _, x := range f[11:13] { // utime, stime: fields 14 and 15 of the file
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return procStat{}, err
		}
		p.cpu += time.Duration(n) * clockTick
	}
	for _, x := range f[13:15] { // cutime, cstime: fields 16 and 17
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return procStat{}, err
		}
		p.reaped += time.Duration(n) * clockTick
	}
	return p, nil
}

// listProcs reads every process's stat. Processes that exit while the list
// is read are skipped.
func listProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	procs := make([]procStat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, err := readProcStat(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs
}

// tracker remembers every process of a job it has seen: the members of the
// job's process group and, transitively, the children of any process it
// knows, which catches those that left the group with setsid or setpgid.
// A process that left the group and whose parent exited before a scan saw
// it cannot be attributed (it is reparented to init); the output pipes are
// the last clue for those (adoptPipeHolders).
type tracker struct {
	cg    *jobCgroup // nil without a job cgroup
	pgid  int
	start uint64         // the leader's start time
	known map[int]uint64 // pid -> start time
	// cpu is each known process's own CPU time as last read, by pid and
	// start time; kept after the process is gone.
	cpu map[[2]uint64]time.Duration
}

// clockTick is the unit of times in /proc/PID/stat (USER_HZ, 100 on
// every architecture Linux gives user space).
const clockTick = 10 * time.Millisecond

func newTracker(pid int, cg *jobCgroup) *tracker {
	t := &tracker{cg: cg, pgid: pid, known: map[int]uint64{}, cpu: map[[2]uint64]time.Duration{}}
	if p, err := readProcStat(pid); err == nil {
		t.start = p.start
		t.known[pid] = p.start
	}
	return t
}

// scan adds the job's processes now running to the known set.
func (t *tracker) scan() {
	procs := listProcs()
	now := make(map[int]uint64, len(procs))
	for _, p := range procs {
		now[p.pid] = p.start
	}
	isKnown := func(pid int) bool {
		st, ok := t.known[pid]
		return ok && now[pid] == st
	}
	for _, pid := range t.cg.pids() { // members by construction
		if st, ok := now[pid]; ok {
			t.known[pid] = st
		}
	}
	// Children can be listed before their parents (pids wrap around), so
	// repeat until nothing new is found.
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if p.state == 'Z' || isKnown(p.pid) {
				continue
			}
			inGroup := p.pgrp == t.pgid && (p.pid != t.pgid || p.start == t.start)
			if inGroup || (isKnown(p.ppid) && p.start >= t.known[p.ppid]) {
				t.known[p.pid] = p.start
				changed = true
			}
		}
	}
	for _, p := range procs {
		if isKnown(p.pid) {
			t.noteCPU(p)
		}
	}
}

// noteCPU records a known process's CPU time as just read.
func (t *tracker) noteCPU(p procStat) {
	k := [2]uint64{uint64(p.pid), p.start}
	t.cpu[k] = max(t.cpu[k], p.cpu)
}

// sampleCPU reads the CPU time of every known process, zombies included
// (a zombie's times are final).
func (t *tracker) sampleCPU() {
	for pid, start := range t.known {
		if p, err := readProcStat(pid); err == nil && p.start == start {
			t.noteCPU(p)
		}
	}
}

// cpuTotal is the CPU time of every process of the job as last read: a
// lower bound on the job's, short of what each process ran since its last
// reading and of processes no reading saw.
func (t *tracker) cpuTotal() time.Duration {
	var sum time.Duration
	for _, d := range t.cpu {
		sum += d
	}
	return sum
}

// alive returns the known processes that still run (zombies are dead).
func (t *tracker) alive() []int {
	var pids []int
	for pid, start := range t.known {
		if p, err := readProcStat(pid); err == nil && p.start == start && p.state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// signal sends sig to every known process still alive. The start-time
// check before kill leaves a window of microseconds for a pid to be
// reused, which needs the pid space to wrap around in between.
func (t *tracker) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		t.cg.kill()
	}
	for _, pid := range t.alive() {
		_ = syscall.Kill(pid, sig)
	}
}

// adoptPipeHolders finds the processes, other than this one, that hold an
// end of one of the given pipes, adds them to the known set and returns
// them. Only a process of the job can hold the write end of its output.
func (t *tracker) adoptPipeHolders(pipes []*os.File) []int {
	want := map[string]bool{}
	for _, f := range pipes {
		fi, err := f.Stat()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			want["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	self := os.Getpid()
	var found []int
	for _, p := range listProcs() {
		if p.pid == self || p.state == 'Z' {
			continue
		}
		dir := "/proc/" + strconv.Itoa(p.pid) + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && want[link] {
				t.known[p.pid] = p.start
				found = append(found, p.pid)
				break
			}
		}
	}
	return found
}

// oomCounter reads the oom_kill count of the memory cgroup a process was
// started in: memory.events on cgroup v2, memory.oom_control on v1. Both
// count kills by any OOM killer, global or cgroup, of processes in the
// cgroup (and its descendants on v2). Other jobs sharing the cgroup make
// the count a best guess, which is how the result words it.
type oomCounter struct {
	path   string // "" when no counter is readable
	before int64
}

func newOOMCounter(pid int) oomCounter {
	for _, p := range memoryCgroupFiles(pid) {
		if n, err := readOOMKills(p); err == nil {
			return oomCounter{path: p, before: n}
		}
	}
	return oomCounter{}
}

// delta returns how many OOM kills the cgroup recorded since the start,
// and whether the counter could be read.
func (c oomCounter) delta() (int64, bool) {
	if c.path == "" {
		return 0, false
	}
	n, err := readOOMKills(c.path)
	if err != nil {
		return 0, false
	}
	return n - c.before, true
}

func readOOMKills(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no oom_kill line in " + path)
}

// memoryCgroupFiles lists the candidate OOM counter files of pid's memory
// cgroup, v2 first.
func memoryCgroupFiles(pid int) []string {
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return oomCounterFiles(string(cg), string(mi))
}

// oomCounterFiles joins the cgroup paths of a process (/proc/PID/cgroup)
// to the matching mounts (/proc/self/mountinfo). The mount's root is cut
// from the path, which handles cgroup namespaces.
func oomCounterFiles(cgroup, mountinfo string) []string {
	var v2, v1 string
	hasV2, hasV1 := false, false
	for line := range strings.Lines(cgroup) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2, hasV2 = f[2], true
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1, hasV1 = f[2], true
		}
	}
	var v2files, v1files []string
	for line := range strings.Lines(mountinfo) {
		// id parent maj:min root mountpoint options [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		root, mnt := a[3], a[4]
		switch {
		case hasV2 && b[0] == "cgroup2":
			v2files = append(v2files, filepath.Join(mnt, relCgroup(v2, root), "memory.events"))
		case hasV1 && b[0] == "cgroup" && slices.Contains(strings.Split(b[2], ","), "memory"):
			v1files = append(v1files, filepath.Join(mnt, relCgroup(v1, root), "memory.oom_control"))
		}
	}
	return append(v2files, v1files...)
}

func relCgroup(path, root string) string {
	if root == "/" {
		return path
	}
	if rel, ok := strings.CutPrefix(path, root); ok {
		return rel
	}
	return path
}

// follow adds the children of the known live processes, and theirs, to the
// known set. It reads /proc/PID/task/PID/children of the job's processes
// only, so it costs little next to a full scan, which the limit checks
// need far more often than the periodic scans run. Children forked by a
// thread other than the main one, and orphans adopted by init, are left to
// the full scans (which find the latter by process group).
func (t *tracker) follow() {
	queue := t.alive()
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			p, err := readProcStat(child)
			if err != nil || p.ppid != pid || p.state == 'Z' {
				continue
			}
			if st, ok := t.known[child]; ok && st == p.start {
				continue
			}
			t.known[child] = p.start
			queue = append(queue, child)
		}
	}
}

// usage sums what the known live processes use, and forgets the dead ones
// (nothing needs to be done to them any more).
func (t *tracker) usage() usage {
	var u usage
	for pid, start := range t.known {
		p, err := readProcStat(pid)
		if err != nil || p.start != start {
			delete(t.known, pid)
			continue
		}
		if p.state == 'Z' {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		mem, threads, ok := parseProcStatus(b)
		if !ok {
			continue
		}
		u.memory += mem
		u.tasks += threads
		u.procs++
	}
	return u
}

// parseProcStatus reads the resident anonymous and shared memory (bytes)
// and the thread count from /proc/PID/status. File-backed pages are left
// out: libraries and memory-mapped data files can be dropped and read
// again by the kernel, so they are not memory the job holds.
func parseProcStatus(b []byte) (memory int64, threads int, ok bool) {
	for line := range strings.Lines(string(b)) {
		key, val, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		switch key {
		case "RssAnon", "RssShmem":
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
			if err != nil {
				return 0, 0, false
			}
			memory += kb << 10
		case "Threads":
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil {
				return 0, 0, false
			}
			threads, ok = n, true
		}
	}
	return memory, threads, ok
}

// limitsSupported reports whether Job.MemoryBytes and Job.MaxTasks can be
// enforced here; they can on Linux.
func limitsSupported() error { return nil }

// fullInside reports the first of paths that is full as one of pids sees
// it: a process in a mount namespace other than ours (a sandbox's), looked
// at through /proc/PID/root. A path none of them shows is not full.
func fullInside(pids []int, paths []string) (string, bool) {
	own, _ := os.Readlink("/proc/self/ns/mnt")
	for _, pid := range pids {
		ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
		if err != nil || ns == own {
			continue
		}
		for _, p := range paths {
			var st syscall.Statfs_t
			if syscall.Statfs("/proc/"+strconv.Itoa(pid)+"/root"+p, &st) != nil || st.Blocks == 0 {
				continue
			}
			// Full: no block left, or fewer than 1% of them (a writer
			// stopped by ENOSPC leaves a partial block at most).
			if st.Bavail == 0 || st.Bavail*100 < st.Blocks {
				return p, true
			}
		}
		return "", false
	}
	return "", false
}

// treeCPU is the CPU time of the tree of processes under root (see
// CPUMeter): the tree is found in one listing of /proc, then each member
// is read again, children before their parents when upper (a child
// reaped in between is then in its parent's reaped time as well), parents
// before their children otherwise (a child reaped in between is then in
// neither). false when root is gone.
func treeCPU(root procStat, upper bool) (time.Duration, bool) {
	procs := listProcs()
	children := map[int][]procStat{}
	found := false
	for _, p := range procs {
		if p.pid == root.pid {
			found = p.start == root.start
			continue
		}
		children[p.ppid] = append(children[p.ppid], p)
	}
	if !found {
		return 0, false
	}
	// Breadth first from the root: parents come before their children.
	order := []procStat{root}
	for i := 0; i < len(order); i++ {
		for _, c := range children[order[i].pid] {
			if c.start >= order[i].start { // a reused pid is not a child
				order = append(order, c)
			}
		}
	}
	if upper {
		slices.Reverse(order)
	}
	var sum time.Duration
	for _, p := range order {
		now, err := readProcStat(p.pid)
		if err != nil || now.start != p.start {
			continue // ended and reaped since the listing
		}
		sum += now.cpu + now.reaped
	}
	return sum, true
}
