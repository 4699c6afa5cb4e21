package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockABI returns the Landlock ABI version of the running kernel, 0
// with the reason when Landlock is not available.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		return int(v), nil
	case errno == unix.ENOSYS:
		return 0, errors.New("this kernel has no Landlock (Linux 5.13 or later is needed)")
	case errno == unix.EOPNOTSUPP:
		return 0, errors.New("the kernel has Landlock but it is not enabled: add landlock to the lsm= boot parameter (see /sys/kernel/security/lsm)")
	default:
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
}

// Access rights, by what they apply to.
const (
	fileRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)
	readRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	// writeRights is everything but "refer" (added where the kernel
	// knows it: asking for it on ABI 1 disables Landlock entirely in
	// best-effort mode), ioctl on devices and connecting to Unix sockets
	// made outside the sandbox.
	writeRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate)
	deviceRights = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSIoctlDev | ll.AccessFSReadDir)
)

// stdDevices are the devices every program may read and write. The rest
// of /dev is not readable: as root, a raw disk would give away hidden
// files.
var stdDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// applyLandlock restricts this process, and what it executes, to p. It
// returns a description of what the kernel enforces.
func applyLandlock(p landlockPolicy) (string, error) {
	abi, err := landlockABI()
	if err != nil {
		return "", err
	}
	write := writeRights
	if abi >= 2 {
		write |= ll.AccessFSRefer
	}
	rules, err := readRules(p.Hide)
	if err != nil {
		return "", err
	}
	rules = append(rules, pathRules(readRights, p.Read...)...)
	rules = append(rules, pathRules(write, p.Write...)...)
	if !p.NoShm {
		rules = append(rules, pathRules(write, "/dev/shm")...)
	}
	rules = append(rules, pathRules(landlock.AccessFSSet(ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSTruncate), stdDevices...)...)
	rules = append(rules, pathRules(deviceRights, p.Devices...)...)

	net := landlock.AccessNetSet(ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP)
	if p.DenyTCP {
		net |= landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	}
	cfg := landlock.Config{
		HandledAccessFS:  landlock.V11.HandledAccessFS,
		HandledAccessNet: net,
		Scoped:           landlock.V11.Scoped,
	}.BestEffort()
	if err := dropCapabilities(); err != nil {
		return "", err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return "", err
	}
	desc := describeLandlock(abi, p.DenyTCP)
	// Without namespaces of its own, a job shares the user's keyrings and
	// the host's System V IPC objects with every other process of the
	// user, also after it ended: a way to hand state from one evaluation
	// (or from a program to its scorer) to the next. Refused.
	switch ok, err := restrictIPC(); {
	case err != nil:
		return "", err
	case ok:
		desc += ", keyrings and System V IPC refused (seccomp)"
	default:
		desc += ", keyrings and System V IPC not refused on " + runtime.GOARCH
	}
	if p.NoShm {
		desc += ", no /dev/shm"
	}
	if p.DenyTCP && abi >= 4 {
		ok, err := restrictSockets()
		switch {
		case err != nil:
			return "", err
		case ok:
			desc += ", MPTCP, UDP and io_uring refused (seccomp)"
		default:
			desc += ", MPTCP and UDP not refused on " + runtime.GOARCH
		}
	}
	return desc, nil
}

// describeLandlock says what Landlock enforces at this ABI version.
func describeLandlock(abi int, denyTCP bool) string {
	parts := []string{"landlock ABI " + strconv.Itoa(abi) + ": files"}
	switch {
	case abi < 4:
		parts = append(parts, "network open (ABI 4 restricts TCP)")
	case denyTCP:
		parts = append(parts, "TCP denied")
	default:
		parts = append(parts, "TCP open (the job needs loopback)")
	}
	if abi >= 10 {
		parts = append(parts, "UDP denied")
	}
	if abi >= 5 {
		parts = append(parts, "device ioctls limited to the GPUs")
	}
	if abi >= 6 {
		parts = append(parts, "no signals or abstract sockets outside")
	}
	return strings.Join(parts, ", ")
}

// pathRules grants rights on each existing path, limited to the file
// rights for what is not a directory. Missing paths are skipped.
func pathRules(rights landlock.AccessFSSet, paths ...string) []landlock.Rule {
	var rules []landlock.Rule
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		r := rights
		if !fi.IsDir() {
			r &= fileRights
		}
		if r != 0 {
			// A path gone by the time the ruleset is built (another
			// process's temporary folder next to a hidden one) grants
			// nothing and fails nothing.
			rules = append(rules, landlock.PathAccess(r, p).IgnoreIfMissing())
		}
	}
	return rules
}

// readRules grants listing every directory and reading every file except
// under /dev (see stdDevices) and the hidden paths. Landlock only grants,
// so reading "everything but X" means granting every sibling of X and of
// each of X's ancestors: the folders on the way down stay listable (a
// hidden file's name is visible, its contents are not), and files that
// appear in those folders after the start are not readable.
func readRules(hide []string) ([]landlock.Rule, error) {
	hidden := map[string]bool{}
	onPath := map[string]bool{"/": true} // ancestors of excluded paths
	for _, h := range append([]string{"/dev"}, hide...) {
		h = filepath.Clean(h)
		if !filepath.IsAbs(h) || h == "/" {
			return nil, fmt.Errorf("cannot hide %q: want an absolute path below /", h)
		}
		hidden[h] = true
		for d := filepath.Dir(h); d != "/"; d = filepath.Dir(d) {
			onPath[d] = true
		}
	}
	covers := func(target string) bool {
		for h := range hidden {
			if target == h || within(target, h) || within(h, target) {
				return true
			}
		}
		return false
	}
	rules := []landlock.Rule{landlock.PathAccess(ll.AccessFSReadDir, "/")}
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("list %s to grant reading around a hidden path: %w", dir, err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case hidden[p]:
				continue
			case onPath[p] && e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			// A rule applies to what the path resolves to, so a link
			// to a hidden path (or to a folder holding one) is not
			// granted; the target's own folder is walked instead.
			target, err := filepath.EvalSymlinks(p)
			if err != nil || covers(target) {
				continue
			}
			rules = append(rules, pathRules(readRights, p)...)
		}
		return nil
	}
	if err := walk("/"); err != nil {
		return nil, err
	}
	return rules, nil
}

// dropCapabilities empties the bounding and inheritable sets of this
// thread, which executes the program, so that a program started as root
// gets no capabilities: Landlock confines files, not what root can do
// with CAP_SYS_MODULE or a raw device. It does nothing for other users.
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP+8; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, syscall.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for i := range data {
		data[i].Inheritable = 0
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return nil
}
