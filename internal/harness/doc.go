// Package harness ships the Python side of a run, starts its judge, and
// reads what the judge writes.
//
// The Python files are embedded in the binary, in two groups that never
// share a folder. The judge (frontier_judge.py, with frontier_checks.py)
// is a process of its own, started by StartJudge before the program and
// outside its sandbox, in a folder the program cannot see; it holds
// everything that decides a verdict: the train clock (stamped on receipt
// of each message), the validation text, the loss, the checks that
// compare the training process's answers with a scorer's, the budgets,
// and the telemetry, which it writes as JSON lines on a pipe only frontier
// reads. The program's side (frontier_boot.py, frontier_wire.py,
// frontier_harness.py, the module it imports as fh, and frontier_state.py)
// is written read-only into the run folder by Materialize; it decides
// nothing: each fh call is a message to the judge on a Unix socket the
// process inherits (one per process, Judge.Clients; the scorer's,
// Judge.ScorerClients), and frontier_state.py carries what logits_fn
// reaches from the training process to the scorer, a fresh process of the
// same program that answers the final validation again.
//
// WriteConfig writes the program's Config and Command returns the argv and
// environment that start it under the boot script; StartJudge writes the
// judge's JudgeConfig next to the judge's files. Judge.Finish waits for the judge's last events and
// ReadTelemetry turns its lines into a Telemetry value for the evaluator.
// Digest names the embedded sources, stored with every evaluation.
//
// The program-facing contract is docs/harness.md; where the boundary
// between the judge and the program lies, and what it guarantees, is
// docs/threat-model.md.
package harness
