//go:build unix

package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// folder is a folder a walk is in, held open: its files are opened by name
// relative to it (openat), never through a link.
type folder struct {
	f  *os.File // opened inside the walk's root; owns fd
	fd int
}

// listFolder opens the folder r holds and lists it, sorted by name. The
// listing reads a duplicate descriptor opened outside the root's bookkeeping:
// a folder opened in an os.Root stats every entry it lists (Go 1.26's
// newUnixDirent), while getdents already gives each entry's type.
func listFolder(r *os.Root) (*folder, []fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		return nil, nil, err
	}
	d := &folder{f: f, fd: int(f.Fd())}
	dup, err := unix.Dup(d.fd)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	unix.CloseOnExec(dup)
	list := os.NewFile(uintptr(dup), f.Name())
	entries, err := list.ReadDir(-1)
	list.Close()
	sortEntries(entries)
	return d, entries, err
}

func (d *folder) close() { d.f.Close() }

// open opens the regular file name of the folder for reading, without
// following a link and without blocking on a named pipe or device (refused).
func (d *folder) open(name string) (*OpenedFile, error) {
	fd, err := openat(d.fd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &NotRegularError{Path: filepath.ToSlash(name), Mode: modeType(uint32(st.Mode))}
	}
	return &OpenedFile{fd: fd, size: st.Size}, nil
}

func openat(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); err != unix.EINTR {
			return err
		}
	}
}

// modeType is the file type of a stat mode, as fs.FileMode.
func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// OpenedFile is a regular file a walk opened (Entry.Open): read it once
// with ReadAll, or Close it. It is a bare descriptor, not an *os.File: a
// search opens thousands, and an *os.File costs each a poller registration
// and a finalizer.
type OpenedFile struct {
	fd   int
	size int64
}

// Size is the file's size when it was opened.
func (f *OpenedFile) Size() int64 { return f.size }

// Close closes the file; it may be called more than once.
func (f *OpenedFile) Close() {
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
}

// ReadAll reads the file (named name in errors) and closes it, as
// ReadLimited does.
func (f *OpenedFile) ReadAll(name string, max int64, buf []byte) ([]byte, error) {
	defer f.Close()
	return ReadLimited(fdReader(f.fd), name, f.size, max, buf)
}

// fdReader reads a descriptor.
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
