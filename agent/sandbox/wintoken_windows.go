package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The write-restricted token (see wintoken.go): made from this process's
// token, restricted to a project's SID; the ACEs that give that SID its
// writes; and the probe that checks, once per process, that Windows
// enforces both before any command relies on them.

// CreateRestrictedToken's flags (winnt.h); golang.org/x/sys/windows has no
// wrapper for the function.
const (
	disableMaxPrivilege = 0x1
	luaToken            = 0x4
	writeRestricted     = 0x8
)

var procCreateRestrictedToken = windows.NewLazySystemDLL("advapi32.dll").NewProc("CreateRestrictedToken")

// restrictedToken makes a primary token from this process's: every
// privilege but SeChangeNotify removed, administrators' rights filtered,
// and writes restricted to sid and the logon session's SID. Its default
// DACL (what unnamed objects the command makes get) grants the user, SYSTEM
// and sid full access, so that the command can use its own pipes and
// events.
func restrictedToken(sid *windows.SID) (windows.Token, error) {
	if err := procCreateRestrictedToken.Find(); err != nil {
		return 0, fmt.Errorf("CreateRestrictedToken: %w", err)
	}
	var self windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(),
		windows.TOKEN_DUPLICATE|windows.TOKEN_QUERY|windows.TOKEN_ASSIGN_PRIMARY|windows.TOKEN_ADJUST_DEFAULT, &self); err != nil {
		return 0, fmt.Errorf("open this process's token: %w", err)
	}
	defer self.Close()
	user, err := self.GetTokenUser()
	if err != nil {
		return 0, fmt.Errorf("read this process's user: %w", err)
	}
	restrict := []windows.SIDAndAttributes{{Sid: sid}}
	groups, err := self.GetTokenGroups()
	if err == nil {
		for _, g := range groups.AllGroups() {
			if g.Attributes&windows.SE_GROUP_LOGON_ID == windows.SE_GROUP_LOGON_ID {
				restrict = append(restrict, windows.SIDAndAttributes{Sid: g.Sid})
				break
			}
		}
	}
	var tok windows.Token
	r, _, callErr := procCreateRestrictedToken.Call(uintptr(self), disableMaxPrivilege|luaToken|writeRestricted,
		0, 0, 0, 0, uintptr(len(restrict)), uintptr(unsafe.Pointer(&restrict[0])), uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return 0, fmt.Errorf("CreateRestrictedToken: %w", callErr)
	}
	if err := setDefaultDACL(tok, user.User.Sid, sid); err != nil {
		tok.Close()
		return 0, err
	}
	return tok, nil
}

// setDefaultDACL makes tok's default DACL grant full access to user,
// SYSTEM and sid.
func setDefaultDACL(tok windows.Token, user, sid *windows.SID) error {
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return fmt.Errorf("the SYSTEM SID: %w", err)
	}
	var entries []windows.EXPLICIT_ACCESS
	for _, s := range []*windows.SID{user, system, sid} {
		entries = append(entries, windows.EXPLICIT_ACCESS{AccessPermissions: windows.GENERIC_ALL, AccessMode: windows.GRANT_ACCESS,
			Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeValue: windows.TrusteeValueFromSID(s)}})
	}
	acl, err := windows.ACLFromEntries(entries, nil)
	if err != nil {
		return fmt.Errorf("make the token's default DACL: %w", err)
	}
	info := struct{ dacl *windows.ACL }{acl} // TOKEN_DEFAULT_DACL
	if err := windows.SetTokenInformation(tok, windows.TokenDefaultDacl, (*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("set the token's default DACL: %w", err)
	}
	return nil
}

// applyRules puts each rule's ACE on its path for sid, unless the path
// already carries it. A deny on a path that does not exist is skipped
// (nothing there to protect); any other failure fails the whole: a command
// must not run with fewer denies than its policy says.
func applyRules(rules []aclRule, sid *windows.SID) error {
	for _, r := range rules {
		if err := applyRule(r, sid); err != nil {
			if r.Deny && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("set the ACL of %s: %w", r.Path, err)
		}
	}
	return nil
}

// applyRule puts r's ACE on r.Path (the path itself, a link not followed:
// a protected link is denied as itself, its target by a rule of its own).
// The DACL keeps its inheritance from the parent, or its protection from
// it. Windows propagates an inherited ACE to what is below the path. The
// ACE must be there when it returns nil.
func applyRule(r aclRule, sid *windows.SID) error {
	name, err := windows.UTF16PtrFromString(r.Path)
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(name, windows.READ_CONTROL|windows.WRITE_DAC,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return err
	}
	defer windows.CloseHandle(h)
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &fi); err != nil {
		return err
	}
	inherit := uint32(windows.NO_INHERITANCE)
	if r.Inherit && fi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		inherit = windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT
	}
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if hasACE(dacl, sid, r, uint8(inherit)) {
		return nil
	}
	mode := windows.ACCESS_MODE(windows.GRANT_ACCESS)
	if r.Deny {
		mode = windows.DENY_ACCESS
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{AccessPermissions: windows.ACCESS_MASK(r.Mask), AccessMode: mode,
		Inheritance: inherit, Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeValue: windows.TrusteeValueFromSID(sid)}}}, dacl)
	if err != nil {
		return err
	}
	info := windows.SECURITY_INFORMATION(windows.DACL_SECURITY_INFORMATION | windows.UNPROTECTED_DACL_SECURITY_INFORMATION)
	if control, _, err := sd.Control(); err == nil && control&windows.SE_DACL_PROTECTED != 0 {
		info = windows.DACL_SECURITY_INFORMATION | windows.PROTECTED_DACL_SECURITY_INFORMATION
	}
	if err := windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT, info, nil, nil, acl, nil); err != nil {
		return err
	}
	// Read it back: a file system without ACLs (and Wine) accepts the call
	// and keeps nothing.
	if sd, err = windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION); err == nil {
		dacl, _, err = sd.DACL()
	}
	if err != nil {
		return fmt.Errorf("read the ACL back: %w", err)
	}
	if !hasACE(dacl, sid, r, uint8(inherit)) {
		return errors.New("the file system kept no ACE (a volume without ACLs?)")
	}
	return nil
}

// hasACE reports whether dacl holds an explicit ACE of r's kind for sid
// with at least r's rights and the given inheritance flags.
func hasACE(dacl *windows.ACL, sid *windows.SID, r aclRule, inherit uint8) bool {
	if dacl == nil {
		return false
	}
	kind := uint8(windows.ACCESS_ALLOWED_ACE_TYPE)
	if r.Deny {
		kind = windows.ACCESS_DENIED_ACE_TYPE
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE // a denied ACE has the same layout
		if windows.GetAce(dacl, i, &ace) != nil {
			return false
		}
		h := ace.Header
		if h.AceType == kind && h.AceFlags&windows.INHERITED_ACE == 0 && h.AceFlags&3 == inherit &&
			uint32(ace.Mask)&r.Mask == r.Mask && (*windows.SID)(unsafe.Pointer(&ace.SidStart)).Equals(sid) {
			return true
		}
	}
	return false
}

// confineWrites sets the ACEs of o's policy for the project's SID and
// returns the restricted token the command is to run with.
func confineWrites(o *opts) (windows.Token, error) {
	sid, err := windows.StringToSid(tokenSID(o.root))
	if err != nil {
		return 0, fmt.Errorf("the project's SID: %w", err)
	}
	if err := applyRules(tokenRules(o), sid); err != nil {
		return 0, err
	}
	return restrictedToken(sid)
}

// findToken checks that Windows confines a restricted token's writes
// here: in a directory of its own, it grants a probe SID one directory
// and denies it another below, and runs the helper (stageProbe) with the
// token; the helper must write in the first and in neither the second nor
// the directory above. Any failure (the API missing, an ACL refused, a
// write that went through: Wine enforces no restricted token) says why
// commands are not confined.
func findToken(helper string) (bool, error) {
	if os.Getenv(tokenProbeEnv) != "" {
		return false, errors.New("inside the restricted token's probe")
	}
	dir, err := os.MkdirTemp("", "agent-lsp-token-probe-")
	if err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	defer os.RemoveAll(dir)
	w := filepath.Join(dir, "w")
	if err := os.MkdirAll(filepath.Join(w, "deny"), 0o755); err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	o := &opts{stage: stageProbe, root: w, write: []string{w}, ro: []string{"deny"}, token: true}
	tok, err := confineWrites(o)
	if err != nil {
		return false, fmt.Errorf("a restricted token could not be made: %w", err)
	}
	defer tok.Close()
	cmd := exec.Command(helper, o.commandLine(helper)[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Token: syscall.Token(tok)}
	cmd.Env = append(os.Environ(), tokenProbeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("a restricted token did not confine a probe's writes (%v: %s)", err, clipProbe(out))
	}
	// The probe's word is not enough (a helper binary that is not one, such
	// as a test binary without sandbox.Main, exits 0 too): look.
	_, errOK := os.Stat(filepath.Join(w, "allowed"))
	_, errDeny := os.Stat(filepath.Join(w, "deny", "denied"))
	_, errOut := os.Stat(filepath.Join(dir, "outside"))
	if errOK != nil || errDeny == nil || errOut == nil || !strings.Contains(string(out), tokenProbeOK) {
		return false, fmt.Errorf("a restricted token's probe did not do what it should (%s)", clipProbe(out))
	}
	return true, nil
}

// tokenProbeEnv marks the probe's process: a probe started by a probe
// (a helper that is not one running New again) gives up at once.
const tokenProbeEnv = "AGENT_LSP_TOKEN_PROBE"

// tokenProbeOK is what the probe prints when all went as it should.
const tokenProbeOK = "agent-lsp token probe: ok"

// clipProbe is the probe's output, short.
func clipProbe(out []byte) string {
	if len(out) > 300 {
		out = out[:300]
	}
	return string(out)
}

// tokenProbe is the probe's side (stageProbe, run with the token): it
// writes in its writable directory, must not write in the denied one below
// it nor in the directory above, and exits 0 when all is as it should be.
func tokenProbe(o *opts) error {
	if len(o.write) != 1 || len(o.ro) != 1 {
		return errors.New("probe: one writable and one denied directory expected")
	}
	if err := os.WriteFile(filepath.Join(o.write[0], "allowed"), nil, 0o644); err != nil {
		return fmt.Errorf("probe: no write in the writable directory: %w", err)
	}
	if os.WriteFile(filepath.Join(o.root, o.ro[0], "denied"), nil, 0o644) == nil {
		return errors.New("probe: wrote in the denied directory")
	}
	if os.WriteFile(filepath.Join(filepath.Dir(o.root), "outside"), nil, 0o644) == nil {
		return errors.New("probe: wrote outside the writable directory")
	}
	fmt.Println(tokenProbeOK)
	os.Exit(0)
	return nil
}
