//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/runner/runnertest"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// TestMain lets the test binary serve as the sandbox helper, as the
// frontier binary does with its hidden sandbox-exec command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		os.Exit(Helper(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// caps probes the machine once for all tests.
var caps = sync1(func() Capabilities { return Detect(context.Background()) })

func sync1[T any](f func() T) func() T {
	var (
		done bool
		v    T
	)
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

// wrap returns a sandboxing Local runner in mode, or skips the test when
// the mode is unavailable here.
func wrap(t *testing.T, mode Mode) *Runner {
	t.Helper()
	return wrapWith(t, mode, caps())
}

func wrapWith(t *testing.T, mode Mode, c Capabilities) *Runner {
	t.Helper()
	switch mode {
	case ModeBwrap:
		if !c.BwrapWorks() {
			testdeps.Missing(t, "bwrap", "bwrap cannot sandbox here: %s (CI installs it with scripts/install-deps.sh)", bwrapProblem(c))
		}
	case ModeLandlock:
		if c.LandlockABI == 0 {
			t.Skipf("no landlock here: %v", c.LandlockErr)
		}
	}
	r, err := Wrap(context.Background(), runner.NewLocal(nil), mode, Options{Capabilities: &c, NoSystemHidden: true})
	if err != nil {
		t.Fatalf("Wrap(%s): %v", mode, err)
	}
	if r.Mode() != mode {
		t.Fatalf("mode %s, want %s", r.Mode(), mode)
	}
	return r
}

var modes = []Mode{ModeBwrap, ModeLandlock, ModeNone}

func TestContract(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) { runnertest.Run(t, wrap(t, mode)) })
	}
}

// probeResult is what testdata/probe.py reports for one attempt.
type probeResult struct {
	OK  any    `json:"ok"`
	Err string `json:"err"`
}

func (p probeResult) String() string {
	if p.Err != "" {
		return "error " + p.Err
	}
	return fmt.Sprintf("ok %v", p.OK)
}

// TestPolicy runs a program that tries to write outside its folder, read
// hidden files, reach a server outside the sandbox and signal the runner,
// and checks what each mode allows.
func TestPolicy(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			got, outside := runProbe(t, r, false)
			denied := func(name string) bool { return got[name].Err != "" }
			check := func(cond bool, format string, args ...any) {
				t.Helper()
				if !cond {
					t.Errorf(format, args...)
				}
			}
			check(!denied("write_inside"), "cannot write its own folder: %s", got["write_inside"])
			check(got["read_sibling"].OK == "training data", "cannot read a file next to a hidden one: %s", got["read_sibling"])
			check(got["read_fd3"].OK == "VALIDATION-SECRET", "fd 3: %s", got["read_fd3"])
			check(denied("fd4"), "the program inherited a descriptor beyond its ExtraFiles: %s", got["fd4"])
			if mode == ModeNone {
				// The same program unconfined does everything, which shows
				// that the checks below can fail.
				for _, k := range []string{"write_outside", "host_port", "host_port_mptcp", "signal_runner", "loopback"} {
					check(!denied(k), "%s failed unconfined: %s", k, got[k])
				}
				check(got["read_hidden_file"].OK == "VALIDATION-SECRET", "unconfined read: %s", got["read_hidden_file"])
				check(got["udp_received"].OK == "leak", "UDP unconfined: %s", got["udp_received"])
				return
			}
			check(denied("write_outside"), "wrote outside its folder: %s", got["write_outside"])
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("%s exists", outside)
			}
			for _, k := range []string{"read_hidden_file", "read_in_hidden_dir"} {
				check(!strings.Contains(fmt.Sprint(got[k].OK), "SECRET"), "%s: read the secret: %s", k, got[k])
			}
			check(got["cap_eff"].OK == "0000000000000000", "capabilities left: %s", got["cap_eff"])
			abi := caps().LandlockABI
			if mode == ModeBwrap || abi >= 4 {
				check(denied("udp_received"), "a UDP datagram reached the outside: %s", got["udp_received"])
			}
			if mode == ModeBwrap || abi >= 6 {
				check(denied("signal_runner"), "could signal the runner: %s", got["signal_runner"])
			}
			switch {
			case mode == ModeBwrap:
				check(got["loopback"].OK == "ping", "loopback TCP inside the sandbox: %s", got["loopback"])
				check(denied("host_port") && denied("host_port_mptcp"), "reached a server outside the sandbox: %s, MPTCP %s", got["host_port"], got["host_port_mptcp"])
			case abi >= 4:
				// Landlock cannot tell loopback from elsewhere: without
				// LoopbackTCP all TCP is denied. MPTCP, which Landlock
				// does not filter, and UDP are refused by seccomp.
				check(denied("host_port") && denied("loopback"), "TCP not denied: host %s, loopback %s", got["host_port"], got["loopback"])
				check(denied("host_port_mptcp"), "MPTCP got through: %s", got["host_port_mptcp"])
				check(denied("host_udp"), "UDP got through: %s", got["host_udp"])
			}
		})
	}
}

// TestLandlockLoopbackTCP: a multi-process job under landlock keeps TCP,
// loopback included, since Landlock filters ports, not addresses.
func TestLandlockLoopbackTCP(t *testing.T) {
	got, _ := runProbe(t, wrap(t, ModeLandlock), true)
	if got["loopback"].OK != "ping" {
		t.Errorf("loopback TCP: %s", got["loopback"])
	}
	if got["write_outside"].Err == "" {
		t.Errorf("wrote outside: %s", got["write_outside"])
	}
	t.Logf("a server outside the sandbox: %s (TCP is open with LoopbackTCP under landlock)", got["host_port"])
}

// runProbe runs testdata/probe.py under r with a hidden file (also passed
// as fd 3), a hidden folder, a readable sibling and a TCP server outside.
// It returns the probe's findings and the path outside the run folder
// that it tried to write.
func runProbe(t *testing.T, r runner.Runner, loopbackTCP bool) (map[string]probeResult, string) {
	t.Helper()
	prog, err := filepath.Abs("testdata/probe.py")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	data := t.TempDir()
	secretDir := filepath.Join(data, "val")
	for p, body := range map[string]string{
		filepath.Join(data, "val.bin"):     "VALIDATION-SECRET",
		filepath.Join(data, "train.bin"):   "training data",
		filepath.Join(secretDir, "00.bin"): "SHARD-SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd3, err := os.Open(filepath.Join(data, "val.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd3.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	args, _ := json.Marshal(map[string]any{
		"host_udp": pc.LocalAddr().(*net.UDPAddr).Port,
		"outside":  outside, "hidden_file": filepath.Join(data, "val.bin"),
		"hidden_dir_file": filepath.Join(secretDir, "00.bin"), "sibling": filepath.Join(data, "train.bin"),
		"host_port": ln.Addr().(*net.TCPAddr).Port, "runner_pid": os.Getpid(),
	})
	job := runner.Job{
		Dir: t.TempDir(), Argv: []string{"python3", prog, string(args)}, Env: testEnv, Timeout: 30 * time.Second,
		Hidden: []string{filepath.Join(data, "val.bin"), secretDir}, ExtraFiles: []*os.File{fd3}, LoopbackTCP: loopbackTCP,
	}
	res, err := r.Run(context.Background(), job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != runner.StatusOK {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Message, res.Stderr.String())
	}
	if sr, ok := r.(*Runner); ok && res.Sandbox != string(sr.Mode()) {
		t.Errorf("result says sandbox %q, want %q", res.Sandbox, sr.Mode())
	}
	got := map[string]probeResult{}
	if err := json.Unmarshal([]byte(res.Stdout.String()), &got); err != nil {
		t.Fatalf("probe output %q: %v", res.Stdout.String(), err)
	}
	// What the UDP server outside received, if anything.
	_ = pc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 16)
	if n, _, err := pc.ReadFrom(buf); err == nil {
		got["udp_received"] = probeResult{OK: string(buf[:n])}
	} else {
		got["udp_received"] = probeResult{Err: err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		t.Logf("%-18s %s", k, got[k])
	}
	return got, outside
}

// No process of a job outlives it in any mode: a daemon that double-forks
// and leaves the session is killed (bwrap: its pid namespace; landlock and
// none: the helper, a child subreaper, kills what is left).
func TestNoSurvivors(t *testing.T) {
	script := "(setsid sh -c 'echo $$ > pids; exec sleep 1000' >/dev/null 2>&1 </dev/null &)\n" +
		"while [ ! -s pids ]; do sleep 0.01; done\n"
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			dir := t.TempDir()
			res, err := r.Run(context.Background(), runner.Job{Dir: dir, Argv: []string{"/bin/sh", "-c", script},
				Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 30 * time.Second})
			if err != nil || res.Status != runner.StatusOK {
				t.Fatalf("run: %v %+v", err, res)
			}
			if mode == ModeBwrap {
				return // the daemon's pid is its namespace's, which died with the job
			}
			b, err := os.ReadFile(filepath.Join(dir, "pids"))
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the daemon %d outlived its job", pid)
				}
			}
		})
	}
}

// A hidden folder that holds the job's own folder hides everything else in
// it; the job's folder and the visible paths stay reachable.
func TestHiddenRoots(t *testing.T) {
	for _, mode := range []Mode{ModeBwrap, ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			root := t.TempDir()
			own := filepath.Join(root, "runs", "mine")
			other := filepath.Join(root, "runs", "other")
			lib := filepath.Join(root, "home", "python", "lib")
			for _, d := range []string{own, other, lib} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(other, "secret"), []byte("s"), 0o644)
			os.WriteFile(filepath.Join(lib, "mod.py"), []byte("m"), 0o644)
			os.WriteFile(filepath.Join(root, "home", "key"), []byte("k"), 0o644)
			script := "cat " + filepath.Join(other, "secret") + " >/dev/null 2>&1 && echo other-read\n" +
				"cat " + filepath.Join(root, "home", "key") + " >/dev/null 2>&1 && echo key-read\n" +
				"cat " + filepath.Join(lib, "mod.py") + " >/dev/null 2>&1 && echo lib-read\n" +
				"echo x > out && echo own-written\n"
			res, err := r.Run(context.Background(), runner.Job{Dir: own, Argv: []string{"/bin/sh", "-c", script},
				Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 30 * time.Second,
				Hidden: []string{filepath.Join(root, "runs"), filepath.Join(root, "home")}, Visible: []string{lib}})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Stdout.String()
			if strings.Contains(out, "other-read") || strings.Contains(out, "key-read") ||
				!strings.Contains(out, "lib-read") || !strings.Contains(out, "own-written") {
				t.Errorf("stdout %q: want the own folder written and the library read, nothing else", out)
			}
		})
	}
}

// Under bwrap the run folder is a tmpfs of the job's disk quota: writing
// past it fails, and nothing written reaches the disk.
func TestDiskQuota(t *testing.T) {
	for _, mode := range []Mode{ModeBwrap, ModeLandlock, ModeNone} {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "given.txt"), []byte("from frontier"), 0o444)
			// The job fills its folder and ends at once (no time for a
			// look at intervals), or carries on after the write failed.
			for _, rest := range []string{"", "sleep 3; echo done"} {
				script := "cat given.txt >/dev/null || exit 9\n" +
					"dd if=/dev/zero of=big bs=1M count=64 2>/dev/null; " + rest + "\n"
				res, err := r.Run(context.Background(), runner.Job{Dir: dir, Argv: []string{"/bin/sh", "-c", script},
					Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 60 * time.Second, DiskBytes: 8 << 20})
				if err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(dir, "big"))
				// Under every mode the job is stopped at its limit, and says so.
				if res.Status != runner.StatusLimit || res.Limit != runner.LimitDisk {
					t.Errorf("%q: status %s limit %q: %s", rest, res.Status, res.Limit, res.Message)
				}
				if mode == ModeBwrap {
					if fi, err := os.Stat(filepath.Join(dir, "big")); err == nil {
						t.Errorf("the job's file reached the disk: %d bytes", fi.Size())
					}
				}
			}
		})
	}
}

// By default a job sees nothing of /tmp and the users' homes but its own
// folder and scratch: copies of data left there by anyone are out of
// reach. Its scratch folder is private and writable.
func TestSystemHidden(t *testing.T) {
	for _, mode := range []Mode{ModeBwrap, ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			c := caps()
			if mode == ModeBwrap && !c.BwrapWorks() || mode == ModeLandlock && c.LandlockABI == 0 {
				wrap(t, mode) // skips, or fails in CI
			}
			r, err := Wrap(context.Background(), runner.NewLocal(nil), mode, Options{Capabilities: &c})
			if err != nil {
				t.Fatal(err)
			}
			copyDir := t.TempDir()
			os.WriteFile(filepath.Join(copyDir, "val.bin"), []byte("s"), 0o644)
			scratch, err := os.MkdirTemp("", "fr-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(scratch)
			script := "cat " + filepath.Join(copyDir, "val.bin") + " >/dev/null 2>&1 && echo copy-read\n" +
				"ls /tmp >/dev/null 2>&1 && [ -n \"$(ls -A /tmp | grep -v fr-)\" ] && echo tmp-listed\n" +
				"echo x > $TMPDIR/t && echo scratch-written\n"
			res, err := r.Run(context.Background(), runner.Job{Dir: t.TempDir(), Argv: []string{"/bin/sh", "-c", script},
				Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=" + scratch}, Timeout: 30 * time.Second, Scratch: scratch, DiskBytes: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Stdout.String()
			if strings.Contains(out, "copy-read") || !strings.Contains(out, "scratch-written") {
				t.Errorf("stdout %q: want the copy in /tmp unreadable and the scratch folder writable", out)
			}
		})
	}
}

// What one job leaves in the user's keyring, in System V shared memory or
// in /dev/shm, a later job must not find: a program would hand its state
// to the next evaluation, or to its scorer, that way. Under bwrap each
// job has namespaces of its own; under landlock the calls are refused and
// a job with IsolateIPC has no /dev/shm.
func TestIPCIsolation(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	const script = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": (248, 250, 29), "aarch64": (217, 219, 194)}[os.uname().machine]
add_key, keyctl, shmget = nr
name = b"frontier-ipc-test-" + sys.argv[2].encode()
if sys.argv[1] == "put":
    k = libc.syscall(add_key, b"user", name, b"memo", 4, -4)
    print("key", "ok" if k > 0 else "errno %d" % ctypes.get_errno())
    s = libc.syscall(shmget, 0x5eed0000 + int(sys.argv[3]), 4096, 0o1666)
    print("shm", "ok" if s >= 0 else "errno %d" % ctypes.get_errno())
    try:
        open("/dev/shm/" + name.decode(), "w").write("memo")
        print("devshm ok")
    except OSError as e:
        print("devshm errno %d" % e.errno)
else:
    k = libc.syscall(keyctl, 10, -4, b"user", name, 0)
    print("key", "found" if k > 0 else "none")
    s = libc.syscall(shmget, 0x5eed0000 + int(sys.argv[3]), 0, 0)
    print("shm", "found" if s >= 0 else "none")
    try:
        print("devshm", "found" if open("/dev/shm/" + name.decode()).read() == "memo" else "none")
    except OSError:
        print("devshm none")
`
	for i, mode := range []Mode{ModeBwrap, ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			tag := fmt.Sprintf("%d-%d", os.Getpid(), i)
			defer os.Remove("/dev/shm/frontier-ipc-test-" + tag)
			run := func(verb string, isolate bool) string {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "ipc.py"), []byte(script), 0o444); err != nil {
					t.Fatal(err)
				}
				res, err := r.Run(context.Background(), runner.Job{Dir: dir, Argv: []string{py, "ipc.py", verb, tag, strconv.Itoa(i)},
					Env: testEnv, Timeout: 30 * time.Second, IsolateIPC: isolate})
				if err != nil || res.Status != runner.StatusOK {
					t.Fatalf("%s: %v %+v", verb, err, res)
				}
				return res.Stdout.String()
			}
			put := run("put", false)
			if mode == ModeLandlock && (!strings.Contains(put, "key errno") || !strings.Contains(put, "shm errno")) {
				t.Errorf("landlock let the job make a key or a shared memory segment:\n%s", put)
			}
			if got := run("get", true); strings.Contains(got, "found") {
				t.Errorf("a later job found what the first one left (first: %q):\n%s", put, got)
			}
		})
	}
}
