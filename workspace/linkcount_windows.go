//go:build windows

package workspace

import (
	"io/fs"
	"syscall"
)

// linkCount is the number of hard links of the file at path (not of what a
// link there points at), which fi describes; 1 when it cannot be read.
// Windows' Lstat does not carry it: the file's handle information does.
func linkCount(path string, _ fs.FileInfo) int {
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return 1
	}
	h, err := syscall.CreateFile(p, 0, syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE, nil,
		syscall.OPEN_EXISTING, syscall.FILE_FLAG_BACKUP_SEMANTICS|syscall.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return 1
	}
	defer syscall.CloseHandle(h)
	var info syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(h, &info); err != nil || info.NumberOfLinks == 0 {
		return 1
	}
	return int(info.NumberOfLinks)
}
