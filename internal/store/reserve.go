package store

import (
	"math/rand/v2"
	"os"
	"path/filepath"
)

// ReserveBytes is the disk space the store holds back, in a file beside
// the database, for the moment the disk is full: a program that fills the
// disk must still end in a verdict that is stored. 32 MiB holds a verdict
// with its telemetry many times over.
const ReserveBytes = 32 << 20

// keepReserve makes sure the reserve file is there, at full size. Without
// the room for it frontier runs without one; the next start tries again.
func (s *sqlStore) keepReserve() {
	if s.reserve == "" {
		return
	}
	if fi, err := os.Stat(s.reserve); err == nil && fi.Size() >= ReserveBytes {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(s.reserve), filepath.Base(s.reserve)+".*")
	if err != nil {
		return
	}
	// Bytes a compressing file system cannot shrink to nothing, as it
	// would zeros: the space must really be taken.
	buf := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	ok := true
	for n := 0; n < ReserveBytes && ok; n += len(buf) {
		_, err := f.Write(buf)
		ok = err == nil
	}
	ok = ok && f.Sync() == nil
	if f.Close() != nil || !ok || os.Rename(f.Name(), s.reserve) != nil {
		os.Remove(f.Name())
	}
}

// releaseReserve gives the reserve's space back to the file system; it
// says whether there was any to give.
func (s *sqlStore) releaseReserve() bool {
	if s.reserve == "" {
		return false
	}
	return os.Remove(s.reserve) == nil
}

// errReadOnlyWrite stands for SQLite's own refusal, for a store that does
// not ask SQLite.
var errReadOnlyWrite = codeError{"attempt to write a readonly database", sqliteReadOnly}

type codeError struct {
	msg  string
	code int
}

func (e codeError) Error() string { return e.msg }
func (e codeError) Code() int     { return e.code }
