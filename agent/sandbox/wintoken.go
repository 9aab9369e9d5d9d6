package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Windows confines a command's writes with a write-restricted token
// (wintoken_windows.go), as Codex's Windows sandbox does: the helper makes a
// restricted copy of its own token (CreateRestrictedToken with
// WRITE_RESTRICTED, LUA_TOKEN and DISABLE_MAX_PRIVILEGE) whose restricting
// SIDs are the project's own SID (tokenSID) and the logon session's. Windows
// then grants a write only when the user's rights allow it AND an ACE for
// a restricting SID allows it; reads are checked as the user's. The helper
// grants the project's SID write access, inherited, on the writable
// directories, and denies it writing, deleting and changing the ACL of every
// .git and protected path (inherited), and deleting (renaming) the
// directories above them; these ACEs name only the project's SID, so they
// change nothing for the user's own programs. The command runs with that
// token inside the command's Job Object.
//
// An AppContainer would also confine reads (a command could not read the
// user's toolchains, caches and home unless each were granted to it), and
// needs a profile per container: the write-restricted token confines what
// the policy says (read everywhere, write only in ...) and nothing else.
//
// What is computed here, from the helper's options, is pure and tested on
// every platform: the SID, the ACEs (tokenRules) and their SDDL. Applying
// them and making the token needs Windows.

// RestrictedToken: Windows's write-restricted token with ACEs on the
// writable directories and the protected paths (wintoken.go).
const RestrictedToken Isolation = "restricted-token"

// Access rights of the ACEs (winnt.h).
const (
	fileReadData       = 0x1
	fileWriteData      = 0x2
	fileAppendData     = 0x4
	fileWriteEA        = 0x10
	fileDeleteChild    = 0x40
	fileWriteAttrs     = 0x100
	rightDelete        = 0x10000
	rightWriteDAC      = 0x40000
	rightWriteOwner    = 0x80000
	fileGenericRead    = 0x120089
	fileGenericWrite   = 0x120116
	fileGenericExecute = 0x1200a0

	// grantMask is what the command may do in a writable directory: read,
	// write, run, and delete what it may write. Not FILE_DELETE_CHILD (it
	// would let the command delete a denied .git through its directory), nor
	// WRITE_DAC or WRITE_OWNER (it would let it lift a deny).
	grantMask = fileGenericRead | fileGenericWrite | fileGenericExecute | rightDelete
	// denyMask is what it may not do to a .git or protected path and what
	// lies below it: write data or attributes, delete, rename, change the
	// ACL or the owner. Reads and SYNCHRONIZE stay.
	denyMask = fileWriteData | fileAppendData | fileWriteEA | fileWriteAttrs | fileDeleteChild | rightDelete | rightWriteDAC | rightWriteOwner
	// pinMask keeps a directory above a protected path where it is: it
	// cannot be deleted or renamed (a rename needs DELETE on the source),
	// so no other directory takes its place. What is in it is not pinned.
	pinMask = rightDelete
)

// aclRule is one ACE the helper puts on a path for the project's SID.
type aclRule struct {
	Path string
	Deny bool
	// Inherit: the ACE applies to the path and everything below it
	// (OBJECT_INHERIT and CONTAINER_INHERIT); on a file it is the file's.
	Inherit bool
	Mask    uint32
}

// SDDL is the rule's ACE in SDDL, for sid: "(A;OICI;0x1301bf;;;S-1-...)".
func (r aclRule) SDDL(sid string) string {
	kind, flags := "A", ""
	if r.Deny {
		kind = "D"
	}
	if r.Inherit {
		flags = "OICI"
	}
	return fmt.Sprintf("(%s;%s;%#x;;;%s)", kind, flags, r.Mask, sid)
}

// tokenSID is the SID the commands of the project at root are restricted
// to: "S-1-15-3-1024-" and eight sub-authorities of a SHA-256 of the root,
// in the form Windows gives capability SIDs derived from a name. One per
// project, so that a command of one project cannot write where another
// project's commands may. Windows compares paths without case: so does the
// SID.
func tokenSID(root string) string {
	sum := sha256.Sum256([]byte("agent-lsp sandbox\x00" + strings.ToLower(filepath.Clean(root))))
	var b strings.Builder
	b.WriteString("S-1-15-3-1024")
	for i := range 8 {
		fmt.Fprintf(&b, "-%d", binary.LittleEndian.Uint32(sum[4*i:]))
	}
	return b.String()
}

// tokenRules are the ACEs that confine a command run with o's options: a
// grant on each writable directory (o.write), a deny on every .git and
// protected path (o.ro relative to o.root, o.roAbs, and o.links, the
// links themselves), and a pin on the directories above them (o.pin).
// Denies come first. Relative writable paths, empty ones and ones that name
// the root of a drive or of the file system are dropped (a command must
// never write a whole disk); a relative protected path that leaves the root
// is dropped (a deny there would protect nothing of the project). The
// rules name paths only: no path can change an ACE.
func tokenRules(o *opts) []aclRule {
	var rules []aclRule
	seen := map[aclRule]bool{}
	add := func(r aclRule) {
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	rel := func(rels []string, f func(string)) {
		for _, r := range rels {
			abs := filepath.Join(o.root, filepath.FromSlash(r))
			if _, ok := inside(o.root, abs); ok && r != "" && o.root != "" && abs != filepath.Clean(o.root) {
				f(abs)
			}
		}
	}
	rel(o.ro, func(p string) { add(aclRule{Path: p, Deny: true, Inherit: true, Mask: denyMask}) })
	rel(o.links, func(p string) { add(aclRule{Path: p, Deny: true, Mask: denyMask}) })
	for _, p := range o.roAbs {
		if filepath.IsAbs(p) {
			add(aclRule{Path: filepath.Clean(p), Deny: true, Inherit: true, Mask: denyMask})
		}
	}
	rel(o.pin, func(p string) { add(aclRule{Path: p, Deny: true, Mask: pinMask}) })
	for _, p := range o.write {
		if p == "" || !filepath.IsAbs(p) || isFSRoot(p) {
			continue
		}
		add(aclRule{Path: filepath.Clean(p), Inherit: true, Mask: grantMask})
	}
	slices.SortStableFunc(rules, func(a, b aclRule) int {
		if a.Deny != b.Deny {
			if a.Deny {
				return -1
			}
			return 1
		}
		return 0
	})
	return rules
}

// linksFor lists the protected links of sc (relative, slash-separated)
// that the user did not make writable: a deny on a link is a deny on the
// link itself (its target is denied as a read-only path).
func linksFor(sc *scan, p Policy) []string {
	var out []string
	for _, e := range sc.entries() {
		if e.kind == protectedLink && !liftedByUser(p, e.rel) {
			out = append(out, e.rel)
		}
	}
	return out
}

// isFSRoot reports whether p names the root of a file system or a drive
// (`/`, `C:\`, `\\server\share\`).
func isFSRoot(p string) bool {
	c := filepath.Clean(p)
	return filepath.Dir(c) == c
}

// describeToken is what Describe says of p under a restricted token.
func describeToken(p Policy, enforce, not func(string, ...any)) {
	enforce("files: read everywhere (as the user), write only in %s (a write-restricted token: the project's SID is granted writes there, inherited)", strings.Join(p.WritableDirs(), ", "))
	enforce("git metadata and protected paths: the project's SID is denied writing, deleting, renaming and changing the ACL of every .git and protected path found before the command (nested repositories and a worktree's repository included), and deleting the directories above them; protected paths the command creates are removed after it")
	enforce("privileges: none but bypass traverse checking; administrators' rights filtered (LUA token)")
	enforce("registry: no writes, the user's own keys (HKCU) included")
	enforce("processes: a Job Object: no process outlives the command")
	if !p.Network {
		not("network: Windows cannot turn one process's network off without firewall rules (an administrator's): commands of a project whose network is off ask first")
	}
	not("a private temporary directory: %%TEMP%% is writable and shared with the user's other programs")
	not("named pipes, the clipboard, windows and other objects of the user's session: the token restricts writes to the project's SID and the logon session's, and the logon session's objects stay writable")
	not("grants outlive the command: a directory removed from sandbox.writable stays writable to the project's commands until its ACE is removed (icacls DIR /remove SID)")
}
