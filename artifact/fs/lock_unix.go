//go:build unix

package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile holds an exclusive flock(2) of f until the returned function is called, across
// processes and, on NFS, across machines.
func lockFile(f *os.File) (func(), error) {
	fd := int(f.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { unix.Flock(fd, unix.LOCK_UN) }, nil
}
