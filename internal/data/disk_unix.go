//go:build unix

package data

import "golang.org/x/sys/unix"

// freeSpace is the number of bytes an unprivileged user may still write
// in dir's file system, or -1 when it cannot be told.
func freeSpace(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
