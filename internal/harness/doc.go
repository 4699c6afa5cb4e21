// Package harness ships the Python side of a run and reads what it writes.
//
// The harness is two Python files embedded in the binary: frontier_boot.py,
// which starts a candidate program, and frontier_harness.py, the module the
// program imports as fh. Materialize writes them read-only into a run folder,
// WriteConfig writes the injected Config next to them, and Command returns
// the argv and environment that start the program under the harness. Inside
// the process the harness owns the train clock, reads the validation slice
// itself (from an inherited descriptor, before the program runs), computes
// the validation loss, runs the causality probe and the behavioural checks
// (training before the clock, state kept across validation calls, noisy
// logits, the compile budget) and writes telemetry as JSON lines;
// ReadTelemetry turns that file into a Telemetry value for the evaluator.
//
// The program-facing contract is documented in docs/harness.md.
package harness
