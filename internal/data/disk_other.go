//go:build !unix

package data

// freeSpace cannot be told on this system.
func freeSpace(dir string) int64 { return -1 }
