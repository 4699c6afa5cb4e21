// Package bench is frontier's reproduction benchmark, after the Automated
// LLM Speedrunning Benchmark: given the training program of record i of a
// history of records (and optionally a hint about what record i+1
// changed), how much of the speedup from record i to record i+1 does a
// search recover?
//
// A suite is a folder with suite.yaml: the records (each a program on a
// track, with its published train time) and the tasks between them (a
// start record, a goal record, hints at three levels and the ground-truth
// diff, which is kept for analysis and never shown to a model). Built-in
// suites live in the binary (see the suites folder of the module);
// published benchmark checkouts are imported by bench/published.
//
// Scoring is the Fraction of Speedup Recovered (FSR), per task the mean
// over seeds, per configuration the mean and the interquartile mean over
// tasks with bootstrap intervals (score.go). Times come from this
// machine's calibration when there is one (Calibrate), else from the
// suite. A run (Run) works through every task and seed with one scaffold
// (bench/scaffold, or frontier's own evolution engine), storing every
// node, prompt, answer and evaluation before acting on it, so that a
// killed run resumes where it stood.
package bench
