// Package layering holds no code, only the test that keeps the import graph
// of frontier's packages as docs/architecture.md draws it: each package may
// import the internal packages its row of the table in layering_test.go
// lists, and nothing else. A new import is a decision about the design, so
// the test makes it a visible one: add it to the table, with the reason in
// the commit, or move the code to where it belongs.
package layering
