package daemon

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Rights on a directory (winnt.h) that x/sys/windows does not name.
const (
	fileAddFile         = 0x2
	fileAddSubdirectory = 0x4
	fileDeleteChild     = 0x40
)

// writeRights are the rights that let a holder add, replace or remove
// what a directory holds, or change who may.
const writeRights = fileAddFile | fileAddSubdirectory | fileDeleteChild |
	windows.FILE_WRITE_EA | windows.FILE_WRITE_ATTRIBUTES | windows.DELETE | windows.WRITE_DAC |
	windows.WRITE_OWNER | windows.GENERIC_WRITE | windows.GENERIC_ALL

// checkDir returns an *UnsafeDirError when a user other than this one,
// SYSTEM and the Administrators can write dir: its owner is someone else,
// or its access list lets another account or group write it.
func checkDir(dir string) error {
	return checkACL(dir, writeRights)
}

// checkACL returns an *UnsafeDirError when dir's owner is someone other
// than this user, SYSTEM or the Administrators, or its access list allows
// any of rights to anyone else.
func checkACL(dir string, rights windows.ACCESS_MASK) error {
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("the access list of %s: %w", dir, err)
	}
	me := thisUser()
	trusted := func(sid *windows.SID) bool {
		return sid.String() == me || sid.IsWellKnown(windows.WinLocalSystemSid) ||
			sid.IsWellKnown(windows.WinBuiltinAdministratorsSid) || sid.IsWellKnown(windows.WinCreatorOwnerSid)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("the owner of %s: %w", dir, err)
	}
	if !trusted(owner) {
		return &UnsafeDirError{dir, fmt.Sprintf("belongs to %s", owner)}
	}
	dacl, _, err := sd.DACL()
	if errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || err == nil && dacl == nil {
		return &UnsafeDirError{dir, "has no access list (everyone may write it)"}
	}
	if err != nil {
		return fmt.Errorf("the access list of %s: %w", dir, err)
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return fmt.Errorf("the access list of %s: %w", dir, err)
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || ace.Mask&rights == 0 {
			continue
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if !trusted(sid) {
			return &UnsafeDirError{dir, fmt.Sprintf("lets %s in (access mask %#x)", sid, uint32(ace.Mask))}
		}
	}
	return nil
}

// userOnlyDir makes dir, when it does not exist, with an access list of
// its own (inheriting none) that lets in only this user and SYSTEM; a
// directory that exists must let no one else in at all.
func userOnlyDir(dir string) error {
	me := thisUser()
	sd, err := windows.SecurityDescriptorFromString("O:" + me + "D:P(A;OICI;FA;;;" + me + ")(A;OICI;FA;;;SY)")
	if err != nil {
		return fmt.Errorf("a security descriptor for %s: %w", dir, err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	if err := windows.CreateDirectory(p, sa); err != nil && !errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return checkACL(dir, ^windows.ACCESS_MASK(0))
}
