package slurm

// Tests on a real Slurm: the one-node cluster of scripts/slurm.sh, which
// they find through FRONTIER_TEST_SLURM (testdeps.Slurm). Sequential tests
// come first and may take the whole node (set it down, preempt, fill it);
// the parallel ones share it after them.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// testCluster is the cluster of scripts/slurm.sh.
type testCluster struct {
	dir  string // its state folder
	node string // its one node
	c    *Client
}

func newTestCluster(t testing.TB) *testCluster {
	t.Helper()
	dir := testdeps.Slurm(t)
	node, err := os.ReadFile(filepath.Join(dir, "node"))
	if err != nil {
		t.Fatalf("the test cluster's node: %v", err)
	}
	return &testCluster{dir: dir, node: strings.TrimSpace(string(node)), c: &Client{
		Poll: time.Second, Outage: 2 * time.Minute,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}}
}

// testWriter writes a log to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// spec returns a spec of a job that runs sh -c script in a new folder,
// named after the test so that no two tests (or runs) share a name.
func (tc *testCluster) spec(t *testing.T, script string) Spec {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	return Spec{
		Name:    fmt.Sprintf("ft-%s-%s", name, hex.EncodeToString(b[:])),
		Comment: "frontier test " + t.Name(),
		Argv:    []string{"/bin/sh", "-c", script},
		Dir:     t.TempDir(),
		CPUs:    1, Memory: 64 << 20, TimeLimit: 5 * time.Minute,
	}
}

// scontrol runs scontrol on the test cluster.
func (tc *testCluster) scontrol(t *testing.T, args ...string) {
	t.Helper()
	if out, err := tc.c.command(context.Background(), nil, "scontrol", args...); err != nil {
		t.Fatalf("scontrol %v: %v %s", args, err, out)
	}
}

// setNode sets the node's state (down, resume) and, after a down, makes
// sure it is resumed when the test ends, however it ends.
func (tc *testCluster) setNode(t *testing.T, state string) {
	t.Helper()
	args := []string{"update", "nodename=" + tc.node, "state=" + state}
	if state == "down" {
		args = append(args, "reason=frontier test "+t.Name())
		t.Cleanup(func() {
			_, _ = tc.c.command(context.Background(), nil, "scontrol", "update", "nodename="+tc.node, "state=resume")
		})
	}
	tc.scontrol(t, args...)
}

func TestRunCompletes(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, `echo "ran in $PWD as $SLURM_JOB_NAME with X=$X" > out.txt`)
	s.Env = []string{"X=a b"}
	var states []State
	res, err := tc.c.Run(context.Background(), s, func(in Info) { states = append(states, in.State) })
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.State != Completed || res.Node != tc.node || len(res.Attempts) != 1 || res.Name != s.Name+".1" {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Message, "completed on node "+tc.node) {
		t.Errorf("message %q", res.Message)
	}
	out, err := os.ReadFile(filepath.Join(s.Dir, "out.txt"))
	if want := fmt.Sprintf("ran in %s as %s.1 with X=a b\n", s.Dir, s.Name); err != nil || string(out) != want {
		t.Errorf("the job wrote %q (%v), want %q", out, err, want)
	}
	if res.Start.IsZero() || res.End.Before(res.Start) || res.Submit.After(res.Start) {
		t.Errorf("times: submitted %v, started %v, ended %v", res.Submit, res.Start, res.End)
	}
	t.Logf("states seen: %v; %s", states, res.Message)
}

// The job gets the environment the package doc promises: none of the
// submitting process's variables but the few passed.
func TestJobEnvironment(t *testing.T) {
	tc := newTestCluster(t)
	t.Setenv("FRONTIER_TEST_SECRET", "do-not-pass")
	t.Setenv("SBATCH_TIMELIMIT", "1") // would shorten the job if sbatch saw it
	s := tc.spec(t, `env > env.txt`)
	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil || !res.OK() {
		t.Fatalf("%v: %+v", err, res)
	}
	env, err := os.ReadFile(filepath.Join(s.Dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "do-not-pass") {
		t.Error("a variable of the submitting process reached the job")
	}
	if strings.Contains(string(env), "SBATCH_TIMELIMIT") || res.TimeLimit != "5:00" {
		t.Errorf("SBATCH_TIMELIMIT reached sbatch: the job's limit is %q", res.TimeLimit)
	}
	if !strings.Contains(string(env), "SLURM_JOB_ID="+res.ID+"\n") {
		t.Errorf("no SLURM_JOB_ID=%s in the job's environment:\n%s", res.ID, env)
	}
}

func TestRunFails(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	cases := []struct {
		script       string
		code, signal int
		want         string
	}{
		{"echo failing; exit 3", 3, 0, "failed on node " + tc.node},
		{"kill -KILL $$", 0, 9, "killed by signal 9 (SIGKILL)"},
	}
	for _, c := range cases {
		res, err := tc.c.Run(context.Background(), tc.spec(t, c.script), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.OK() || res.State != Failed || res.ExitCode != c.code || res.Signal != c.signal || len(res.Attempts) != 1 {
			t.Errorf("%s: result %+v", c.script, res)
		}
		if !strings.Contains(res.Message, c.want) || (c.code != 0 && !strings.Contains(res.Message, fmt.Sprintf("exit code %d", c.code))) {
			t.Errorf("%s: message %q", c.script, res.Message)
		}
		t.Log(res.Message)
	}
}

func TestSubmitRefused(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, "true")
	s.Partition = "no-such-partition"
	_, err := tc.c.Run(context.Background(), s, nil)
	if err == nil || !strings.Contains(err.Error(), "Invalid partition") || Transient(err) {
		t.Fatalf("a job for a partition that does not exist: %v", err)
	}
	t.Log(err)
}

// Memory is enforced without cgroups on the test cluster: slurmstepd
// samples the job's memory every second and kills it past --mem. Slurm
// then says FAILED (OUT_OF_MEMORY needs the cgroup plugin), and the
// output holds slurmstepd's note, which Result reads.
func TestMemoryLimit(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, "(head -c 400M /dev/zero; sleep 60) | tail")
	s.Memory = 100 << 20
	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !res.MemoryExceeded || (res.State != Failed && res.State != OutOfMemory) {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Message, "more memory than it asked for") {
		t.Errorf("message %q", res.Message)
	}
	t.Log(res.Message)
}

func TestTimeLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a time limit is a minute at least: slow")
	}
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, `trap 'echo stopped; exit 143' TERM; sleep 600 & wait`)
	s.TimeLimit = time.Second // rounded up to Slurm's minute
	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != Timeout || res.OK() || res.TimeLimit != "1:00" {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Message, "ran past its time limit (1:00) on node "+tc.node) || !strings.Contains(res.Said, "TIME LIMIT") {
		t.Errorf("message %q, Slurm said %q", res.Message, res.Said)
	}
	t.Log(res.Message)
}

// Cancelling the context cancels the job: scancel, and the job's
// processes on the node are gone.
func TestCancelThroughContext(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, `echo $$ > pid; sleep 300`)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	pidFile := filepath.Join(s.Dir, "pid")
	res, err := tc.c.Run(ctx, s, func(in Info) {
		if in.State == Running {
			go func() {
				// Cancel once the command runs, not only its job.
				for range 100 {
					if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				cancel(errors.New("the test is done with it"))
			}()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "the test is done with it") {
		t.Fatalf("Run's error: %v, want the cause of the cancel", err)
	}
	if res.State != Cancelled || !res.Cancelled || !strings.Contains(res.Message, "cancelled by frontier") {
		t.Fatalf("result %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the job never ran its command: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// slurmstepd sends SIGTERM, then SIGKILL after KillWait (5 s here).
	deadline := time.Now().Add(15 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the job's command (pid %d) still runs after the cancel", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Log(res.Message)
}

// A node set DOWN under a running job ends the job NODE_FAIL at once (the
// job asked not to be requeued). Run submits it once more; when the node
// fails that attempt too, Run reports NODE_FAIL without a third.
func TestNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("sets the node down: slow")
	}
	tc := newTestCluster(t)
	s := tc.spec(t, "sleep 60")
	var mu sync.Mutex
	seen := map[string]bool{}
	res, err := tc.c.Run(context.Background(), s, func(in Info) {
		mu.Lock()
		defer mu.Unlock()
		key := in.Name + " " + string(in.State)
		if seen[key] {
			return
		}
		seen[key] = true
		t.Logf("%s (job %s): %s, %s", in.Name, in.ID, in.State, in.Reason)
		switch {
		case in.State == Running:
			tc.setNode(t, "down")
		case in.Name == s.Name+".2" && in.State == Pending:
			tc.setNode(t, "resume")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != NodeFail || len(res.Attempts) != 2 || res.Attempts[0].State != NodeFail || res.Name != s.Name+".2" {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Message, "node "+tc.node+" failed or was set down") || !strings.Contains(res.Message, "second attempt") {
		t.Errorf("message %q", res.Message)
	}
	t.Log(res.Message)
}

// A job preempted by one of higher priority (the urgent partition's) is
// submitted once more and runs to its end.
func TestPreemptedResubmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the whole node: slow")
	}
	tc := newTestCluster(t)
	s := tc.spec(t, "sleep 5")
	var once sync.Once
	urgent := tc.spec(t, "sleep 1")
	urgent.Partition, urgent.CPUs = "urgent", 2 // the whole node
	res, err := tc.c.Run(context.Background(), s, func(in Info) {
		t.Logf("%s (job %s): %s, %s", in.Name, in.ID, in.State, in.Reason)
		if in.State == Running {
			once.Do(func() {
				if _, err := tc.c.Submit(context.Background(), urgent); err != nil {
					t.Error(err)
				}
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || len(res.Attempts) != 2 || res.Attempts[0].State != Preempted || res.Name != s.Name+".2" {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Message, "before it ended PREEMPTED") {
		t.Errorf("message %q", res.Message)
	}
	t.Log(res.Message)
}

// A job that cannot start before its deadline (the node is full) ends
// DEADLINE; --deadline comes as an extra directive.
func TestDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for slurmctld's deadline check: slow")
	}
	tc := newTestCluster(t)
	blocker := tc.spec(t, "sleep 120")
	blocker.CPUs = 2
	id, err := tc.c.Submit(context.Background(), blocker)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.c.Cancel(context.Background(), id)
	s := tc.spec(t, "true")
	s.TimeLimit = time.Minute
	s.Directives = []string{"--deadline=now+65"}
	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != Deadline || !strings.Contains(res.Message, "before its deadline") {
		t.Fatalf("result %+v", res)
	}
	t.Log(res.Message)
}

// slurmctld stops for longer than a Slurm command waits for it (squeue
// gives up after about 18 s, sbatch after 9) and starts again, while one
// job runs and another is being submitted: the running job goes on, Wait
// follows it through the commands' failures, and Submit submits the other
// once.
func TestControllerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts slurmctld: slow")
	}
	tc := newTestCluster(t)
	if os.Geteuid() != 0 {
		testdeps.Missing(t, "slurm", "restarting the test cluster's slurmctld needs root")
	}
	warnings := &countingHandler{Handler: tc.c.Log.Handler()}
	tc.c.Log = slog.New(warnings)
	s := tc.spec(t, "sleep 8")
	later := tc.spec(t, "true")
	var once sync.Once
	down := make(chan struct{})
	restarted := make(chan error, 1)
	laterDone := make(chan error, 1)
	go func() {
		<-down
		res, err := tc.c.Run(context.Background(), later, nil)
		if err == nil && !res.OK() {
			err = fmt.Errorf("the job submitted during the outage: %s", res.Message)
		}
		laterDone <- err
	}()
	res, err := tc.c.Run(context.Background(), s, func(in Info) {
		if in.State != Running {
			return
		}
		once.Do(func() {
			go func() { restarted <- restartController(tc.dir, down, 25*time.Second) }()
		})
	})
	if rerr := <-restarted; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || !res.OK() {
		t.Fatalf("%v: result %+v\nslurmctld's log ends:\n%s", err, res, logTail(tc.dir, "slurmctld.log"))
	}
	if err := <-laterDone; err != nil {
		t.Fatalf("%v\nslurmctld's log ends:\n%s", err, logTail(tc.dir, "slurmctld.log"))
	}
	if jobs, err := tc.c.Find(context.Background(), later.Name, 0); err != nil || len(jobs) != 1 {
		t.Errorf("jobs of the spec submitted during the outage: %+v, %v; want one", jobs, err)
	}
	if warnings.n.Load() == 0 {
		t.Error("no command failed while slurmctld was down: the outage was not seen")
	}
	t.Log(res.Message)
}

// logTail returns the last lines of a log of the test cluster.
func logTail(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// countingHandler counts the warnings logged through it.
type countingHandler struct {
	slog.Handler
	n atomic.Int64
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

// restartController stops slurmctld, closes down, leaves it down for the
// given time, and starts it again from its saved state.
func restartController(dir string, down chan<- struct{}, pause time.Duration) error {
	b, err := os.ReadFile(filepath.Join(dir, "slurmctld.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i > 200 {
			return fmt.Errorf("slurmctld (pid %d) does not stop", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(down)
	time.Sleep(pause)
	out, err := exec.Command("slurmctld", "-f", filepath.Join(dir, "slurm.conf")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("start slurmctld again: %v: %s", err, out)
	}
	return nil
}

// firstProcessEnv, when set, makes the test binary a frontier that runs
// the spec in it (JSON) and is killed by the test while the job is in
// flight.
const firstProcessEnv = "FRONTIER_SLURM_TEST_FIRST_PROCESS"

func TestMain(m *testing.M) {
	// The test binary is the frontier the nodes run: its phase-exec and
	// the sandbox's helper (see executor_test.go).
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		os.Exit(sandbox.Helper(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "phase-exec" {
		os.Exit(servePhase(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == "phase-worker" {
		os.Exit(serveWorker(os.Args[2:]))
	}
	if phase := os.Getenv(firstExecutorEnv); phase != "" {
		os.Exit(firstExecutor(phase))
	}
	if spec := os.Getenv(firstProcessEnv); spec != "" {
		var s Spec
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c := &Client{Poll: time.Second}
		res, err := c.Run(context.Background(), s, nil)
		fmt.Println(res.Message, err)
		os.Exit(1) // the test kills it before
	}
	code := m.Run()
	removeTinyData()
	os.Exit(code)
}

// A frontier killed (SIGKILL) while its job is pending or running leaves
// the job to Slurm; a new process with the same spec finds it by name and
// follows it to its end instead of submitting it again.
func TestResumeFindsJob(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, "sleep 4; echo done >> out.txt")
	b, _ := json.Marshal(s)
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), firstProcessEnv+"="+string(b))
	proc.Stdout, proc.Stderr = os.Stderr, os.Stderr
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	var first []Info
	for deadline := time.Now().Add(time.Minute); len(first) == 0 || first[0].State != Running; {
		if time.Now().After(deadline) {
			proc.Process.Kill()
			t.Fatalf("the first process's job does not run: %+v", first)
		}
		time.Sleep(200 * time.Millisecond)
		var err error
		if first, err = tc.c.Find(context.Background(), s.Name, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()

	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.ID != first[0].ID || len(res.Attempts) != 1 {
		t.Fatalf("result %+v; the first process submitted job %s", res, first[0].ID)
	}
	jobs, err := tc.c.Find(context.Background(), s.Name, 0)
	if err != nil || len(jobs) != 1 {
		t.Errorf("jobs of %s: %+v, %v; want the one job", s.Name, jobs, err)
	}
	if out, _ := os.ReadFile(filepath.Join(s.Dir, "out.txt")); string(out) != "done\n" {
		t.Errorf("the job ran %q times", out)
	}
	// Once it has ended, a third process gets its result without
	// submitting it again either.
	again, err := tc.c.Run(context.Background(), s, nil)
	if err != nil || again.ID != res.ID || !again.OK() {
		t.Errorf("after the end: %+v, %v", again, err)
	}
}

func TestDescribeAndProbe(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	cl, err := tc.c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Nodes) != 1 || cl.Nodes[0].Name != tc.node || cl.Nodes[0].CPUs < 1 || cl.Nodes[0].MemoryMiB < 1 {
		t.Fatalf("nodes %+v", cl.Nodes)
	}
	if len(cl.Partitions) != 2 || cl.Partitions[0].Name != "frontier" || !cl.Partitions[0].Default || cl.Partitions[1].Name != "urgent" {
		t.Fatalf("partitions %+v", cl.Partitions)
	}
	if got := strings.Join(cl.Nodes[0].Partitions, ","); got != "frontier,urgent" {
		t.Errorf("the node's partitions: %s", got)
	}
	v, err := tc.c.Probe(context.Background(), t.TempDir(), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Visible || v.Node != tc.node {
		t.Errorf("probe: %+v", v)
	}
	t.Log(v.Detail)
}

func TestCheck(t *testing.T) {
	tc := newTestCluster(t)
	t.Parallel()
	dir := t.TempDir()
	ch := tc.c.Check(context.Background(), dir, Spec{})
	if len(ch.Missing) != 0 || ch.Error != "" || ch.Probe == nil || !ch.Probe.Visible {
		t.Fatalf("check %+v", ch)
	}
	lines := strings.Join(ch.Lines(), "\n")
	for _, want := range []string{
		"commands: sacct, sbatch, scancel, scontrol, sinfo, squeue",
		"partitions: frontier (default, up, 1 node, time limit infinite); urgent (up, 1 node,",
		"1 node with ",
		"run folder " + dir + ": visible on node " + tc.node,
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("the findings lack %q:\n%s", want, lines)
		}
	}
}

// slurmctld forgets a finished job MinJobAge after its end (10 s on the
// test cluster, checked every minute or so); the accounting database then
// answers for it, for Info, Find and Run alike.
func TestForgottenJobFromAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for slurmctld to forget a job: slow")
	}
	tc := newTestCluster(t)
	t.Parallel()
	s := tc.spec(t, "echo ran >> out.txt; exit 3")
	res, err := tc.c.Run(context.Background(), s, nil)
	if err != nil || res.State != Failed {
		t.Fatalf("%v: %+v", err, res)
	}
	var in Info
	for deadline := time.Now().Add(3 * time.Minute); ; {
		if in, err = tc.c.Info(context.Background(), res.ID); err != nil {
			t.Fatal(err)
		}
		if in.Source == "sacct" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld still knows job %s after 3 minutes", res.ID)
		}
		time.Sleep(2 * time.Second)
	}
	if in.ID != res.ID || in.Name != s.Name+".1" || in.State != Failed || in.ExitCode != 3 || in.Node != tc.node ||
		in.Comment != s.Comment || in.Start.IsZero() {
		t.Errorf("sacct's view %+v, want that of %+v", in, res.Info)
	}
	jobs, err := tc.c.Find(context.Background(), s.Name, time.Hour)
	if err != nil || len(jobs) != 1 || jobs[0].ID != res.ID || jobs[0].Source != "sacct" {
		t.Errorf("Find: %+v, %v", jobs, err)
	}
	again, err := tc.c.Run(context.Background(), s, nil)
	if err != nil || again.ID != res.ID || again.ExitCode != 3 || len(again.Attempts) != 1 {
		t.Errorf("Run again: %+v, %v; want job %s's end, not a new job", again, err, res.ID)
	}
	if out, _ := os.ReadFile(filepath.Join(s.Dir, "out.txt")); string(out) != "ran\n" {
		t.Errorf("the command ran %q", out)
	}
	if _, err := tc.c.Info(context.Background(), "999999"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("a job Slurm never had: %v, want ErrUnknownJob", err)
	}
}
