package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Size limits of files read from a project. A file over its limit is refused
// with a FileTooLargeError, after fstat and before any of it is read.
const (
	// MaxReadSize bounds a file read whole (read_file without a line range,
	// edit_file, a selection).
	MaxReadSize = 8 << 20
	// MaxSearchSize bounds the files search looks into; bigger ones are skipped.
	MaxSearchSize = 2 << 20
	// maxManifestSize bounds a manifest or git file detection reads.
	maxManifestSize = 64 << 10
)

// FileTooLargeError is a file over a read limit.
type FileTooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit", e.Path, e.Size, e.Max)
}

// NotRegularError is a path that is not a regular file: a named pipe, a
// device, a socket or a directory, which are never read (a FIFO would block,
// a device never end).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "not a regular file"
	switch {
	case e.Mode.IsDir():
		kind = "a folder"
	case e.Mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case e.Mode&fs.ModeDevice != 0:
		kind = "a device"
	case e.Mode&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, kind)
}

// rootRel returns abs relative to the project's real root, whichever of the
// root's two spellings (as given, symlinks resolved) abs starts with.
func (p *Project) rootRel(abs string) (string, error) {
	if rel, ok := below(p.root, abs); ok {
		return rel, nil
	}
	abs = filepath.Clean(abs)
	for _, root := range []string{p.root, p.realRoot} {
		if within(root, abs) {
			rel, err := filepath.Rel(root, abs)
			if err == nil {
				return rel, nil
			}
		}
	}
	return "", &BoundaryError{Project: p.Name(), Path: abs, Reason: "outside the project root " + p.root}
}

// OpenFile opens a file of the project for reading: inside its root only
// (through os.Root, so neither .. nor a symlink can lead out of it), a
// regular file only (a named pipe or device is refused without blocking on
// it). It returns the open file and its size.
func (p *Project) OpenFile(abs string) (*os.File, int64, error) {
	rel, err := p.rootRel(abs)
	if err != nil {
		return nil, 0, err
	}
	r, done, err := p.openRoot()
	if err != nil {
		return nil, 0, err
	}
	defer done()
	return openRegular(r, rel)
}

// openRegular opens the regular file at rel inside r for reading, without
// blocking on a named pipe or device (refused): the open file and its size.
func openRegular(r *os.Root, rel string) (*os.File, int64, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("open %s: %w", filepath.ToSlash(rel), err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, &NotRegularError{Path: filepath.ToSlash(rel), Mode: fi.Mode()}
	}
	return f, fi.Size(), nil
}

// readLimited reads all of f, refusing more than max bytes.
func readLimited(f *os.File, name string, size, max int64) ([]byte, error) {
	return ReadLimited(f, name, size, max, nil)
}

// ReadLimited reads all of f, whose size fstat gave as size, refusing more
// than max bytes (a FileTooLargeError): into buf when it holds size+1
// bytes (the result then shares buf's memory), else into a new slice.
func ReadLimited(f io.Reader, name string, size, max int64, buf []byte) ([]byte, error) {
	if size > max {
		return nil, &FileTooLargeError{Path: name, Size: size, Max: max}
	}
	// One read takes the file when it returns the size fstat gave (and no
	// more: the buffer holds a byte over). Otherwise, a file that grew or a
	// file system that reads less at once, it is read to its end, up to
	// max+1 bytes.
	b := buf[:0]
	if int64(cap(buf)) <= size {
		b = make([]byte, size+1) // size <= max
	}
	b = b[:size+1]
	n, err := f.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if int64(n) != size {
		rest, err := io.ReadAll(io.LimitReader(f, max+1-int64(n)))
		if err != nil {
			return nil, err
		}
		b = append(b[:n], rest...)
	} else {
		b = b[:n]
	}
	if int64(len(b)) > max { // it grew since fstat
		return nil, &FileTooLargeError{Path: name, Size: int64(len(b)), Max: max}
	}
	return b, nil
}

// ReadFile returns a project file's content as the editor sees it: the
// unsaved buffer when the document is open, else the file inside the
// project's root (OpenFile), at most max bytes.
func (w *Workspace) ReadFile(p *Project, abs string, max int64) ([]byte, error) {
	if d, ok := w.Document(abs); ok {
		if int64(len(d.Text)) > max {
			return nil, &FileTooLargeError{Path: p.Rel(abs), Size: int64(len(d.Text)), Max: max}
		}
		return []byte(d.Text), nil
	}
	f, size, err := p.OpenFile(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, p.Rel(abs), size, max)
}

// WriteFile writes data to the file at abs, inside the project's root only
// (through os.Root: neither .. nor a symlink leads out of it), creating its
// folders as needed. The file is replaced whole (WriteAtomic): a crash
// leaves its old content or its new, and an error leaves it untouched
// (except a *DamagedError). An existing file keeps its mode.
func (p *Project) WriteFile(abs string, data []byte) (Written, error) {
	rel, err := p.rootRel(abs)
	if err != nil {
		return Written{}, err
	}
	r, done, err := p.openRoot()
	if err != nil {
		return Written{}, err
	}
	defer done()
	if dir := filepath.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return Written{}, fmt.Errorf("write %s: %w", filepath.ToSlash(rel), err)
		}
	}
	return WriteAtomic(r, rel, data, false)
}

// WalkRoot is the folder to walk for the project's files: the root with its
// symlinks resolved (a root that is a symlink lists its target's files).
func (p *Project) WalkRoot() string { return p.realRoot }

// readManifest reads a small file at root for detection (readSmall), never
// through a symlink that leaves root and without blocking; "" when r is nil.
func readManifest(r *os.Root, name string) string {
	if r == nil {
		return ""
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	return readSmall(f, name)
}

// readGitFile reads a small file git keeps (HEAD, a worktree's .git file;
// readSmall) without following a symlink and without blocking.
func readGitFile(path string) string {
	f, err := openNoFollow(path)
	if err != nil {
		return ""
	}
	return readSmall(f, path)
}

// readSmall reads and closes f, opened for detection: a regular file of at
// most maxManifestSize bytes (never a FIFO or device); "" when it is not,
// or on any error.
func readSmall(f *os.File, name string) string {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := readLimited(f, name, fi.Size(), maxManifestSize)
	if err != nil {
		return ""
	}
	return string(b)
}
