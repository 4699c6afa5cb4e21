//go:build unix

package store

import "golang.org/x/sys/unix"

// writable says whether this user may write to path (a file or a folder),
// by the kernel's own rules: permissions, a read-only mount.
func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil
}
