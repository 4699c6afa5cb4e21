package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Capabilities is what this machine offers for confining programs, as
// found by [Detect].
type Capabilities struct {
	// Bwrap is the bubblewrap program found ("" when it is not
	// installed) and BwrapVersion its version. BwrapErr says why it
	// cannot sandbox here; nil when a trial sandbox worked.
	Bwrap        string
	BwrapVersion string
	BwrapErr     error

	// LandlockABI is the kernel's Landlock ABI version; 0 when Landlock
	// is unavailable, for the reason in LandlockErr.
	LandlockABI int
	LandlockErr error

	// Cgroup says whether per-job cgroups can enforce the limits
	// exactly (runner.Local.CgroupParent).
	Cgroup CgroupInfo

	// Devices are the GPU device nodes passed through to programs.
	Devices []string

	// Env is a coreutils env that can set signal dispositions
	// (--ignore-signal, --default-signal: coreutils 8.31 and later),
	// which starts faster than the helper around bwrap; "" when there is
	// none and the helper is used.
	Env string
}

// CgroupInfo describes this process's cgroup.
type CgroupInfo struct {
	V2          bool     // the unified hierarchy (cgroup v2) is mounted at /sys/fs/cgroup
	Dir         string   // this process's cgroup v2 directory, when V2
	Writable    bool     // child cgroups can be created in Dir (root, or delegated)
	Controllers []string // controllers available in Dir
}

// BwrapWorks reports whether bubblewrap can sandbox programs here.
func (c Capabilities) BwrapWorks() bool { return c.Bwrap != "" && c.BwrapErr == nil }

// Auto is the mode ModeAuto resolves to: bwrap when it works, landlock
// when the kernel has it, and "" when there is nothing to confine with.
func (c Capabilities) Auto() Mode {
	switch {
	case c.BwrapWorks():
		return ModeBwrap
	case c.LandlockABI > 0:
		return ModeLandlock
	}
	return ""
}

// Lines describes the capabilities for humans, one finding a line, as
// frontier doctor prints them.
func (c Capabilities) Lines() []string {
	var lines []string
	switch {
	case c.Bwrap == "":
		lines = append(lines, "bwrap: not installed ("+installHint+")")
	case c.BwrapErr != nil:
		lines = append(lines, fmt.Sprintf("bwrap %s (%s): cannot sandbox here: %v", c.BwrapVersion, c.Bwrap, c.BwrapErr))
	default:
		lines = append(lines, fmt.Sprintf("bwrap %s (%s): works (namespaces, read-only file system, loopback-only network)", c.BwrapVersion, c.Bwrap))
	}
	if c.LandlockABI > 0 {
		lines = append(lines, "landlock: ABI "+fmt.Sprint(c.LandlockABI)+": "+landlockCovers(c.LandlockABI))
	} else {
		lines = append(lines, fmt.Sprintf("landlock: unavailable: %v", c.LandlockErr))
	}
	switch c.Auto() {
	case ModeBwrap:
		lines = append(lines, "mode auto: bwrap")
	case ModeLandlock:
		lines = append(lines, "mode auto: landlock (confines less than bwrap: see docs/sandbox.md)")
	default:
		lines = append(lines, "mode auto: nothing available, so runs are refused; install bubblewrap, or set sandbox: none to run unconfined (not for untrusted programs)")
	}
	lines = append(lines, "limits: "+c.Cgroup.describe())
	if len(c.Devices) > 0 {
		lines = append(lines, "GPU devices passed through: "+strings.Join(c.Devices, " "))
	} else {
		lines = append(lines, "GPU devices: none found")
	}
	return lines
}

// String is Lines joined by newlines.
func (c Capabilities) String() string { return strings.Join(c.Lines(), "\n") }

func landlockCovers(abi int) string {
	switch {
	case abi >= 6:
		return "files, TCP ports, signals and abstract sockets"
	case abi >= 4:
		return "files and TCP ports"
	default:
		return "files only (no network restriction before ABI 4, Linux 6.7)"
	}
}

func (c CgroupInfo) describe() string {
	const measured = "the runner measures memory and tasks every 100ms"
	switch {
	case !c.V2:
		return measured + " (no cgroup v2 unified hierarchy here; with one, a delegated cgroup gives exact limits)"
	case !c.Writable:
		return measured + " (cgroup v2 " + c.Dir + " is not writable by this user; run frontier in a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes, for exact limits)"
	case !slices.Contains(c.Controllers, "memory") || !slices.Contains(c.Controllers, "pids"):
		return measured + " (cgroup v2 " + c.Dir + " lacks the memory or pids controller: has " + strings.Join(c.Controllers, ",") + ")"
	default:
		return "cgroup v2 " + c.Dir + " is writable with memory and pids: set the runner's cgroup parent to an empty child of it for exact limits"
	}
}

const installHint = "Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap"

// Detect finds what this machine offers: it runs a trial bubblewrap
// sandbox (a few milliseconds), asks the kernel for its Landlock ABI, and
// reads the cgroup and device files.
func Detect(ctx context.Context) Capabilities { return detect(ctx, "bwrap") }

func detect(ctx context.Context, bwrap string) Capabilities {
	var c Capabilities
	c.LandlockABI, c.LandlockErr = landlockABI()
	c.Cgroup = detectCgroup()
	c.Devices = gpuDevices()
	c.Env = signalEnv(ctx)
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return c
	}
	if path, err = filepath.Abs(path); err != nil {
		c.BwrapErr = err
		return c
	}
	c.Bwrap = path
	c.BwrapVersion, c.BwrapErr = probeBwrap(ctx, path)
	return c
}

// probeBwrap runs a sandbox with the options Run uses and explains a
// failure.
func probeBwrap(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	version := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap"))
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return version, err
	}
	defer null.Close()
	cmd := exec.CommandContext(ctx, path, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--json-status-fd", "3",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", "1048576", "--tmpfs", "/dev/shm", "--", "true")
	cmd.ExtraFiles = []*os.File{null}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// When bwrap fails half-way, the sandbox's init can outlive it and
	// hold stderr open: kill the whole group, and do not wait for stderr
	// for long.
	cmd.SysProcAttr = newGroupAttr()
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		killGroup(cmd.Process.Pid)
	}
	if err != nil {
		return version, explainBwrap(stderr.String(), err)
	}
	return version, nil
}

// signalEnv returns the path of an env program that understands
// --ignore-signal and --default-signal, or "".
func signalEnv(ctx context.Context) string {
	path, err := exec.LookPath("env")
	if err != nil || strings.Contains(path, "=") {
		return ""
	}
	if path, err = filepath.Abs(path); err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if exec.CommandContext(ctx, path, "--ignore-signal=TERM", "--default-signal=TERM", "true").Run() != nil {
		return ""
	}
	return path
}

// explainBwrap turns bubblewrap's complaint into a cause and a fix.
func explainBwrap(stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = err.Error()
	}
	switch {
	case strings.Contains(msg, "setting up uid map") || strings.Contains(msg, "RTM_NEWADDR") || apparmorRestrictsUserns():
		// Ubuntu 24.04 and later: AppArmor lets the namespace be made
		// but denies the capabilities bwrap then needs in it.
		return fmt.Errorf("%s: AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later); allow them with "+
			"`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for bwrap (docs/sandbox.md)", msg)
	case strings.Contains(msg, "No permissions to creat") || strings.Contains(msg, "Operation not permitted") ||
		strings.Contains(msg, "new namespace failed"):
		return fmt.Errorf("%s: unprivileged user namespaces are disabled (check sysctl kernel.unprivileged_userns_clone and user.max_user_namespaces, or the container's seccomp policy)", msg)
	case strings.Contains(msg, "Unknown option") || strings.Contains(msg, "unrecognized option"):
		return fmt.Errorf("%s: this bubblewrap is too old (0.6 or later is needed for --size)", msg)
	}
	return errors.New(msg)
}

// apparmorRestrictsUserns reads Ubuntu's switch for the AppArmor
// restriction of unprivileged user namespaces.
func apparmorRestrictsUserns() bool {
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	return err == nil && strings.TrimSpace(string(b)) == "1" && os.Geteuid() != 0
}

// gpuDevices lists the device nodes GPU programs open: NVIDIA's (nvidiactl,
// nvidia-uvm, nvidiaN, the nvidia-caps folder for MIG) and AMD's (kfd and
// the dri render nodes).
func gpuDevices() []string {
	var devs []string
	nv, _ := filepath.Glob("/dev/nvidia*")
	devs = append(devs, nv...)
	for _, p := range []string{"/dev/kfd", "/dev/dri"} {
		if _, err := os.Stat(p); err == nil {
			devs = append(devs, p)
		}
	}
	slices.Sort(devs)
	return devs
}
