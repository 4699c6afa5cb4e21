// Package sandbox confines the programs a runner.Runner starts: a candidate
// training program may write only its run folder, cannot read the files it
// is not meant to see, has no network beyond loopback, and is bounded in
// memory and processes.
//
// [Wrap] returns a runner.Runner that rewrites each Job to run under one
// of three modes and then calls the runner it wraps:
//
//   - bwrap: bubblewrap builds a private view of the file system in new
//     user, mount, pid, network, IPC and UTS namespaces. Everything is
//     mounted read-only except Job.Dir and Job.Writable; Job.Hidden paths
//     are covered (an empty file, an empty directory); /proc is the
//     sandbox's own, /dev holds only the standard devices plus the GPUs,
//     /dev/shm is a private tmpfs, /run is an empty tmpfs. The network
//     namespace has only a loopback interface, which bubblewrap brings up,
//     so torch.distributed can rendezvous on 127.0.0.1 while nothing else
//     can be reached. All capabilities are dropped and no_new_privs is
//     set.
//   - landlock: the program is started through a re-exec of this binary
//     (the hidden "frontier sandbox-exec" command, see [Helper]) that
//     restricts itself with Landlock and then executes the program. Writes
//     are allowed in Job.Dir, Job.Writable, /dev/shm and to the standard
//     and GPU devices; files are readable everywhere except under
//     Job.Hidden. On kernels with Landlock ABI 4 or later, TCP bind and
//     connect are denied unless Job.LoopbackTCP is set, since Landlock
//     filters by port and cannot tell loopback from the internet; a
//     seccomp filter then also refuses what Landlock does not see
//     (Multipath TCP, UDP, io_uring). With ABI 6 or later the program
//     cannot signal processes outside its sandbox or reach abstract Unix
//     sockets there. Root's capabilities are dropped. It needs no privileges and
//     works where unprivileged user namespaces are blocked (Ubuntu 24.04
//     and later), but confines less; docs/sandbox.md lists the gaps.
//   - none: the job runs as is. Results carry Sandbox "none" so that
//     reports can warn that nothing was confined.
//
// ModeAuto picks bwrap when [Detect] finds that it works, else landlock,
// and refuses to run when neither is available: running unconfined must be
// asked for.
//
// # Limits
//
// Job.MemoryBytes and Job.MaxTasks are passed through to the wrapped
// runner, which enforces them (runner.Local: a cgroup or its own
// measurement). Under bwrap, the private /dev/shm is also capped at
// Job.MemoryBytes, since files in a tmpfs belong to no process.
//
// # Timeouts
//
// The runner stops a job with SIGTERM to its process group, then SIGKILL.
// bubblewrap does not forward signals and dies of SIGTERM, which would
// kill the sandbox at once (--die-with-parent) and take the program's
// grace period away. So under bwrap, bubblewrap is started with SIGTERM
// ignored, and inside the sandbox the default is restored before the
// program is executed, which then gets SIGTERM from the group signal as
// it would unconfined. Both steps use coreutils env (--ignore-signal,
// --default-signal) when it has them, since it starts faster, and the
// helper otherwise.
package sandbox
