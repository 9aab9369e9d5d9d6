//go:build windows

package boltfile

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapFile maps the first size bytes of f read-only (a file mapping and a
// view of it, as bbolt maps on Windows). The map outlives f.
func mapFile(f *os.File, size int) (mem []byte, unmap func() error, err error) {
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, nil, os.NewSyscallError("CreateFileMapping", err)
	}
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	windows.CloseHandle(h) // the view holds the mapping
	if err != nil {
		return nil, nil, os.NewSyscallError("MapViewOfFile", err)
	}
	mem = unsafe.Slice((*byte)(unsafe.Add(nil, addr)), size)
	return mem, func() error { return windows.UnmapViewOfFile(addr) }, nil
}
