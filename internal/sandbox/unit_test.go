//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/runner"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, " BWRAP ": ModeBwrap, "landlock": ModeLandlock, "none": ModeNone} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("docker"); err == nil || !strings.Contains(err.Error(), "want auto, bwrap, landlock or none") {
		t.Errorf("ParseMode(docker): %v", err)
	}
}

func TestExplainBwrap(t *testing.T) {
	for _, c := range []struct{ stderr, want string }{
		{"bwrap: setting up uid map: Permission denied\n", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"},
		{"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted\n", "AppArmor restricts unprivileged user namespaces"},
		{"bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.\n", "unprivileged user namespaces are disabled"},
		{"bwrap: Unknown option --size\n", "too old"},
		{"bwrap: something else\n", "bwrap: something else"},
		{"", "exit status 1"},
	} {
		if got := explainBwrap(c.stderr, errors.New("exit status 1")).Error(); !strings.Contains(got, c.want) {
			t.Errorf("explainBwrap(%q) = %q, want it to contain %q", c.stderr, got, c.want)
		}
	}
}

func TestCapabilitiesLines(t *testing.T) {
	blocked := Capabilities{Bwrap: "/usr/bin/bwrap", BwrapVersion: "0.9.0", BwrapErr: errors.New("AppArmor blocks unprivileged user namespaces"),
		LandlockABI: 4, Cgroup: CgroupInfo{V2: true, Dir: "/sys/fs/cgroup/user.slice", Controllers: []string{"memory", "pids"}}}
	s := blocked.String()
	for _, want := range []string{"bwrap 0.9.0 (/usr/bin/bwrap): cannot sandbox here: AppArmor", "landlock: ABI 4: files and TCP ports",
		"mode auto: landlock", "not writable", "GPU devices: none"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	if blocked.Auto() != ModeLandlock {
		t.Errorf("auto = %q", blocked.Auto())
	}
	nothing := Capabilities{LandlockErr: errors.New("no landlock")}
	s = nothing.String()
	for _, want := range []string{"bwrap: not installed (Debian", "landlock: unavailable: no landlock", "runs are refused", "no cgroup v2"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	good := Capabilities{Bwrap: "/usr/bin/bwrap", BwrapVersion: "0.8.0", LandlockABI: 7, Devices: []string{"/dev/nvidia0", "/dev/nvidiactl"},
		Cgroup: CgroupInfo{V2: true, Dir: "/sys/fs/cgroup/frontier", Writable: true, Controllers: []string{"cpu", "memory", "pids"}}}
	s = good.String()
	for _, want := range []string{"works", "mode auto: bwrap", "exact limits", "/dev/nvidia0 /dev/nvidiactl"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	t.Logf("this machine:\n%s", caps())
}

func TestBwrapArgs(t *testing.T) {
	hiddenDir := t.TempDir()
	hiddenFile := filepath.Join(t.TempDir(), "val.bin")
	if err := os.WriteFile(hiddenFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := jobPolicy{dir: "/runs/1", writable: []string{"/cache"}, hidden: []string{hiddenFile, hiddenDir, "/cache/secret"},
		visible: []string{"/home/u/python"}}
	a := bwrapArgs("/usr/bin/bwrap", p, []string{"/dev/nvidia0"}, 1<<30, 4, "/usr/bin/frontier")
	s := strings.Join(a, " ")
	for _, want := range []string{
		"/usr/bin/bwrap --unshare-all --die-with-parent --cap-drop ALL --json-status-fd 4 --ro-bind / / --dev /dev --dev-bind-try /dev/nvidia0 /dev/nvidia0 --proc /proc",
		"--size 1073741824 --tmpfs /dev/shm",
		// Hidden roots first, then what is bound back inside them, then
		// what is hidden inside the writable paths.
		"--ro-bind /dev/null " + hiddenFile + " --tmpfs " + hiddenDir + " --ro-bind /home/u/python /home/u/python --ro-bind /usr/bin/frontier /usr/bin/frontier --bind /runs/1 /runs/1 --bind /cache /cache --ro-bind /dev/null /cache/secret",
		"--remount-ro " + hiddenDir + " --chdir /runs/1 --",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if a[len(a)-1] != "--" || slices.Contains(a, "--new-session") {
		t.Errorf("args %q", a)
	}
	if s := strings.Join(bwrapArgs("bwrap", p, nil, 0, 3, "/h"), " "); strings.Contains(s, "--size") {
		t.Errorf("--size without a memory limit: %s", s)
	}
}

func TestResolvePolicy(t *testing.T) {
	dir, cache, data := t.TempDir(), t.TempDir(), t.TempDir()
	val := filepath.Join(data, "val.bin")
	if err := os.WriteFile(val, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	job := runner.Job{Dir: dir, Writable: []string{cache, dir}, Hidden: []string{filepath.Join(link, "val.bin"), "/no/such/file"}}
	p, err := resolvePolicy(job, Options{Writable: []string{cache}, NoSystemHidden: true}, ModeBwrap)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.writable) != 1 || len(p.hidden) != 1 || p.hidden[0] != val {
		t.Errorf("writable %q (want %s once), hidden %q (want %s through the link)", p.writable, cache, p.hidden, val)
	}

	inDir := filepath.Join(dir, "val.bin")
	if err := os.WriteFile(inDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(data, "linked.bin")
	if err := os.Link(val, linked); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		job  runner.Job
		mode Mode
		want string
	}{
		{"relative writable", runner.Job{Dir: dir, Writable: []string{"cache"}}, ModeBwrap, "want an absolute path"},
		{"missing writable", runner.Job{Dir: dir, Writable: []string{"/no/such/dir"}}, ModeBwrap, "must exist before the run"},
		{"relative hidden", runner.Job{Dir: dir, Hidden: []string{"val.bin"}}, ModeBwrap, "want an absolute path"},
		{"hard link", runner.Job{Dir: dir, Hidden: []string{val}}, ModeBwrap, "2 hard links"},
		{"hides the run folder", runner.Job{Dir: dir, Hidden: []string{dir}}, ModeBwrap, "is the writable path"},
		{"hidden in the run folder", runner.Job{Dir: dir, Hidden: []string{inDir}}, ModeLandlock, "landlock cannot hide"},
		{"missing dir", runner.Job{Dir: filepath.Join(dir, "nope")}, ModeBwrap, "run folder"},
	} {
		if _, err := resolvePolicy(c.job, Options{}, c.mode); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// bwrap covers a hidden file inside the run folder.
	if _, err := resolvePolicy(runner.Job{Dir: dir, Hidden: []string{inDir}}, Options{}, ModeBwrap); err != nil {
		t.Errorf("hidden in the run folder under bwrap: %v", err)
	}
}

func TestWrapRefuses(t *testing.T) {
	inner := runner.NewLocal(nil)
	none := Capabilities{LandlockErr: errors.New("no landlock here")}
	if _, err := Wrap(context.Background(), inner, ModeAuto, Options{Capabilities: &none}); err == nil || !strings.Contains(err.Error(), "sandbox: none") {
		t.Errorf("auto with nothing available: %v", err)
	}
	broken := Capabilities{Bwrap: "/usr/bin/bwrap", BwrapErr: errors.New("setting up uid map: Permission denied")}
	if _, err := Wrap(context.Background(), inner, ModeBwrap, Options{Capabilities: &broken}); err == nil || !strings.Contains(err.Error(), "uid map") {
		t.Errorf("bwrap that does not work: %v", err)
	}
	if _, err := Wrap(context.Background(), inner, ModeLandlock, Options{Capabilities: &none}); err == nil || !strings.Contains(err.Error(), "no landlock here") {
		t.Errorf("landlock without landlock: %v", err)
	}
	if _, err := Wrap(context.Background(), inner, "docker", Options{Capabilities: &none}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := Wrap(context.Background(), nil, ModeNone, Options{}); err == nil {
		t.Error("nil runner accepted")
	}
	if r, err := Wrap(context.Background(), inner, ModeNone, Options{}); err != nil || r.Mode() != ModeNone {
		t.Errorf("none: %v", err)
	}
}

// TestSetupFailure: a sandbox that cannot be set up is an error naming
// the cause, not a result blamed on the program.
func TestSetupFailure(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Capabilities{Bwrap: fake, BwrapVersion: "0.8.0", LandlockABI: caps().LandlockABI}
	r, err := Wrap(context.Background(), runner.NewLocal(nil), ModeBwrap, Options{Capabilities: &c})
	if err != nil {
		t.Fatal(err)
	}
	job := runner.Job{Dir: t.TempDir(), Argv: []string{"sh", "-c", "echo never"}, Env: testEnv}
	if res, err := r.Run(context.Background(), job); err == nil || !strings.Contains(err.Error(), "Can't mount proc") {
		t.Errorf("fake bwrap failure: %v (result %s: %s)", err, res.Status, res.Message)
	}

	r.helper = []string{filepath.Join(dir, "no-such-helper"), HelperCommand}
	if _, err := r.Run(context.Background(), job); err == nil || !strings.Contains(err.Error(), "no-such-helper") {
		t.Errorf("missing helper: %v", err)
	}

	// A program that fails on its own is a result, even if it prints
	// what bwrap would print.
	r = wrap(t, ModeBwrap)
	job.Argv = []string{"sh", "-c", "echo 'bwrap: fake complaint' >&2; exit 1"}
	if res, err := r.Run(context.Background(), job); err != nil || res.Status != runner.StatusError {
		t.Errorf("program failure: %v, %s", err, res.Status)
	}
}

func TestSetupError(t *testing.T) {
	failed := runner.Result{Status: runner.StatusError, ExitCode: 1}
	failed.Stderr.Head = "some output\nbwrap: execvp x: No such file\n"
	if err := setupError(ModeLandlock, "error: landlock: boom\n", runner.Result{Status: runner.StatusError}); err == nil || !strings.Contains(err.Error(), "landlock: boom") {
		t.Errorf("helper error: %v", err)
	}
	if err := setupError(ModeBwrap, "", failed); err == nil || !strings.Contains(err.Error(), "bwrap: execvp x") {
		t.Errorf("bwrap error: %v", err)
	}
	if err := setupError(ModeBwrap, `{ "child-pid": 5 }`+"\n", failed); err != nil {
		t.Errorf("program error after the sandbox started: %v", err)
	}
	if err := setupError(ModeLandlock, "ok: landlock ABI 7\n", failed); err != nil {
		t.Errorf("program error after landlock: %v", err)
	}
	if err := setupError(ModeBwrap, "", runner.Result{Status: runner.StatusTimeout}); err != nil {
		t.Errorf("timeout before the status: %v", err)
	}
}

// TestHelperUsage: the helper refuses a malformed command line with exit
// code 125 and a reason.
func TestHelperUsage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{},
		{"--policy", "{", "--", "/bin/true"},
		{"--policy", `{"bogus":1}`, "--", "/bin/true"},
		{"--policy", "{}", "--", "true"},
		{"--policy", `{"status_fd":1}`, "--", "/bin/true"},
		{"--policy", `{"sigterm":"maybe"}`, "--", "/bin/true"},
	} {
		cmd := exec.Command(exe, append([]string{HelperCommand}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitSetup || !strings.Contains(string(out), "frontier sandbox-exec: ") {
			t.Errorf("helper %q: %v, %q", args, err, out)
		}
	}
	out, err := exec.Command(exe, HelperCommand, "--policy", "{}", "--", "/no/such/program").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitNotFound || !strings.Contains(string(out), "/no/such/program") {
		t.Errorf("missing program: %v, %q", err, out)
	}
}

// BenchmarkStart measures what each mode adds to starting a program: one
// run of /bin/true through the local runner.
func BenchmarkStart(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			c := caps()
			if mode == ModeBwrap && !c.BwrapWorks() || mode == ModeLandlock && c.LandlockABI == 0 {
				b.Skip("unavailable")
			}
			r, err := Wrap(context.Background(), runner.NewLocal(nil), mode, Options{Capabilities: &c})
			if err != nil {
				b.Fatal(err)
			}
			job := runner.Job{Dir: b.TempDir(), Argv: []string{"/bin/true"}, Env: testEnv}
			for b.Loop() {
				if res, err := r.Run(context.Background(), job); err != nil || res.Status != runner.StatusOK {
					b.Fatalf("%v %s", err, res.Message)
				}
			}
		})
	}
}
