//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalExtraFiles: the program reads a file it was handed as fd 3.
func TestLocalExtraFiles(t *testing.T) {
	job := shJob(t, "cat <&3; echo; cat <&4\n")
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	if _, err := w1.WriteString("from a pipe"); err != nil {
		t.Fatal(err)
	}
	w1.Close()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	job.ExtraFiles = []*os.File{r1, f}
	res := run1(t, job)
	if res.Status != StatusOK || res.Stdout.String() != "from a pipe\nfrom a file" {
		t.Errorf("got %s, stdout %q: %s", res.Status, res.Stdout.String(), res.Stderr.String())
	}
}

// TestLocalMaxTasks: a fork loop is stopped at the task limit, and none of
// its processes is left. The loop stops by itself at 200 processes, so a
// broken limit cannot hurt the machine. It forks one process every 20 ms
// (4 s in all): without a cgroup the limit is checked every 100 ms, and an
// unpaced loop can end in less than that on a loaded machine, which would
// test the scheduler, not the limit.
func TestLocalMaxTasks(t *testing.T) {
	job := shJob(t, "i=0\nwhile [ $i -lt 200 ]; do sleep 20 & echo $! >> pids; i=$((i+1)); sleep 0.02; done\nwait\n")
	job.MaxTasks = 30
	job.Timeout = 30 * time.Second
	res := run1(t, job)
	if res.Status != StatusLimit || res.Limit != LimitTasks {
		t.Fatalf("got %s (limit %q): %s", res.Status, res.Limit, res.Message)
	}
	if !strings.Contains(res.Message, "over the limit of 30") || !strings.Contains(res.Message, "tasks (processes and threads)") {
		t.Errorf("message %q", res.Message)
	}
	pids := readPids(t, filepath.Join(job.Dir, "pids"))
	if len(pids) >= 200 {
		t.Errorf("the loop ran to its end (%d processes) before it was stopped", len(pids))
	}
	assertGone(t, pids)
}

// TestLocalMemoryLimit: a program filling memory is stopped at the limit.
// It stops by itself at 1 GiB. The limit is small because touching fresh
// memory is slow on small virtual machines (60 MB/s was seen).
func TestLocalMemoryLimit(t *testing.T) {
	job := pyJob(t, `import time
chunks = []
for i in range(64):
    chunks.append(b"\x01" * (16 << 20))
    print(len(chunks) * 16, "MiB", flush=True)
time.sleep(30)
`)
	job.MemoryBytes = 128 << 20
	job.Timeout = 30 * time.Second
	res := run1(t, job)
	if res.Status != StatusLimit || res.Limit != LimitMemory {
		t.Fatalf("got %s (limit %q): %s", res.Status, res.Limit, res.Message)
	}
	if !strings.Contains(res.Message, "over the limit of 128 MiB") || !strings.Contains(res.Message, "all its processes were killed") {
		t.Errorf("message %q", res.Message)
	}
	if strings.Contains(res.Stdout.String(), "1024 MiB") {
		t.Errorf("the program reached 1 GiB before it was stopped")
	}
	t.Logf("%s (peak RSS %d MiB)", res.Message, res.MaxRSSKB>>10)
}

// TestLocalLimitsWithinBounds: a job inside its limits is not disturbed.
func TestLocalLimitsWithinBounds(t *testing.T) {
	job := shJob(t, "sleep 0.3 & sleep 0.3 & wait; echo done\n")
	job.MaxTasks, job.MemoryBytes = 10, 64<<20
	res := run1(t, job)
	if res.Status != StatusOK || res.Limit != "" || res.Stdout.String() != "done\n" {
		t.Errorf("got %s (limit %q): %s", res.Status, res.Limit, res.Message)
	}
	job.MaxTasks = -1
	if _, err := NewLocal(nil).Run(t.Context(), job); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative MaxTasks: %v", err)
	}
}

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tpython3\nState:\tR (running)\nVmRSS:\t  900 kB\nRssAnon:\t  500 kB\nRssFile:\t  300 kB\nRssShmem:\t  100 kB\nThreads:\t7\n"
	mem, threads, ok := parseProcStatus([]byte(status))
	if !ok || mem != 600<<10 || threads != 7 {
		t.Errorf("got %d bytes, %d threads, %v", mem, threads, ok)
	}
	if _, _, ok := parseProcStatus([]byte("Name:\tzombie\nState:\tZ (zombie)\n")); ok {
		t.Error("ok without a Threads line")
	}
	if _, _, ok := parseProcStatus([]byte("RssAnon:\tlots kB\nThreads:\t1\n")); ok {
		t.Error("ok with a malformed RssAnon")
	}
}

func TestFmtBytes(t *testing.T) {
	for n, want := range map[int64]string{
		512:                 "512 B",
		1536:                "1.5 KiB",
		256 << 20:           "256 MiB",
		9771 << 20:          "9.5 GiB",
		8 << 30:             "8 GiB",
		601<<20 + 300<<10:   "601 MiB",
		3<<40 + 512<<30 + 1: "3.5 TiB",
	} {
		if got := fmtBytes(n); got != want {
			t.Errorf("fmtBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCgroupSetLimits writes the limits into a fake cgroup folder; real
// cgroup v2 delegation is rarely available to tests.
func TestCgroupSetLimits(t *testing.T) {
	parent, dir := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(parent, "cgroup.subtree_control"): "pids\n",
		filepath.Join(dir, "memory.max"):                "max\n",
		filepath.Join(dir, "pids.max"):                  "max\n",
		filepath.Join(dir, "pids.events"):               "max 0\n",
	}
	for p, b := range files {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	c := &jobCgroup{parent: parent, dir: dir, fd: -1}
	if errs := c.setLimits(512<<20, 0); len(errs) != 0 {
		t.Fatalf("setLimits: %v", errs)
	}
	// memory was not enabled in the parent, so it was turned on; the
	// optional files do not exist in the fake and are skipped.
	if got := read(filepath.Join(parent, "cgroup.subtree_control")); got != "+memory" {
		t.Errorf("subtree_control = %q", got)
	}
	if got := read(filepath.Join(dir, "memory.max")); !strings.HasPrefix(got, "536870912") {
		t.Errorf("memory.max = %q", got)
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := c.setLimits(0, 64); len(errs) != 0 {
		t.Fatalf("setLimits: %v", errs)
	}
	if got := read(filepath.Join(dir, "pids.max")); !strings.HasPrefix(got, "64") {
		t.Errorf("pids.max = %q", got)
	}
	if got := read(filepath.Join(parent, "cgroup.subtree_control")); got != "memory pids\n" {
		t.Errorf("subtree_control rewritten although both were on: %q", got)
	}
	if !c.memoryLimited() || !c.tasksLimited() || c.forksRefused() != 0 {
		t.Errorf("limited %v %v, refused %d", c.memoryLimited(), c.tasksLimited(), c.forksRefused())
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &limiter{tasks: 64, cg: c}
	if name, msg := l.check(); name != LimitTasks || !strings.Contains(msg, "more than 64 tasks") || !strings.Contains(msg, "refused 3 forks") {
		t.Errorf("check: %q, %q", name, msg)
	}

	// Without the controller files, each limit falls back to measuring.
	c2 := &jobCgroup{parent: parent, dir: t.TempDir(), fd: -1}
	if errs := c2.setLimits(1<<20, 5); len(errs) != 2 || c2.memoryLimited() || c2.tasksLimited() {
		t.Errorf("errors %v, limited %v %v", errs, c2.memoryLimited(), c2.tasksLimited())
	}
}

// TestClassifyCgroupMemoryLimit: an OOM kill in a job cgroup with
// memory.max set is the memory limit, not a machine out of memory.
func TestClassifyCgroupMemoryLimit(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "memory.events")
	if err := os.WriteFile(counter, []byte("oom 1\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	killed := shJob(t, "kill -KILL $$\n")
	state := exitState(t, killed)
	s := supervisor{
		oom: oomCounter{path: counter, before: 0},
		lim: &limiter{memory: 1 << 30, cg: &jobCgroup{memLimit: true}},
	}
	s.readOOM()
	var got Result
	s.classify(&got, state, killed)
	if got.Status != StatusLimit || got.Limit != LimitMemory || !strings.Contains(got.Message, "memory limit of 1 GiB") {
		t.Errorf("got %s (%q): %s", got.Status, got.Limit, got.Message)
	}
}
