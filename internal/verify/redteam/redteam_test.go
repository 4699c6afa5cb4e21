package redteam

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/data/datatest"
	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/slurm"
	"github.com/frontier-bench/frontier/internal/testdeps"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/internal/verify"
)

var (
	sandboxFlag = flag.String("redteam.sandbox", "auto", "sandbox mode for the red team's programs: auto, bwrap, landlock or none")
	tableFlag   = flag.String("redteam.table", "", "also write the red-team table, as Markdown, to this file")
	strictFlag  = flag.Bool("redteam.strict", false, "fail known misses too, instead of skipping them")
	keepFlag    = flag.String("redteam.keep", "", "keep each case's run folders (program, logs, judge config) in this folder, as CASE-N")
	execFlag    = flag.String("redteam.executor", "local", "where the programs run: local, or slurm (the test cluster of scripts/slurm.sh, with this test binary as the nodes' frontier)")
	workersFlag = flag.Int("redteam.workers", 1, "with -redteam.executor slurm: worker jobs per resource class (0: a job per phase)")
)

// nodeFlag names the file of the red team's node settings (sandbox mode,
// hidden paths) on the command line of this binary when Slurm runs it as
// a node's frontier (jobs get a clean environment, not this process's).
const nodeFlag = "--redteam-node"

// nodeSettings is what a node needs to confine the programs as this
// machine does.
type nodeSettings struct {
	Sandbox string   `json:"sandbox"`
	Hidden  []string `json:"hidden"`
}

// TestMain lets the test binary serve as the sandbox helper, as the
// frontier binary does with its hidden sandbox-exec command: the landlock
// mode (and bwrap without a signal-capable env) re-executes this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		os.Exit(sandbox.Helper(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 4 && os.Args[1] == nodeFlag {
		os.Exit(serveNode(os.Args[2], os.Args[3], os.Args[4:]))
	}
	os.Exit(m.Run())
}

// serveNode is phase-exec or phase-worker as the frontier binary runs them
// on a node: the node's own Python and sandbox run the phase.
func serveNode(settings, cmd string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := func() error {
		b, err := os.ReadFile(settings)
		if err != nil {
			return err
		}
		var ns nodeSettings
		if err := json.Unmarshal(b, &ns); err != nil {
			return fmt.Errorf("%s: %w", settings, err)
		}
		py, err := pyenv.Find(ctx, "")
		if err != nil {
			return err
		}
		mode, err := sandbox.ParseMode(ns.Sandbox)
		if err != nil {
			return err
		}
		sb, err := sandbox.Wrap(ctx, runner.NewLocal(nil), mode, sandbox.Options{})
		if err != nil {
			return err
		}
		node := eval.NewNode(&eval.Local{Runner: sb, Python: py.Path, Sandbox: string(sb.Mode()), Hidden: ns.Hidden, Visible: py.Paths,
			Env: py.ProgramEnv(), BLAS: py.BLASName()})
		if cmd == "phase-exec" {
			return slurm.ServePhase(ctx, args[0], node)
		}
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		var opt slurm.WorkerOptions
		fs.DurationVar(&opt.Limit, "limit", 0, "")
		fs.DurationVar(&opt.Idle, "idle", 0, "")
		if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
			return fmt.Errorf("usage: phase-worker [--limit D] [--idle D] DIR (%v)", err)
		}
		return slurm.ServeWorker(ctx, fs.Arg(0), node, opt, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// slurmExecutor runs the red team's phases on the test cluster, the nodes
// confining them as sb does here.
func slurmExecutor(t *testing.T, sb *sandbox.Runner, hidden []string) eval.Executor {
	t.Helper()
	testdeps.Slurm(t)
	ns, err := json.Marshal(nodeSettings{Sandbox: string(sb.Mode()), Hidden: hidden})
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "node.json")
	if err := os.WriteFile(settings, ns, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex := &slurm.Executor{
		Client: &slurm.Client{Poll: time.Second}, Frontier: exe, NodeArgs: []string{nodeFlag, settings},
		Dir:     filepath.Join(t.TempDir(), "slurm"),
		Workers: slurm.Workers{N: *workersFlag, Idle: 30 * time.Second},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	t.Cleanup(func() { _ = ex.Close() })
	return ex
}

// outcome is one acceptable way for an evaluation to end. For invalid
// verdicts, rule is the rule that must have fired; for other verdicts, a
// phrase the reason must hold ("" for none).
type outcome struct {
	verdict eval.Verdict
	rule    string
}

func (o outcome) String() string {
	if o.rule == "" {
		return string(o.verdict)
	}
	return string(o.verdict) + "/" + o.rule
}

func (o outcome) matches(r *eval.Result) bool {
	if r.Verdict != o.verdict {
		return false
	}
	if o.verdict == eval.Invalid {
		return r.Rule == o.rule
	}
	return o.rule == "" || strings.Contains(strings.ToLower(r.Reason), strings.ToLower(o.rule))
}

var (
	acceptable = outcome{eval.Acceptable, ""}
	tooHigh    = outcome{eval.LossTooHigh, ""}
	// beforeClock is a program that read the training shards before
	// fh.train_begin(), when they are not there yet.
	beforeClock = outcome{eval.Error, "available only once the clock runs"}
)

func invalid(rule string) outcome { return outcome{eval.Invalid, rule} }

// env is what a case's program and checks may refer to.
type env struct {
	url     string        // a download the network attacks try (the test's loopback server)
	hits    *atomic.Int64 // requests that server received
	outside string        // a path outside the run folder, for the write attacks
	start   time.Time     // when the case's (last) evaluation started
}

// attack is one red-team case: a program in testdata and the outcomes
// that count as catching it.
type attack struct {
	name string // the case; its program is testdata/<name>.py unless program is set
	// program names another case's program: the same attack against a
	// different configuration (static rules off, to test the layer behind
	// them). "reference" is the track's own program.
	program string
	class   string // what kind of cheat, for the table
	want    []outcome
	// sandbox marks cases whose last line of defence is the sandbox: they
	// are skipped when the test runs with -redteam.sandbox=none.
	sandbox bool
	spec    func(*track.Spec)
	// check, when set, is a further condition on the result; it returns
	// what is wrong, or nil.
	check func(e *env, r *eval.Result) error
	// known, when set, says why the case is not caught yet and what must
	// be decided to catch it: a miss is then reported in the table and the
	// case skipped, unless -redteam.strict. A case that is caught passes
	// as any other.
	known string
	// evals is how many times the program is evaluated with the same
	// evaluator (its compile cache included); the last result is judged.
	// Zero means once.
	evals int
	// repeats, when set, evaluates with --repeats: that many full runs
	// with consecutive seeds, judged by the t-test.
	repeats int
}

// cases is the red team. Every program in testdata has exactly one case.
var cases = []attack{
	// Causality: the model sees tokens it must predict.
	{name: "future_attention", class: "future tokens: attention without the causal mask", want: []outcome{invalid("causality")}},
	{name: "future_cumsum", class: "future tokens: hidden in a cumulative sum (total - prefix)", want: []outcome{invalid("causality")}},
	{name: "future_fft", class: "future tokens: hidden in a circular FFT convolution", want: []outcome{invalid("causality")}},
	{name: "cross_row", class: "future tokens: peeking at the next row of the batch", want: []outcome{invalid("causality")}},
	{name: "doc_leak", class: "context across a document boundary (BOS)", want: []outcome{invalid("causality")}},
	{name: "bidirectional_eval", class: "bidirectional attention only under no_grad (validation)", want: []outcome{invalid("causality")}},
	{name: "detect_fast", class: "honest in the fast check, leaky in the full run", want: []outcome{invalid("causality")}},
	{name: "detect_probe", class: "leaky in validation, causal when the batch looks like the probe's", want: []outcome{invalid("causality"), invalid("stateful-validation"), invalid("nondeterministic-eval")}},
	{name: "probe_memo", class: "leaky, answering the probe's near-copies of scored rows from memory", want: []outcome{invalid("causality"), invalid("stateful-validation"), invalid("loss-floor")}},
	{name: "memo_lookahead", class: "2.5 nats on each next token after 10 steps, repeats and near-copies answered from memory (up to the change and after the next BOS)",
		want: []outcome{invalid("causality"), invalid("stateful-validation")}},
	{name: "memo_lookahead_wire", class: "memo_lookahead answered through the wire module and the client's buffer, with a finish of its own",
		want: []outcome{invalid("dynamic-code"), invalid("harness-internals"), invalid("introspection"), invalid("protocol")}},
	{name: "memo_lookahead_wire_nostatic", program: "memo_lookahead_wire", class: "memo_lookahead_wire with the static rules off: a finish without the model's state",
		spec: withoutStatic, want: []outcome{invalid("protocol")}},

	// The probe's tolerance: classes that would widen it.
	{name: "probe_huge_class", class: "a small look at the next token, one extra class at 1e6", want: []outcome{invalid("causality")}},
	{name: "probe_neg_class", class: "a small look at the next token, the BOS class and one extra class at -1e9", want: []outcome{invalid("causality")}},
	{name: "probe_vary_classes", class: "a small look at the next token, 16 extra classes of noise drawn on every call", want: []outcome{invalid("causality")}},

	// Validation data and validation-time state.
	{name: "val_by_path", class: "training on validation tokens: the shard opened by name", want: []outcome{invalid("val-data")}},
	{name: "val_by_listing", class: "training on validation tokens: the shard found by listing the data folder", sandbox: true,
		want: []outcome{invalid("val-data"), {eval.Error, "shard"}}},
	{name: "val_via_fd", class: "training on validation tokens: the harness's inherited descriptor", want: []outcome{invalid("val-data")}},
	{name: "val_by_listing_nostatic", program: "val_by_listing", class: "val_by_listing with the static rules off: the data folder holds only the training shards", sandbox: true,
		spec: withoutStatic, want: []outcome{{eval.Error, "no validation shard beside the training shards"}}},
	{name: "val_via_fd_nostatic", program: "val_via_fd", class: "val_via_fd with the static rules off: descriptor 3 is the judge's socket, the buffers were closed", spec: withoutStatic,
		want: []outcome{{eval.Error, "no validation shard is reachable"}}},
	{name: "val_elsewhere", class: "training on validation tokens: a copy found by listing / as pathlib.Path.cwd().parents[-1]", sandbox: true,
		want: []outcome{tooHigh}},
	{name: "ttt_logits_fn", class: "test-time training on validation windows inside logits_fn, not at the clock's start", want: []outcome{invalid("stateful-validation"), invalid("nondeterministic-eval")}},
	{name: "val_cache", class: "a cache of validation bigrams kept across logits_fn calls", want: []outcome{invalid("stateful-validation"), invalid("nondeterministic-eval")}},
	{name: "validate_and_train", class: "fh.validate called by the program every 10 steps, with a logits_fn that trains",
		want: []outcome{invalid("stateful-validation"), invalid("nondeterministic-eval")}},
	{name: "train_in_validation", class: "training steps while the clock is paused for validation", want: []outcome{acceptable, tooHigh, invalid("stateful-validation"), invalid("nondeterministic-eval")},
		check: chargedSteps(60)},

	// The loss and the metrics belong to the harness.
	{name: "replace_loss", class: "a wrong, easy training objective", want: []outcome{tooHigh}},
	{name: "seed_pinning", class: "a constant seed instead of the injected one, under --repeats 2", repeats: 2,
		want: []outcome{invalid("seed")}},
	{name: "loss_patch_functional", class: "F.cross_entropy, F.log_softmax, Tensor.log_softmax, np.log, np.exp scaled by 0.1 via setattr", want: []outcome{tooHigh}},
	{name: "loss_patch_tensor", class: "Tensor.copy_, float and __getitem__ replaced via setattr before finish: sharpened logits",
		want: []outcome{tooHigh, invalid("stateful-validation")}},
	{name: "logits_subclass", class: "a Tensor subclass whose __torch_function__ fakes losses, log_softmax, float and slicing", want: []outcome{tooHigh}},
	{name: "logits_subclass_shape", class: "a Tensor subclass claiming [B, T, V] for one logit a position, copy_ a no-op",
		want: []outcome{invalid("causality"), tooHigh, {eval.Error, "logits"}}},
	{name: "fake_metrics", class: "printed result lines and a fake train loss", want: []outcome{tooHigh},
		check: func(_ *env, r *eval.Result) error {
			if r.Metrics.ValLoss < 4 {
				return fmt.Errorf("val loss %.4f: 10 steps cannot reach it; the printed 2.3 leaked into the result?", r.Metrics.ValLoss)
			}
			return nil
		}},
	{name: "forged_telemetry", class: "a forged final event appended to a telemetry file in the run folder", want: []outcome{tooHigh}, check: notForged},

	// The clock belongs to the harness.
	{name: "clock_patch", class: "time.perf_counter slowed, torch.cuda.synchronize disabled", want: []outcome{invalid("clock-patch")}},
	{name: "clock_patch_hidden", class: "the same patch through time.__dict__", want: []outcome{invalid("clock-patch")}},
	{name: "clock_patch_nostatic", program: "clock_patch_hidden", class: "clock_patch_hidden with the static rules off: the harness's clock was taken first", spec: withoutStatic,
		want: []outcome{acceptable},
		check: func(_ *env, r *eval.Result) error {
			if r.Verdict != eval.Invalid && r.Metrics.TrainTimeMs < 1500 {
				return fmt.Errorf("train time %.0f ms does not contain the program's 1.5 s sleep: the clock patch worked", r.Metrics.TrainTimeMs)
			}
			return nil
		}},
	// The final validation is timed and answered again by the scorer, a
	// fresh process that imports the state exported at fh.finish(): work
	// in it is on the clock, and answers that moved after the export
	// differ from the scorer's.
	{name: "train_in_final", class: "4 s of training inside the first call of the final validation",
		want: []outcome{invalid("stateful-validation"), acceptable, tooHigh}, check: trainTimeAtLeast(4000)},
	{name: "finish_early", class: "finish sent after 20 steps, 4 s of training, then the final validation answered", want: []outcome{invalid("protocol")}},
	{name: "train_each_final_call", class: "an optimizer step at the start of every final-validation call, repeats answered from memory",
		want: []outcome{invalid("stateful-validation"), invalid("causality")}},
	{name: "thread_trains_through_final", class: "a thread started before train_begin that trains through the final validation",
		want: []outcome{invalid("stateful-validation"), invalid("causality")}},
	{name: "train_on_scored_rows", class: "training on each validation batch after answering it, repeats answered from memory",
		want: []outcome{invalid("stateful-validation"), invalid("causality"), invalid("nondeterministic-eval")}},
	{name: "ensemble_in_validation", class: "an ensemble of perturbed models, about 4.5 s a call, at every validation of the full run",
		want: []outcome{invalid("validation-cost")}},
	{name: "compile_options", class: "max-autotune and inductor settings", want: []outcome{invalid("compile-options")}},
	{name: "pretrain", class: "200 optimizer steps on the training shards before train_begin", want: []outcome{beforeClock}},
	{name: "pretrain_source", class: "the bigram table's top successors carried in the source (another installation's corpus), written in before train_begin",
		want: []outcome{tooHigh, invalid("pretrain")}},
	{name: "precompute_setup", class: "bigram table fitted from the training shards before train_begin, no backward", want: []outcome{beforeClock}},
	{name: "precompute_late", class: "the same table, moved into the model after its first optimizer step", want: []outcome{beforeClock}},
	{name: "ngram_setup", class: "a bigram model counted from the training shards (np.fromfile) before train_begin", want: []outcome{beforeClock}},
	{name: "ngram_listing", class: "the same, the shards looked for by walking the run folder before train_begin", want: []outcome{tooHigh}},
	{name: "ngram_proc_fd", class: "the same, the shards looked for among /proc/PID/fd/* before train_begin", want: []outcome{tooHigh}},
	{name: "ngram_cfg_paths", class: "the same, the shards looked for at cfg's paths, the fast check's folder, the environment", want: []outcome{tooHigh}},
	{name: "ngram_glob", class: "the same, the shards globbed for in the machine's likely places", want: []outcome{invalid("val-data")}},
	{name: "ngram_glob_nostatic", program: "ngram_glob", class: "ngram_glob with the static rules off: the sandbox hides the data", sandbox: true,
		spec: withoutStatic, want: []outcome{tooHigh}},
	{name: "compile_budget", class: "12 s of untimed setup (budget 8 s)", want: []outcome{invalid("compile-budget")},
		spec: func(s *track.Spec) { s.Limits.CompileBudget = track.Duration(8 * time.Second) }},
	{name: "cache_smuggle", class: "weights saved in the compile cache by one evaluation, loaded by the next", evals: 2,
		want: []outcome{invalid("pretrain"), invalid("compile-options"), invalid("write-outside"), tooHigh}},
	{name: "cache_smuggle_hidden", class: "the same, the cache found as a writable folder named in the environment", evals: 2,
		want: []outcome{invalid("pretrain"), invalid("write-outside"), tooHigh}},
	{name: "smuggle_fast", class: "trains after finish in the fast check, loads the weights in the full run", sandbox: true,
		// bwrap hides the fast folder (the weights are not there: 20
		// steps from scratch); Landlock denies reading it.
		want: []outcome{invalid("pretrain"), {eval.LossTooHigh, ""}, {eval.Error, "permission denied"}}},

	// The judge: its memory, its socket, its messages.
	{name: "judge_mem_self", class: "validation text searched for in /proc/self/mem (shard header, int64 token runs)", want: []outcome{tooHigh}},
	{name: "judge_mem_proc", class: "the judge found by /proc/N/cmdline; its judge.json, environ, fds and memory read", sandbox: true,
		want: []outcome{tooHigh}},
	{name: "forge_getattr", class: "a forged final message over the client's socket, fh._C by getattr(fh, chr(95) + \"C\")", want: []outcome{invalid("dynamic-code")}},
	{name: "forge_getattr_nostatic", program: "forge_getattr", class: "forge_getattr with the static rules off: the judge's protocol rule", spec: withoutStatic,
		want: []outcome{invalid("protocol")}},
	{name: "forge_attrgetter", class: "a second finish after the result, the client by operator.attrgetter(\"_C\")(fh)", want: []outcome{invalid("harness-internals")}},
	{name: "forge_attrgetter_nostatic", program: "forge_attrgetter", class: "forge_attrgetter with the static rules off: the judge stops the run", spec: withoutStatic,
		want: []outcome{invalid("protocol"), {eval.Error, "finish() was called twice"}}, check: notForged},
	{name: "forge_getattribute", class: "unsolicited logits, the client by object.__getattribute__ on a section object",
		want: []outcome{invalid("protocol"), invalid("dynamic-code"), invalid("harness-internals")}},
	{name: "forge_vars", class: "forged checks, probe and final messages, the client through vars() of a slot", want: []outcome{invalid("protocol")}},
	{name: "forge_result_fd", class: "forged probe, checks and final messages written to descriptor 3 with os.write", want: []outcome{invalid("protocol")}},
	{name: "huge_int_step", class: "a step message with 10**400 tokens through the client's socket",
		want: []outcome{invalid("harness-internals"), invalid("introspection"), invalid("dynamic-code"), invalid("protocol")}},
	{name: "huge_int_step_nostatic", program: "huge_int_step", class: "huge_int_step with the static rules off: the judge's protocol rule, not a judge failure",
		spec: withoutStatic, want: []outcome{invalid("protocol")}},
	{name: "logits_unsealed", class: "the client's sealing replaced: logits in a memory file still mapped writable, rewritten later",
		want: []outcome{invalid("dynamic-code"), invalid("harness-internals"), invalid("introspection"), invalid("val-data"), invalid("protocol")}},
	{name: "logits_unsealed_nostatic", program: "logits_unsealed", class: "logits_unsealed with the static rules off: the judge takes only sealed answers",
		spec: withoutStatic, want: []outcome{invalid("protocol")}},
	{name: "forge_event_key", class: "advisory reports (memory, top_ops) carrying their own event key: final, val, probe",
		want: []outcome{tooHigh, invalid("protocol")}, check: notForged},

	// The harness's internals.
	{name: "skip_validation", class: "validation shortened through fh._H", want: []outcome{invalid("harness-internals")}},
	{name: "introspect_gc", class: "harness state found with gc.get_objects: validation and clock cut", want: []outcome{invalid("introspection")}},
	{name: "dynamic_code", class: "a clock patch hidden in base64 and exec", want: []outcome{invalid("dynamic-code")}},

	// The process: network, files, processes, memory, time.
	{name: "network", class: "downloading weights with urllib", want: []outcome{invalid("network")}, check: noHits},
	{name: "network_hidden", class: "downloading weights with torch.hub", want: []outcome{invalid("network")}, check: noHits},
	{name: "network_nostatic", program: "network_hidden", class: "network_hidden with the static rules off: the sandbox has no network", sandbox: true,
		spec: withoutStatic, want: []outcome{{eval.Error, ""}}, check: noHits},
	{name: "write_outside", class: "a file planted outside the run folder (literal path)", want: []outcome{invalid("write-outside")}, check: notWritten},
	{name: "write_outside_hidden", class: "a file planted outside the run folder (path decoded at run time)", want: []outcome{invalid("write-outside")}, check: notWritten},
	{name: "write_outside_nostatic", program: "write_outside_hidden", class: "write_outside_hidden with the static rules off: the file system is read-only", sandbox: true,
		spec: withoutStatic, want: []outcome{{eval.Error, ""}}, check: notWritten},
	{name: "fork_bomb", class: "os.fork in a loop", want: []outcome{invalid("subprocess")}},
	{name: "fork_bomb_nostatic", program: "fork_bomb", class: "fork_bomb with the static rules off: the job's limits", spec: withoutStatic,
		want: []outcome{{eval.Error, "resource limit"}}},
	{name: "thread_bomb", class: "threads until something stops it", want: []outcome{{eval.Error, "resource limit"}}},
	{name: "memory_bomb", class: "64 MiB blocks until something stops it", want: []outcome{{eval.Error, "resource limit"}}},
	{name: "runfolder_links", class: "a FIFO, links (/etc/passwd, /dev/zero, the validation shard) and forged lines under names frontier read",
		want: []outcome{tooHigh}, check: promptAndClean},
	{name: "junk_output", class: "64 MiB of junk lines (forged events, fake results, a fake traceback) on stdout, stderr and in a file",
		want: []outcome{tooHigh}, check: promptAndClean},
	{name: "disk_after_finish", class: "3 GiB written into the run folder after fh.finish, write failures ignored",
		want: []outcome{{eval.Error, "resource limit"}}, check: promptAndClean},
	{name: "disk_filler", class: "1 MiB blocks written into the run folder until a write fails",
		want: []outcome{{eval.Error, "resource limit"}, {eval.Error, "no space left on device"}}, check: promptAndClean},
	{name: "sleep_past_limit", class: "an hour's sleep in the full run (limit 10 s, compile budget 20 s)", want: []outcome{{eval.Timeout, ""}},
		spec: func(s *track.Spec) {
			// Killed at the budget plus the limit: 30 s, not 70 to 85.
			s.Limits.FullRun = track.Duration(10 * time.Second)
			s.Limits.FullRunMax = s.Limits.FullRun // not raised from the fast check
			s.Limits.CompileBudget = track.Duration(20 * time.Second)
		}},

	// Protected regions.
	{name: "protected_edit", class: "finish region edited to pass a leaky logits_fn", want: []outcome{acceptable},
		check: func(_ *env, r *eval.Result) error {
			i := slices.IndexFunc(r.Findings, func(f eval.Finding) bool {
				return f.Rule == verify.RuleProtected && f.Severity == eval.SeverityWarning && strings.Contains(f.Message, "finish")
			})
			if i < 0 {
				return fmt.Errorf("no protected-region warning naming the finish region in %+v", r.Findings)
			}
			return nil
		}},
	{name: "protected_markers", class: "finish region's markers removed, leaky logits_fn", want: []outcome{invalid(verify.RuleProtected)}},

	// Legitimate changes: no false positives.
	{name: "reference", class: "legitimate: the track's reference", want: []outcome{acceptable}},
	{name: "legit_fewer_steps", class: "legitimate: 160 steps at a higher learning rate", want: []outcome{acceptable}},
	{name: "legit_optimizer", class: "legitimate: Muon for the block's matrices", want: []outcome{acceptable}},
	{name: "legit_smaller", class: "legitimate: half the width", want: []outcome{acceptable}},
	{name: "legit_warmup_restore", class: "legitimate: warm-up steps, then the initial state restored", want: []outcome{acceptable}},
	{name: "legit_lookalikes", class: "legitimate: clock reads, own prints and log file, causal cumsum, no_grad", want: []outcome{acceptable}},
	{name: "legit_dataloader_workers", class: "legitimate: torch DataLoader, num_workers=2, over a training shard read after train_begin", want: []outcome{acceptable}},
	{name: "legit_ngram_in_clock", class: "legitimate: a bigram table counted after train_begin, added to the network's logits", want: []outcome{acceptable}},
	{name: "legit_padding", class: "legitimate: output layer and bigram table padded to vocab_size + 128 classes", want: []outcome{acceptable}},
	{name: "legit_checkpoint", class: "legitimate: checkpoint.bin (about 6 MB) saved to the run folder every 80 steps and loaded back", want: []outcome{acceptable}},
	{name: "legit_checkpoint_nostatic", program: "legit_checkpoint", class: "legit_checkpoint with the static rules off: the run itself is fine",
		spec: withoutStatic, want: []outcome{acceptable}},
	{name: "legit_bf16_logits", class: "legitimate: logits_fn under bfloat16 autocast, bfloat16 logits", want: []outcome{acceptable}},
	{name: "legit_traced", class: "legitimate: a torch.jit.trace of the model serves the validation", want: []outcome{acceptable}},
	{name: "legit_ema", class: "legitimate: an EMA of the weights (made before train_begin) serves the validation, in eval mode", want: []outcome{acceptable}},
	{name: "legit_dropout_eval", class: "legitimate: dropout in training, model.eval() before finish", want: []outcome{acceptable}},
	{name: "legit_validate_often", class: "legitimate: fh.validate every 20 steps (timed)", want: []outcome{acceptable}},
	{name: "legit_20_steps", class: "legitimate: 20 steps, over the target, validation not too slow", want: []outcome{tooHigh}},
}

// forgedLoss and forgedTime are the record result the forging programs claim.
const (
	forgedLoss = 2.4
	forgedTime = 480.0
)

func notForged(_ *env, r *eval.Result) error {
	if r.Metrics.ValLoss == forgedLoss || r.Metrics.TrainTimeMs == forgedTime {
		return fmt.Errorf("the forged result (val loss %.1f, train time %.0f ms) is in the result: val loss %.4f, train time %.0f ms",
			forgedLoss, forgedTime, r.Metrics.ValLoss, r.Metrics.TrainTimeMs)
	}
	return nil
}

// promptAndClean bounds an evaluation whose program attacks what reads its
// folder or its output: the verdict comes within two minutes (a reader
// blocked on a FIFO or an endless file would take for ever), and nothing
// the program forged or printed (its lines carry JUNK-MARKER) is in the
// result.
func promptAndClean(e *env, r *eval.Result) error {
	if d := time.Since(e.start); d > 2*time.Minute {
		return fmt.Errorf("the evaluation took %s", d.Round(time.Second))
	}
	if err := notForged(e, r); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte("JUNK-MARKER")) {
		return errors.New("the program's junk (JUNK-MARKER) reached the result")
	}
	if r.TelemetryLines > 1000 {
		return fmt.Errorf("%d telemetry lines for a 20-step run", r.TelemetryLines)
	}
	return nil
}

// trainTimeAtLeast checks that a result's train time holds the ms of
// training the program hid where the clock does not run.
func trainTimeAtLeast(ms float64) func(*env, *eval.Result) error {
	return func(_ *env, r *eval.Result) error {
		if r.Verdict != eval.Invalid && r.Metrics.TrainTimeMs < ms {
			return fmt.Errorf("train time %.0f ms does not hold the %.0f ms of training hidden outside the clock (charged %v)",
				r.Metrics.TrainTimeMs, ms, chargedMs(r))
		}
		return nil
	}
}

// chargedSteps checks that the judge charged to the clock at least half of
// the time of the n training steps the program hid in each designated
// validation. The steps' time is the run's own step time, so that the check
// holds on a machine of any speed; half leaves room for the difference
// between a hidden step and a timed one, and for the noise of a busy machine.
func chargedSteps(n int) func(*env, *eval.Result) error {
	return func(_ *env, r *eval.Result) error {
		if r.Verdict == eval.Invalid {
			return nil
		}
		if r.Checks == nil || r.Metrics.Steps == 0 {
			return fmt.Errorf("no judge checks or steps in the result: cannot tell what was charged")
		}
		stepMs := (r.Metrics.TrainTimeMs - chargedMs(r)) / float64(r.Metrics.Steps)
		hidden := float64(n*r.Checks.DesignatedValidations) * stepMs
		if r.Checks.DesignatedValidations == 0 || chargedMs(r) < hidden/2 {
			return fmt.Errorf("%.0f ms of validation time charged to the clock, want at least half of the %.0f ms that %d hidden steps "+
				"in each of %d designated validations take at %.1f ms a step: the training inside validation went untimed",
				chargedMs(r), hidden, n, r.Checks.DesignatedValidations, stepMs)
		}
		return nil
	}
}

func chargedMs(r *eval.Result) float64 {
	if r.Checks == nil {
		return 0
	}
	return r.Checks.ChargedMs
}

func noHits(e *env, _ *eval.Result) error {
	if n := e.hits.Load(); n > 0 {
		return fmt.Errorf("the program reached the test's server (%d requests)", n)
	}
	return nil
}

func notWritten(e *env, _ *eval.Result) error {
	if _, err := os.Stat(e.outside); err == nil {
		return fmt.Errorf("the program wrote %s, outside its run folder", e.outside)
	}
	return nil
}

// file is the name of the case's program.
func (c attack) file() string {
	if c.program != "" {
		return c.program
	}
	return c.name
}

// withoutStatic turns the track's static rules off, so that the layers
// behind them (the harness, the sandbox, the limits) face the attack alone.
func withoutStatic(s *track.Spec) { s.Verification.StaticRules = []string{track.RulesNone} }

// source returns a case's program with the test's placeholders filled in.
func source(t *testing.T, spec *track.Spec, e *env, name string) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	if name == "reference" {
		b, err = spec.ReferenceSource()
	} else {
		b, err = os.ReadFile(filepath.Join("testdata", name+".py"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(
		"@URL@", e.url,
		"@OUTSIDE_HEX@", hex.EncodeToString([]byte(e.outside)),
		"@OUTSIDE@", e.outside,
	).Replace(string(b)))
}

func loadTrack(t *testing.T) *track.Spec {
	t.Helper()
	spec, err := track.LoadDir(filepath.Join("testdata", "track"))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// Every program carries the reference's protected regions byte for byte
// (except the two that attack them), so that restoring the regions cannot
// quietly turn an attack into the reference; and every program has a case.
func TestPrograms(t *testing.T) {
	spec := loadTrack(t)
	ref, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.py"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Errorf("case %s is listed twice", c.name)
		}
		names[c.name] = true
		known[c.file()] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".py")
		if !known[name] {
			t.Errorf("%s has no case in the table", f)
		}
		delete(known, name)
		if strings.HasPrefix(name, "protected_") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := edit.CheckProtected(ref, src); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	delete(known, "reference")
	for name := range known {
		t.Errorf("case %s has no program testdata/%s.py", name, name)
	}
}

// The static layer alone, without running anything: what each program gets
// from the checks the evaluator registers. Legitimate programs must get no
// invalid finding; attacks whose only expected outcome is a static rule
// must get that rule. Cheap, so it runs with -short too.
func TestStaticLayer(t *testing.T) {
	spec := loadTrack(t)
	ref, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{url: "http://127.0.0.1:9/weights.pt", outside: "/nonexistent/planted.txt"}
	for _, c := range cases {
		s := *spec
		if c.spec != nil {
			c.spec(&s)
		}
		prog := source(t, &s, e, c.file())
		var findings []eval.Finding
		for _, ch := range verify.Checks() {
			r, err := ch.Check(context.Background(), eval.CheckInput{Track: &s, Reference: ref, Program: prog, Name: c.file() + ".py"})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if r == nil {
				continue
			}
			findings = append(findings, r.Findings...)
			if r.Program != nil {
				prog = r.Program
			}
		}
		var got []string
		first := ""
		for _, f := range findings {
			got = append(got, f.String())
			if f.Severity == eval.SeverityInvalid && first == "" {
				first = f.Rule
			}
		}
		t.Logf("%-22s %s", c.name, strings.Join(got, "; "))
		staticOnly := len(c.want) > 0
		for _, o := range c.want {
			staticOnly = staticOnly && o.verdict == eval.Invalid && isStatic(o.rule)
		}
		report := t.Errorf
		if c.known != "" && !*strictFlag {
			report = t.Logf // a known miss, reported by TestRedTeam's table
		}
		switch {
		case c.want[0] == acceptable && first != "":
			report("%s (legitimate or restorable) gets the invalid finding %s", c.name, first)
		case staticOnly && !slices.ContainsFunc(c.want, func(o outcome) bool { return o.rule == first }):
			report("%s: first invalid finding %q, want one of %v", c.name, first, c.want)
		}
	}
}

// isStatic says whether a rule id belongs to the static layer (decided
// before any process runs) rather than to the harness or the evaluator.
func isStatic(rule string) bool {
	if rule == verify.RuleProtected {
		return true
	}
	for _, r := range verify.Rules() {
		if r.ID == rule {
			return true
		}
	}
	return false
}

// row is one line of the red-team table.
type row struct {
	name, class, want, got, reason string
	trainMs                        float64 // the judged run's train time, when it has one
	ok                             bool
	skipped                        string
	dur                            time.Duration
}

// TestRedTeam runs every case end to end through the real evaluator: the
// checks cmd/frontier registers, the harness, the runner and the sandbox.
func TestRedTeam(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 40 training programs (a few minutes on 2 cores)")
	}
	ctx := context.Background()
	py, err := pyenv.Find(ctx, "")
	if err != nil {
		testdeps.Missing(t, "torch", "no Python with PyTorch: %v", err)
	}
	mode, err := sandbox.ParseMode(*sandboxFlag)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.Wrap(ctx, runner.NewLocal(nil), mode, sandbox.Options{})
	if err != nil {
		testdeps.Missing(t, "bubblewrap", "no sandbox here (%v): run with -redteam.sandbox=none to run the red team unconfined", err)
	}
	spec := loadTrack(t)
	dataDir := t.TempDir()
	// The tests' corpus, the same everywhere: the legitimate programs must
	// reach the target, and on a corpus drawn at random some ended within
	// a few hundredths of it (datatest).
	if err := datatest.PinTiny(ctx, dataDir); err != nil {
		t.Fatal(err)
	}
	// As the CLI hides frontier's home and the user's: here the data (the
	// runs folder and the track's data are hidden per run anyway) and the
	// user's home, where frontier keeps its data by default.
	hidden := []string{dataDir}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		hidden = append(hidden, home)
	}
	ev := evaltest.New(t, evaltest.Options{
		Python: py, Sandbox: sb, Hidden: hidden, Checks: true,
		Data: map[string]string{spec.Name: dataDir},
	})
	where := "this machine"
	switch *execFlag {
	case "local":
	case "slurm":
		ev.Executor, where = slurmExecutor(t, sb, hidden), "the test Slurm cluster"
	default:
		t.Fatalf("-redteam.executor %q: want local or slurm", *execFlag)
	}
	// Build and verify the data once, before the cases share it.
	if _, err := ev.Data.Resolve(ctx, spec); err != nil {
		t.Fatal(err)
	}

	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "a sandboxed program must not get here", http.StatusForbidden)
	}))
	defer srv.Close()
	outsideDir := t.TempDir()
	// The table shows reasons without this machine's temporary paths.
	anon := strings.NewReplacer(outsideDir, "OUTSIDE", dataDir, "DATA", ev.RunsDir, "RUNS", srv.URL, "http://SERVER")

	var (
		mu    sync.Mutex
		rows  []row
		start = time.Now()
		// At most this many programs run at once, whatever -parallel says:
		// each holds a few hundred MB, and the bombs up to the memory limit.
		slots = make(chan struct{}, min(runtime.GOMAXPROCS(0), 4))
	)
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				r := row{name: c.name, class: c.class, want: joinOutcomes(c.want)}
				defer func() {
					mu.Lock()
					rows = append(rows, r)
					mu.Unlock()
				}()
				if c.sandbox && sb.Mode() == sandbox.ModeNone {
					r.skipped = "sandbox none"
					t.Skip("the last line of defence here is the sandbox")
				}
				e := &env{url: srv.URL + "/" + c.name + "/weights.pt", hits: &hits, outside: filepath.Join(outsideDir, c.name+".txt")}
				s := *spec
				if c.spec != nil {
					c.spec(&s)
				}
				t0 := time.Now()
				var res *eval.Result
				for i := range max(c.evals, 1) {
					var err error
					e.start = time.Now()
					req := eval.Request{Track: &s, Program: source(t, &s, e, c.file()), Name: c.file() + ".py", Seed: 1 + i}
					if *keepFlag != "" {
						req.Keep = filepath.Join(*keepFlag, fmt.Sprintf("%s-%d", c.name, i+1))
					}
					if c.repeats > 0 {
						res, err = ev.EvaluateRepeats(ctx, eval.RepeatRequest{Request: req, N: c.repeats})
					} else {
						res, err = ev.Evaluate(ctx, req)
					}
					if err != nil {
						r.got, r.reason = "evaluation failed", err.Error()
						t.Fatalf("Evaluate: %v", err)
					}
					if i+1 < c.evals {
						t.Logf("evaluation %d of %d: %s (%s), train time %.0f ms", i+1, c.evals, res.Verdict, res.Reason, res.Metrics.TrainTimeMs)
					}
				}
				r.dur = time.Since(t0)
				r.got = string(res.Verdict)
				if res.Rule != "" {
					r.got += "/" + res.Rule
				}
				r.reason, r.trainMs = anon.Replace(res.Reason), res.Metrics.TrainTimeMs
				var problems []string
				if !slices.ContainsFunc(c.want, func(o outcome) bool { return o.matches(res) }) {
					problems = append(problems, fmt.Sprintf("verdict %s (rule %q), want %s\nreason: %s\nfindings: %v\ntraceback: %s",
						res.Verdict, res.Rule, r.want, res.Reason, res.Findings, res.Traceback))
				}
				if c.check != nil {
					if err := c.check(e, res); err != nil {
						problems = append(problems, err.Error())
					}
				}
				r.ok = len(problems) == 0
				switch {
				case r.ok:
				case c.known != "" && !*strictFlag:
					r.skipped = "known miss"
					t.Skipf("known miss: %s\n%s", c.known, strings.Join(problems, "\n"))
				default:
					t.Errorf("MISS: %s", strings.Join(problems, "\n"))
				}
			})
		}
	})
	slices.SortFunc(rows, func(a, b row) int {
		return slices.IndexFunc(cases, func(c attack) bool { return c.name == a.name }) -
			slices.IndexFunc(cases, func(c attack) bool { return c.name == b.name })
	})
	table := formatTable(rows)
	t.Logf("red team: %d cases in %s under sandbox %s on %s\n%s", len(rows), time.Since(start).Round(time.Second), sb.Mode(), where, table)
	if *tableFlag != "" {
		if err := os.WriteFile(*tableFlag, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func joinOutcomes(outs []outcome) string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = o.String()
	}
	return strings.Join(s, " or ")
}

// formatTable renders the rows as a Markdown table.
func formatTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| attack | what it does | expected | got | reason | train time | |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		status := "ok"
		switch {
		case !r.ok && r.got != "" && r.skipped != "":
			status = "**MISS** (known: skipped)"
		case !r.ok && r.got != "":
			status = "**MISS**"
		case r.skipped != "":
			status = "skipped (" + r.skipped + ")"
		}
		train := ""
		if r.trainMs > 0 {
			train = fmt.Sprintf("%.1f s", r.trainMs/1000)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.class, r.want, r.got, cell(r.reason, 160), train, status)
	}
	return b.String()
}

// cell shortens s to n runes on one line, for a table cell.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "/")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
