package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Written says how WriteAtomic put a file's new content on disk.
type Written struct {
	// InPlace is why the file was rewritten in place instead of replaced
	// by a new file ("" when it was replaced whole). A file rewritten in
	// place could have been torn by a crash during the write; a copy of
	// its old content was kept beside it, and fsynced, until the write
	// was done.
	InPlace string
}

// Note is what a tool result says of w: "" for a file replaced whole.
func (w Written) Note() string {
	if w.InPlace == "" {
		return ""
	}
	return "written in place (" + w.InPlace + "), with a backup of the old content kept beside it until the write was done"
}

// DamagedError is a file rewritten in place whose write failed part way and
// whose old content could not be written back: the file holds neither
// version, and Backup holds the old content.
type DamagedError struct {
	Path, Backup string
	Err          error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s was written in part (%v) and could not be restored: its previous content is in %s", e.Path, e.Err, e.Backup)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// maxLinkHops bounds the symlinks WriteAtomic follows to the file it writes.
const maxLinkHops = 40

// atomicWriter writes whole files; rename is os.Root's, replaced in tests
// to fail as a bind-mounted file does.
type atomicWriter struct {
	rename func(r *os.Root, from, to string) error
}

// WriteAtomic makes data the whole content of the file name (relative to
// r; a symlink is followed, inside r) so that a crash at any moment leaves
// the old content or the new, never less: data goes to a new file in the
// same folder, which is fsynced, given the old file's mode (and group), and
// renamed over the old one; then the folder is fsynced. A create (the file
// does not exist) is one such write, with mode 0644 less the umask; with
// create set, an existing file is refused (fs.ErrExist) and never replaced.
//
// A file that cannot be replaced without changing what it is, one with
// other hard links or another owner, or one the rename cannot replace (a
// bind-mounted file: EBUSY, EXDEV), is rewritten in place, after a copy of
// its old content is fsynced beside it (removed once the write is done);
// Written.InPlace says why. A failed in-place write puts the old content
// back; only when that fails too is the error a *DamagedError.
//
// An error other than a *DamagedError means the file is untouched.
func WriteAtomic(r *os.Root, name string, data []byte, create bool) (Written, error) {
	return atomicWriter{rename: func(r *os.Root, from, to string) error { return r.Rename(from, to) }}.write(r, name, data, create)
}

func (w atomicWriter) write(r *os.Root, name string, data []byte, create bool) (Written, error) {
	name, fi, err := resolveLinks(r, filepath.Clean(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Written{}, w.create(r, name, data)
	}
	if err != nil {
		return Written{}, err
	}
	if create {
		return Written{}, fmt.Errorf("create %s: %w", filepath.ToSlash(name), fs.ErrExist)
	}
	if !fi.Mode().IsRegular() {
		return Written{}, &NotRegularError{Path: filepath.ToSlash(name), Mode: fi.Mode()}
	}
	if why := keepsFile(r, name, fi); why != "" {
		return w.inPlace(r, name, data, why)
	}
	tmp, f, err := tempFile(r, name, "tmp", 0o600)
	if err != nil {
		return Written{}, err
	}
	err = fill(f, data, func(f *os.File) error { return copyAttrs(f, fi) })
	if err != nil {
		r.Remove(tmp)
		if errors.Is(err, errKeep) {
			return w.inPlace(r, name, data, "its group could not be kept on a new file")
		}
		return Written{}, fmt.Errorf("write %s: %w", filepath.ToSlash(name), err)
	}
	if err := w.rename(r, tmp, name); err != nil {
		r.Remove(tmp)
		if errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV) {
			return w.inPlace(r, name, data, "it cannot be replaced by a rename: "+errText(err))
		}
		return Written{}, fmt.Errorf("write %s: %w", filepath.ToSlash(name), err)
	}
	syncDir(r, name)
	return Written{}, nil
}

// create writes a new file whole: a new file is filled and fsynced under a
// temporary name, then linked to name (which fails if name appeared
// meanwhile), so name never exists with part of data.
func (w atomicWriter) create(r *os.Root, name string, data []byte) error {
	tmp, f, err := tempFile(r, name, "tmp", 0o644)
	if err != nil {
		return err
	}
	defer r.Remove(tmp)
	if err := fill(f, data, nil); err != nil {
		return fmt.Errorf("create %s: %w", filepath.ToSlash(name), err)
	}
	err = r.Link(tmp, name)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: the rename may replace a file
		// that appeared since the check, which the caller's lock makes unlikely.
		if _, serr := r.Lstat(name); errors.Is(serr, fs.ErrNotExist) {
			err = w.rename(r, tmp, name)
		}
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.ToSlash(name), err)
	}
	syncDir(r, name)
	return nil
}

// errKeep is a new file's attribute that could not be made the old file's.
var errKeep = errors.New("cannot keep the file's attributes")

// fill writes data to the new file f, sets its attributes (attrs, when
// set), fsyncs and closes it.
func fill(f *os.File, data []byte, attrs func(*os.File) error) error {
	_, err := f.Write(data)
	if err == nil && attrs != nil {
		err = attrs(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// inPlace rewrites the file name in place: its old content is copied to a
// backup beside it and fsynced first, and put back if the write fails.
func (w atomicWriter) inPlace(r *os.Root, name string, data []byte, why string) (Written, error) {
	rel := filepath.ToSlash(name)
	f, err := r.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return Written{}, fmt.Errorf("write %s: %w", rel, err)
	}
	defer f.Close()
	old, err := io.ReadAll(f)
	if err != nil {
		return Written{}, fmt.Errorf("write %s: read its old content: %w", rel, err)
	}
	backup, b, err := tempFile(r, name, "bak", 0o600)
	if err != nil {
		return Written{}, fmt.Errorf("write %s in place: %w", rel, err)
	}
	if err := fill(b, old, nil); err != nil {
		r.Remove(backup)
		return Written{}, fmt.Errorf("write %s in place: its backup: %w", rel, err)
	}
	syncDir(r, name)
	if err := overwrite(f, data); err != nil {
		if rerr := overwrite(f, old); rerr != nil {
			return Written{}, &DamagedError{Path: rel, Backup: filepath.ToSlash(backup), Err: err}
		}
		r.Remove(backup)
		return Written{}, fmt.Errorf("write %s in place: %w", rel, err)
	}
	r.Remove(backup)
	syncDir(r, name)
	return Written{InPlace: why}, nil
}

// overwrite makes data f's content and fsyncs it.
func overwrite(f *os.File, data []byte) error {
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return err
	}
	return f.Sync()
}

// tempFile creates a new file beside name (.<base>.agent-lsp-<hex>.<ext>),
// with mode perm less the umask.
func tempFile(r *os.Root, name, ext string, perm fs.FileMode) (string, *os.File, error) {
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".agent-lsp-"+hex.EncodeToString(b[:])+"."+ext)
		f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("write %s: a new file beside it: %w", filepath.ToSlash(name), err)
		}
		return tmp, f, nil
	}
	return "", nil, fmt.Errorf("write %s: no free temporary name beside it", filepath.ToSlash(name))
}

// resolveLinks follows name's symlinks inside r to the file they name, and
// returns that file's name and Lstat (the error of the first missing one).
func resolveLinks(r *os.Root, name string) (string, fs.FileInfo, error) {
	for range maxLinkHops {
		fi, err := r.Lstat(name)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return name, fi, err
		}
		target, err := r.Readlink(name)
		if err != nil {
			return name, nil, err
		}
		if filepath.IsAbs(target) {
			return name, nil, fmt.Errorf("write %s: it is a symlink to the absolute path %s", filepath.ToSlash(name), target)
		}
		name = filepath.Join(filepath.Dir(name), target)
	}
	return name, nil, fmt.Errorf("write %s: too many levels of symlinks", filepath.ToSlash(name))
}

// syncDir fsyncs the folder of name, so that a rename or a new name in it
// survives a crash. A folder that cannot be synced is left to the kernel.
func syncDir(r *os.Root, name string) {
	d, err := r.Open(filepath.Dir(name))
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// errText is err's innermost message (a path error without its paths).
func errText(err error) string {
	var pe *os.LinkError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
