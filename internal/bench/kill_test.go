package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/benchtest"
	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// helperEnv names the database a helper process runs a bench run in.
const helperEnv = "FRONTIER_BENCH_HELPER_DB"

func TestMain(m *testing.M) {
	if db := os.Getenv(helperEnv); db != "" {
		os.Exit(runHelper(db))
	}
	os.Exit(m.Run())
}

// runHelper starts, or resumes, the run "killed" in db and runs it to its
// end: what TestResumeAfterKill kills at random moments.
func runHelper(db string) int {
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	// Opening a new store takes a while (it writes its disk reserve): the
	// test's clock starts at this line, so that its kills land in the run.
	fmt.Println("open")
	fx := &fixture{st: st}
	fx.suite, err = LoadDir("testdata/mini")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Evaluations take a little while, so that kills land inside them too.
	fx.ev = benchtest.NewEvaluator(st)
	fx.ev.Before = func(int64) { time.Sleep(40 * time.Millisecond) }
	fx.env = Env{Store: st, Evaluator: fx.ev, Tracks: fakeTracks(), WorkDir: filepath.Dir(db)}
	m, _ := coder(&benchtest.Coder{Speedup: 0.9, BreakEvery: 3, MissEvery: 4})
	var b *Bench
	if run, err := st.BenchRun(ctx, "killed"); err == nil {
		b, err = Resume(ctx, fx.env, fx.suite, run, Budget{}, m, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else if errors.Is(err, store.ErrNotFound) {
		cfg := Config{Scaffold: "aide", Model: modelRecord(m), Hints: "1", Seeds: 2, Nodes: 6, Seed: 99}
		b, err = New(ctx, fx.env, fx.suite, cfg, "killed", m, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sum, err := b.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if sum.StopReason != StopDone {
		fmt.Fprintln(os.Stderr, "stopped:", sum.StopReason, sum.StopDetail)
		return 3
	}
	return 0
}

// TestResumeAfterKill kills a bench run's process with SIGKILL at random
// moments, resumes it each time, and checks that it ends as a run that was
// never killed would: every attempt done with its full budget of nodes,
// every node settled, no program of an attempt evaluated to the end twice,
// every verdict backed by its evaluation, no evaluation left running, no
// model call left pending, and every score consistent with its nodes.
func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dozen processes")
	}
	db := filepath.Join(t.TempDir(), "bench.db")
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for round := 0; ; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+db)
		cmd.Stderr = os.Stderr
		out, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = w
		err = cmd.Start()
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		// Wait for the store to be open; then drain the rest.
		line, _ := bufio.NewReader(out).ReadString('\n')
		go func() { io.Copy(io.Discard, out); out.Close() }()
		if line != "open\n" {
			cmd.Wait()
			t.Fatalf("round %d: the helper did not open the store (%q)", round, line)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kills < 6 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("round %d: the helper failed: %v", round, err)
				}
				t.Logf("round %d finished before its kill", round)
				goto check
			case <-time.After(time.Duration(40+rng.IntN(250)) * time.Millisecond):
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				continue
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("the last round failed: %v", err)
		}
		break
	}
check:
	if kills == 0 {
		t.Fatal("the run was never killed: the test proves nothing")
	}
	t.Logf("killed %d times", kills)
	ctx := context.Background()
	st := storetest.SQLite(t, db)
	run, err := st.BenchRun(ctx, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if run.State != store.RunStopped || run.StopReason != StopDone || run.Sessions < 2 {
		t.Errorf("run %s: %s (%s) after %d sessions", run.Name, run.State, run.StopReason, run.Sessions)
	}
	as, err := st.BenchAttempts(ctx, run.ID)
	if err != nil || len(as) != 4 {
		t.Fatalf("%d attempts (%v), want 4", len(as), err)
	}
	for _, a := range as {
		nodes, err := st.BenchNodes(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != store.AttemptDone || len(nodes) != 7 || a.Nodes != 6 {
			t.Errorf("attempt %s seed %d: %s with %d nodes (%d counted), want done with 7", a.Task, a.Seed, a.State, len(nodes), a.Nodes)
		}
		evaluated := map[string]int{}
		best := a.StartMs
		for i, n := range nodes {
			if n.Seq != i || n.State != store.NodeDone {
				t.Errorf("attempt %d node %d: seq %d, state %s", a.ID, i, n.Seq, n.State)
			}
			if n.EvaluationID == 0 {
				continue
			}
			evaluated[n.ProgramHash]++
			e, err := st.Evaluation(ctx, n.EvaluationID)
			if err != nil || e.State != store.StateDone || e.ProgramHash != n.ProgramHash || e.Verdict != string(n.Verdict) || e.TrainTimeMs != n.TrainTimeMs {
				t.Errorf("node %d's outcome is not its evaluation's: %+v vs %+v (%v)", n.Seq, n, e, err)
			}
			if n.Verdict == runs.Acceptable && n.TrainTimeMs < best {
				best = n.TrainTimeMs
			}
		}
		for h, k := range evaluated {
			if k > 1 {
				t.Errorf("attempt %d evaluated program %.8s %d times", a.ID, h, k)
			}
		}
		if want := fsr.Of(a.StartMs, a.GoalMs, best); a.FSR != want || a.BestMs != best {
			t.Errorf("attempt %d: FSR %v and best %v, but its nodes give %v and %v", a.ID, a.FSR, a.BestMs, want, best)
		}
		calls, err := st.BenchCalls(ctx, a.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if c.State == store.CallPending {
				t.Errorf("call %d is still pending", c.ID)
			}
		}
	}
	evs, err := st.Evaluations(ctx, store.Filter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.State == store.StateRunning {
			t.Errorf("evaluation %d is still running", e.ID)
		}
	}
}
