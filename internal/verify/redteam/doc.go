// Package redteam holds frontier's red team: adversarial training programs,
// each a known way to game a speedrun benchmark, run end to end through the
// real evaluator (the static checks of package verify, the harness's
// behavioural checks, the runner and the sandbox) to show that each is
// rejected with the right verdict and rule, and that honest speedups are
// not.
//
// The programs are in testdata, one file per attack with a comment saying
// what it does and what verdict it must get (Programs embeds them for other
// suites), and the table of cases is in redteam_test.go. The test prints the
// table (attack, expected verdict, verdict got, reason); docs/threat-model.md
// carries the same table. It runs by default and is skipped with -short:
//
//	go test ./internal/verify/redteam/
//	go test ./internal/verify/redteam/ -run 'TestRedTeam/cases/future' -v
//	go test ./internal/verify/redteam/ -redteam.sandbox=landlock
//	go test ./internal/verify/redteam/ -redteam.table=table.md
//	go test ./internal/verify/redteam/ -run 'TestRedTeam/cases/junk' -redteam.keep=/tmp/rt
package redteam
