// Package sandbox confines the commands the agent runs. A command's shell is
// started through a helper (this binary, re-executed in a hidden mode, so
// the server itself is never restricted) that sets the confinement up and
// then runs the shell; every process the shell starts inherits it.
//
// Two mechanisms, chosen per machine (Isolation):
//
//   - namespaces: the helper starts in new user, mount, PID and IPC
//     namespaces (and a network namespace when the project's network is
//     off). It bind-mounts every .git and protected path of the project
//     read-only, mounts a private size-limited tmpfs on /tmp and a fresh
//     /proc, drops every capability, sets no_new_privs, applies Landlock,
//     and runs the command as the namespace's init: when the command ends,
//     every process left in the namespace ends with it.
//   - snapshot, where user namespaces are refused: no capabilities,
//     no_new_privs and Landlock as above; the helper is a child subreaper
//     that kills every process of the command when it ends, and the git
//     metadata and protected paths are snapshotted before the command and
//     restored after it, through os.Root, never following a symlink.
//
// Landlock grants writes only in the project, the temporary directory and
// the caches builds need (see Settings.Policy), TCP only when the network is
// allowed (snapshot mode; a network namespace does it otherwise), and scopes
// abstract Unix sockets and signals to the sandbox.
//
// On macOS the helper runs the command under Seatbelt with a profile made
// from the same policy (seatbelt.go), and kills every process of it when it
// ends. On Windows a Job Object holds every command's processes, ends them
// with it and bounds them (job.go, Holds), and a write-restricted token
// confines its writes (wintoken.go) where Windows enforces one; the network
// is not confined there, so commands of projects whose network is off ask.
package sandbox

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Mode says how commands are confined.
type Mode string

// Modes.
const (
	// WorkspaceWrite lets commands write in the project, the temporary
	// directory and build caches; the default.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets commands write only in the temporary directory.
	ReadOnly Mode = "read-only"
	// Off runs commands with the user's full rights.
	Off Mode = "off"
)

// ParseMode checks a mode's name; "" is WorkspaceWrite.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return WorkspaceWrite, nil
	case WorkspaceWrite, ReadOnly, Off:
		return m, nil
	}
	return "", fmt.Errorf("unknown sandbox mode %q (workspace-write, read-only or off)", s)
}

// Isolation is the mechanism that keeps a command's processes, git metadata
// and protected paths in check (see the package comment).
type Isolation string

// Isolations.
const (
	Namespaces Isolation = "namespaces"
	Snapshot   Isolation = "snapshot"
	// Seatbelt: macOS's sandbox (sandbox-exec) with a profile made from the
	// policy (seatbelt.go).
	Seatbelt Isolation = "seatbelt"
	// None: the command is not confined (the sandbox is off, or the kernel
	// has no Landlock).
	None Isolation = "none"
)

// IsolationEnv is the variable that forces the snapshot mechanism where
// namespaces work ("snapshot"): a test hook, and a way out for a user whose
// builds namespaces break. It is read from the environment the settings see.
const IsolationEnv = "AGENT_LSP_SANDBOX_ISOLATION"

// GoCacheEnv names one Go build cache for the sandboxed commands of every
// project, in place of one per project: for a machine that builds one
// project (a CI runner) or whose tests build many throwaway ones, which
// accepts that those projects share it. Read from the settings'
// environment.
const GoCacheEnv = "AGENT_LSP_SANDBOX_GOCACHE"

// Defaults of a policy's bounds.
const (
	// DefaultTempSize is the size of a command's private /tmp.
	DefaultTempSize = 1 << 30
)

// DefaultMaxProcs bounds the processes (threads count: the kernel counts
// tasks) of one command: a build on a big machine runs many compilers of
// many threads each.
func DefaultMaxProcs() int { return max(4096, 256*runtime.NumCPU()) }

// Policy is what one sandboxed command may do.
type Policy struct {
	Mode     Mode
	Root     string   // the project's root: writable in WorkspaceWrite
	Temp     string   // the temporary directory: always writable (a private tmpfs with namespaces)
	Caches   []string // build caches: writable in WorkspaceWrite (missing ones are skipped)
	Writable []string // more directories the user made writable
	Network  bool     // allow the network
	// GoCache is the sandbox's own Go build cache for this project (set as
	// GOCACHE for the command; writable); "" for none.
	GoCache string
	// Isolation forces a mechanism (Snapshot); "" lets the machine decide.
	Isolation Isolation
	MaxProcs  int   // processes and threads at most; 0: DefaultMaxProcs
	TempSize  int64 // bytes of the private /tmp; 0: DefaultTempSize
	// MaxMemory bounds the committed memory of a command's processes
	// together, in bytes, where a Job Object holds them (Windows); 0: three
	// quarters of the machine's memory.
	MaxMemory int64
}

// WritableDirs lists the directories the policy lets a command write.
func (p Policy) WritableDirs() []string {
	out := []string{p.Temp}
	if p.Mode == WorkspaceWrite {
		out = append(out, p.Root)
		out = append(out, p.Caches...)
		out = append(out, p.Writable...)
		out = append(out, p.GoCache)
	}
	return slices.DeleteFunc(out, func(d string) bool { return d == "" })
}

func (p Policy) maxProcs() int   { return cmp.Or(p.MaxProcs, DefaultMaxProcs()) }
func (p Policy) tempSize() int64 { return cmp.Or(p.TempSize, DefaultTempSize) }

// Sandbox runs commands under a policy on this machine's kernel. It owns
// what it learned about the projects it confines (their .git and protected
// paths, cached) and the snapshots of the snapshot mechanism.
type Sandbox struct {
	abi      int    // the kernel's Landlock ABI; 0: none, or turned off
	seatbelt string // macOS: the sandbox-exec that confines commands; "" for none
	noBelt   error  // macOS: why seatbelt is ""
	token    bool   // Windows: a write-restricted token confines commands' writes
	noToken  error  // Windows: why token is false
	helper   string // the binary to re-execute as the helper

	probeOnce sync.Once
	probed    Isolation // Namespaces or Snapshot, set once by probeOnce
	probeErr  error     // why namespaces are refused, when they are

	index   index   // per project: its .git and protected paths
	guard   guard   // per project: the snapshot of the commands running there
	cgroups cgroups // the pids controller, found once
}

// New returns a sandbox for this machine. With landlock false it behaves as
// on a kernel without Landlock (so that path can be tested anywhere).
func New(landlock bool) (*Sandbox, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find this binary: %w", err)
	}
	s := &Sandbox{helper: exe}
	if landlock {
		if v, err := ll.LandlockGetABIVersion(); err == nil {
			s.abi = v
		}
		s.seatbelt, s.noBelt = findSeatbelt()
		s.token, s.noToken = findToken(exe)
	}
	return s, nil
}

// ABI is the Landlock ABI version commands are confined with; 0 when none.
func (s *Sandbox) ABI() int { return s.abi }

// Confines reports whether commands run under p are confined: on Windows
// only when the project's network is allowed, as Windows cannot turn one
// process's network off (its commands run with the restricted token all
// the same, and ask).
func (s *Sandbox) Confines(p Policy) bool {
	return p.Mode != Off && (s.abi > 0 || s.seatbelt != "" || (s.token && p.Network))
}

// Holds reports whether commands run under p go through the sandbox: when
// they are confined, and on Windows, where a Job Object holds every
// command's processes (no survivors, bounded), and a restricted token
// confines their writes where Windows enforces one, even when they are not
// confined (their network is not).
func (s *Sandbox) Holds(p Policy) bool { return s.Confines(p) || (p.Mode != Off && (jobs || s.token)) }

// Unconfined says why no command is confined on this machine; "" when
// commands are (unless the sandbox is off).
func (s *Sandbox) Unconfined() string {
	switch {
	case s.abi > 0 || s.seatbelt != "" || s.token:
		return ""
	case s.noBelt != nil:
		return s.noBelt.Error()
	case s.noToken != nil:
		return "Windows confines no writes here (" + s.noToken.Error() + "); a Job Object only ends and bounds a command's processes"
	case runtime.GOOS == "darwin":
		return "Seatbelt (sandbox-exec) is turned off (the landlock setting)"
	case runtime.GOOS == "windows":
		return "Windows confines no writes here (a Job Object only ends and bounds a command's processes)"
	case runtime.GOOS == "linux":
		return "this kernel has no Landlock (or it is turned off)"
	}
	return "this system has no sandbox agent-lsp can use"
}

// Isolation is the mechanism that confines commands run under p.
func (s *Sandbox) Isolation(p Policy) Isolation {
	switch {
	case p.Mode != Off && s.token:
		return RestrictedToken
	case !s.Confines(p):
		return None
	case s.seatbelt != "":
		return Seatbelt
	case p.Isolation == Snapshot:
		return Snapshot
	}
	s.probeOnce.Do(func() { s.probed, s.probeErr = probe(s.helper) })
	return s.probed
}

// Caches are the directories builds write to, per project type, under the
// environment getenv reads. Package caches hold extracted code a later
// build of any project runs, so they are writable only for projects whose
// network is allowed (network): Go's module cache, npm's, yarn's, pnpm's,
// bun's, pip's, uv's, poetry's, cargo's registry and git checkouts, mix's
// and hex's. Go's build cache is never shared: see GoCache.
func Caches(projectType string, network bool, getenv func(string) string) []string {
	if !network {
		return nil
	}
	home := getenv("HOME")
	cache := userCache(getenv)
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	join := func(base string, elem ...string) string {
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, elem...)...)
	}
	var dirs []string
	switch projectType {
	case "go":
		gopath := or(strings.Split(getenv("GOPATH"), string(os.PathListSeparator))[0], join(home, "go"))
		dirs = []string{or(getenv("GOMODCACHE"), join(gopath, "pkg", "mod"))}
	case "javascript", "typescript":
		dirs = []string{or(getenv("npm_config_cache"), join(home, ".npm")), join(cache, "yarn"), join(home, ".yarn"),
			join(cache, "pnpm"), join(home, ".local", "share", "pnpm"), join(home, ".bun", "install", "cache")}
	case "python":
		dirs = []string{join(cache, "pip"), join(cache, "uv"), join(cache, "pypoetry")}
	case "rust":
		cargo := or(getenv("CARGO_HOME"), join(home, ".cargo"))
		dirs = []string{join(cargo, "registry"), join(cargo, "git")}
	case "elixir":
		dirs = []string{join(home, ".mix"), join(home, ".hex")}
	}
	return slices.DeleteFunc(dirs, func(d string) bool { return d == "" })
}

// userCache is the user's cache directory as getenv sees it ("" if none).
func userCache(getenv func(string) string) string {
	if c := getenv("XDG_CACHE_HOME"); c != "" {
		return c
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache")
	}
	return ""
}

// GoCache is the sandbox's own Go build cache for the project at root, under
// the user's cache directory: one per project, so a command of one project
// cannot plant compiled code another project's build (or the user's own,
// which keeps its GOCACHE) would link. "" when there is no cache directory.
func GoCache(root string, getenv func(string) string) string {
	c := userCache(getenv)
	if c == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(c, "agent-lsp", "sandbox-go-build", hex.EncodeToString(sum[:8]))
}

// Settings are the user's sandbox settings, from which each project's
// policy is made.
type Settings struct {
	Mode     Mode
	Writable []string // more directories commands may write
	// Network names the projects whose commands may use the network; "*"
	// names every project.
	Network []string
	Temp    string              // the temporary directory (os.TempDir())
	Getenv  func(string) string // the environment build caches are found in
}

// Policy is the policy of one project's commands.
func (st Settings) Policy(project, projectType, root string) Policy {
	getenv := st.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	network := slices.Contains(st.Network, "*") || slices.Contains(st.Network, project)
	p := Policy{Mode: st.Mode, Root: root, Temp: st.Temp, Caches: Caches(projectType, network, getenv), Writable: st.Writable,
		Network: network, GoCache: cmp.Or(getenv(GoCacheEnv), GoCache(root, getenv))}
	if getenv(IsolationEnv) == string(Snapshot) {
		p.Isolation = Snapshot
	}
	return p
}
