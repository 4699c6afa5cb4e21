// Package runner executes one training process and reports how it ended.
//
// A Runner knows nothing about tracks or verdicts: it runs argv in a folder
// with a given environment under a wall-clock limit, keeps a bounded head and
// tail of the output, and classifies the exit. The evaluator turns that into
// a verdict.
//
// # The local runner
//
// [Local] runs a [Job] as a child process:
//
//   - in Job.Dir, with exactly Job.Env: nothing of the runner's environment
//     is inherited, so API keys never reach the program. Argv[0] is looked
//     up in the PATH of Job.Env (the runner's PATH is used only when Job.Env
//     has no PATH at all);
//   - in a process group of its own, so that one signal reaches it and
//     every child it forks;
//   - with stdin from /dev/null and stdout and stderr read continuously
//     into head+tail captures of HeadBytes and TailBytes each (64 KiB by
//     default). A program that prints gigabytes costs a fixed amount of
//     memory and is never blocked on a full pipe; Output counts the total
//     and the dropped bytes. Job.OnLine sees the lines as they come.
//
// When the wall-clock limit passes or ctx is canceled, the group gets
// SIGTERM and, Job.Grace later (5s by default), SIGKILL. After the main
// process exits for any reason, whatever is left of the group gets SIGKILL
// at once (background children, workers that outlived their parent), and
// Run returns only once those are gone and the output is drained.
// Result.Wall is measured by the runner around the whole life of the main
// process; it is the reference against which a program's own timing can
// be checked.
//
// # Leftover processes: what is and is not guaranteed
//
// Every process that stays in the job's process group is killed before
// Run returns, including one that ignores SIGTERM. Processes that leave
// the group (setsid, setpgid: daemons) are caught on a best-effort basis:
//
//   - on Linux the runner scans /proc while the job runs (10ms after the
//     start, then backing off to Local.ScanInterval) and remembers every
//     descendant it sees, by parent pid and start time; remembered
//     processes are signalled with the group;
//   - after the main process exits, a process that still holds the write
//     end of the job's stdout or stderr is found through /proc/PID/fd and
//     killed, since only the job can have passed it on;
//   - the main process gets Pdeathsig=SIGKILL, so if the runner itself is
//     killed the program dies with it (its own children do not, unless
//     they are in a sandbox that dies with its parent).
//
// A process that leaves the group, closes or redirects its output, and
// whose parent exits between two scans cannot be attributed to the job and
// survives. Result.Survivors lists known processes that SIGKILL could not
// remove.
//
// The robust mechanism is a cgroup per job, which needs a writable cgroup
// v2 directory (root, or a subtree delegated to the user): set
// Local.CgroupParent and every job is born in its own child cgroup that
// none of its processes can leave, and is ended with cgroup.kill. Then no
// process of the job outlives Run, daemons included. Without it, the /proc
// scan is the fallback that needs no privileges. On Unix systems other
// than Linux only the process group is tracked.
//
// # Limits
//
// Job.MemoryBytes and Job.MaxTasks bound what all the processes of a job
// use together. With a job cgroup (Local.CgroupParent) they become the
// cgroup's memory.max (with memory.swap.max 0 and memory.oom.group 1) and
// pids.max, and the kernel enforces them exactly: an OOM kill in the
// cgroup and a fork refused by pids.max both end the job with
// StatusLimit. Without one, the runner measures the job every 100ms: it
// follows the job's processes through /proc/PID/task/PID/children (plus
// the periodic full scans), sums RssAnon+RssShmem and the thread counts,
// and kills every process of the job with SIGKILL, without a grace
// period, as soon as a limit is passed. Memory is then bounded up to what
// the job can allocate in 100ms, and shared memory mapped by several
// processes is counted once per process, which errs on the side of
// stopping. RLIMIT_NPROC is not used: it counts every process of the
// user on the machine rather than the job's, and does not apply to root.
// RLIMIT_AS is not used either: CUDA reserves terabytes of virtual
// address space that it never touches.
//
// # Classification
//
// Result.Status is ok (exit 0), error (non-zero exit; for Python, the last
// traceback and its final "SomethingError: message" line are extracted from
// stderr, SyntaxError reports and interpreter messages such as "can't open
// file" or "No module named" included), timeout, canceled, signaled (which
// signal), oom, limit (with Result.Limit naming the limit) or not_start
// (with the path searched). A SIGKILL the runner
// did not send is reported as oom when the memory cgroup's oom_kill counter
// rose during the run, and otherwise as signaled with a message saying
// whether out-of-memory is possible. Result.Message says what happened in
// one sentence.
//
// # Wrapping
//
// Runners compose: a wrapper such as a sandbox rewrites the Job (for
// example prefixing Argv with "bwrap ... --" or a self re-exec that applies
// landlock) and calls the runner it wraps; [Func] makes such a wrapper a
// few lines. Because Argv[0] is resolved from the job's PATH, the wrapper
// can name its tool without a path. Wrappers that start a new session
// (bwrap --new-session) leave the process group; the descendant scan still
// follows them by parent pid, but the wrapper should also make the sandbox
// die with its parent (bwrap --die-with-parent).
//
// # GPUs
//
// [GPUPool] hands out disjoint sets of device indices to concurrent jobs,
// and [CUDAVisibleDevices] turns a set into the variable that confines a
// job to it.
package runner
