package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// restrictSockets installs a seccomp filter on this thread, which the
// program inherits through execve, that closes the ways around Landlock's
// TCP restriction: Multipath TCP sockets (which Landlock does not filter:
// an MPTCP connect reaches any port), UDP and other non-stream internet
// sockets (before ABI 10 Landlock does not filter UDP), io_uring (which
// creates sockets without the socket system call) and system calls of
// another architecture (the i386 and x32 entry points, whose numbers the
// filter does not check). Plain TCP sockets can still be created; Landlock
// denies their bind and connect. It needs no_new_privs, which Landlock has
// set. On architectures other than amd64 and arm64 it does nothing and
// says so.
func restrictSockets() (bool, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return false, nil
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		and   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		errno = unix.SECCOMP_RET_ERRNO
		// Offsets in struct seccomp_data: nr, arch, then the arguments
		// as 64-bit words, whose low halves come first (little endian).
		offNr, offArch, offArg0, offArg1, offArg2 = 0, 4, 16, 24, 32
		x32Bit                                    = 0x40000000
	)
	prog := []unix.SockFilter{
		/* 0 */ {Code: ld, K: offArch},
		/* 1 */ {Code: jeq, Jt: 1, K: arch},
		/* 2 */ {Code: ret, K: errno | uint32(unix.ENOSYS)},
		/* 3 */ {Code: ld, K: offNr},
		/* 4 */ {Code: jge, Jf: 1, K: x32Bit},
		/* 5 */ {Code: ret, K: errno | uint32(unix.ENOSYS)},
		/* 6 */ {Code: jeq, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		/* 7 */ {Code: ret, K: errno | uint32(unix.ENOSYS)},
		/* 8 */ {Code: jeq, Jt: 1, K: unix.SYS_SOCKET},
		/* 9 */ {Code: ret, K: allow},
		/* 10 */ {Code: ld, K: offArg0}, // domain
		/* 11 */ {Code: jeq, Jt: 1, K: unix.AF_INET},
		/* 12 */ {Code: jeq, Jf: 6, K: unix.AF_INET6}, // else allow (19)
		/* 13 */ {Code: ld, K: offArg2}, // protocol
		/* 14 */ {Code: jeq, Jf: 1, K: unix.IPPROTO_MPTCP},
		/* 15 */ {Code: ret, K: errno | uint32(unix.EPROTONOSUPPORT)},
		/* 16 */ {Code: ld, K: offArg1}, // type, with SOCK_CLOEXEC and SOCK_NONBLOCK
		/* 17 */ {Code: and, K: 0xf},
		/* 18 */ {Code: jeq, Jf: 1, K: unix.SOCK_STREAM},
		/* 19 */ {Code: ret, K: allow},
		/* 20 */ {Code: ret, K: errno | uint32(unix.EACCES)},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false, fmt.Errorf("no_new_privs: %w", err)
	}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return false, errors.New("seccomp filters are not available in this kernel")
		}
		return false, fmt.Errorf("install seccomp filter: %w", err)
	}
	return true, nil
}

// restrictIPC installs a seccomp filter that refuses (EPERM) the kernel
// keyrings (add_key, request_key, keyctl) and System V IPC (shared memory,
// message queues, semaphores): objects that outlive the process and that
// any process of the user can reach, unless it has namespaces of its own.
// System calls of another architecture are refused as in restrictSockets.
// On architectures other than amd64 and arm64 it does nothing and says so.
func restrictIPC() (bool, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return false, nil
	}
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		errno  = unix.SECCOMP_RET_ERRNO
		offNr  = 0
		offArc = 4
		x32Bit = 0x40000000
	)
	denied := []uint32{
		unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
		unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
	}
	prog := []unix.SockFilter{
		{Code: ld, K: offArc},
		{Code: jeq, Jt: 1, K: arch},
		{Code: ret, K: errno | uint32(unix.ENOSYS)},
		{Code: ld, K: offNr},
		{Code: jge, Jf: 1, K: x32Bit},
		{Code: ret, K: errno | uint32(unix.ENOSYS)},
	}
	// One test per call: a match jumps to the refusal at the end.
	for i, nr := range denied {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(len(denied) - i), K: nr})
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: allow}, unix.SockFilter{Code: ret, K: errno | uint32(unix.EPERM)})
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false, fmt.Errorf("no_new_privs: %w", err)
	}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return false, errors.New("seccomp filters are not available in this kernel")
		}
		return false, fmt.Errorf("install seccomp filter: %w", err)
	}
	return true, nil
}
