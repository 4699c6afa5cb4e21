// Package slurm runs a command on a node of a Slurm cluster as a batch job
// and follows it to its end, with Slurm's own commands (sbatch, squeue,
// sacct, scancel, sinfo) as the only interface to the cluster.
//
// A [Spec] says what to run and with what resources; [Script] writes the
// batch script for it. A [Client] submits it ([Client.Submit]), looks at it
// ([Client.Info]), follows it until it ends ([Client.Wait]) and cancels it
// ([Client.Cancel]). [Client.Run] does all of that for one spec the way an
// evaluation needs it:
//
//   - it first looks for the spec's jobs among the user's jobs, by name, so
//     that a frontier killed with jobs in flight and started again follows
//     them instead of submitting them twice;
//   - a job that ends PREEMPTED, NODE_FAIL or BOOT_FAIL (the node, not the
//     command, failed) is submitted once more, as a new job, then reported;
//   - when ctx ends (Ctrl-C, the end of a run, a timeout) the job is
//     cancelled with scancel;
//   - every end state becomes a [Result] whose Message says what happened
//     in words, with the exit code or signal and the node.
//
// # Following a job
//
// A job is looked at with squeue, which knows it from its submission until
// slurmctld forgets it (MinJobAge after its end, 300 s by default), then
// with sacct where the cluster keeps accounting. squeue's fields are asked
// for with a separator (--Format with '|'), and those a user writes (the
// comment) come last, so that no value is taken for another. Looks back
// off from a quarter of a second to [Client.Poll]. A command that fails
// because slurmctld does not answer (a restart, a failover, an overload) is
// not an end: the job is looked at again until slurmctld answers or
// [Client.Outage] has passed since its last answer.
//
// # Jobs never resubmit themselves
//
// Jobs are submitted with --no-requeue: Slurm would otherwise requeue a job
// of a failed node by itself, as often as it happens, and hold it back for
// two minutes each time. The one resubmission is Run's, as a new job named
// <name>.2 (the first is <name>.1), which keeps the count of attempts in the
// name where a new process finds it.
//
// # The environment of a job
//
// sbatch runs with an environment of its own, not frontier's: PATH, HOME,
// USER, LOGNAME, LANG, TZ and SLURM_CONF, and the job gets that (with
// --export=ALL) plus Spec.Env, written into the script. frontier's API keys
// therefore never reach a node, SBATCH_* variables of the user's shell do
// not override the script, and the node does not run a login shell to build
// an environment (--export=NONE does, which costs seconds per job).
//
// # Reports from the node
//
// What a job's command finds out comes back as a report file that only the
// holder of the job's [Key] could have written ([WriteReport],
// [ReadReport]): an HMAC-SHA256 over the report, bound to the job's ID. The
// key reaches the node in a file the submitting side writes in a folder the
// node-side process reads before anything it runs is started, and that
// folder is hidden from what it runs.
package slurm
