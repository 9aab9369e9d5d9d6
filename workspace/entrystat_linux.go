package workspace

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Lstat is the entry's Info (the file or link itself, not followed), read
// relative to the folder the walk holds open: the kernel looks up one
// name, not each folder of the path again, which is most of the cost of
// listing a large tree with Info. Like Open, it may be called only while
// the walk's fn runs for the entry.
func (e Entry) Lstat() (fs.FileInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(e.dir.fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: e.Rel, Err: err}
		}
		return &statInfo{name: e.Name(), st: st}, nil
	}
}

// statInfo is an fs.FileInfo of a unix.Stat_t, as os.Lstat makes one.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
