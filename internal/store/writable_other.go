//go:build !unix

package store

// writable: elsewhere the database is opened for writing, and SQLite says
// what it cannot do.
func writable(string) bool { return true }
