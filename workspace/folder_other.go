//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// folder is a folder a walk is in, held open: its files are opened by name
// inside it.
type folder struct{ r *os.Root }

// listFolder lists the folder r holds, sorted by name.
func listFolder(r *os.Root) (*folder, []fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	sortEntries(entries)
	return &folder{r: r}, entries, err
}

func (d *folder) close() {}

// open opens the regular file name of the folder for reading.
func (d *folder) open(name string) (*OpenedFile, error) {
	f, size, err := openRegular(d.r, name)
	if err != nil {
		return nil, err
	}
	return &OpenedFile{f: f, size: size}, nil
}

// OpenedFile is a regular file a walk opened (Entry.Open): read it once
// with ReadAll, or Close it.
type OpenedFile struct {
	f    *os.File
	size int64
}

// Size is the file's size when it was opened.
func (f *OpenedFile) Size() int64 { return f.size }

// Close closes the file; it may be called more than once.
func (f *OpenedFile) Close() { f.f.Close() }

// ReadAll reads the file (named name in errors) and closes it, as
// ReadLimited does.
func (f *OpenedFile) ReadAll(name string, max int64, buf []byte) ([]byte, error) {
	defer f.Close()
	return ReadLimited(f.f, name, f.size, max, buf)
}
