// Package verify is the static layer of frontier's verification: checks
// that read a candidate program before it runs.
//
// [Protected] restores the track reference's protected regions into the
// candidate byte for byte and reports every region that had been changed.
// [Static] runs the static rules the track names (verification.static_rules;
// [Rules] lists them): a lexical reading of the Python source that finds
// extra compiler options, reads of the validation data, reaches into the
// harness, introspection, clock patching, network, subprocesses, native
// code, writes outside the run folder and dynamic code that would hide any
// of these. [Checks] returns both, in the order the evaluator must run them.
//
// The rules are a first layer, not a proof: they read code, they do not run
// it, and a determined program can hide what it does from any reading. The
// harness's behavioural checks and the sandbox are the layers behind them;
// docs/static-rules.md says what each rule cannot catch.
package verify
