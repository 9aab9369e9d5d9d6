// Package sandbox confines the commands the agent runs, the way Codex does on
// Linux: the command's shell is started through a helper (this binary,
// re-executed in a hidden mode, so the server itself is never restricted) that
// applies Landlock (github.com/landlock-lsm/go-landlock) and then execs the
// shell. The restrictions are inherited by every process the shell starts.
//
// In workspace-write mode a command reads everywhere and writes only in the
// project, the temporary directory and the caches builds need; TCP bind and
// connect are denied unless the network is allowed; abstract Unix sockets
// and signals are scoped to the sandbox (so a command cannot reach the
// agent-lsp daemon, the editor or other programs through them). Landlock
// cannot forbid a subtree of a writable directory, nor pathname Unix sockets
// at ABI 7: the caller restores protected files after the command
// (see tools), and the environment is scrubbed of sockets.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

// Policy is what one sandboxed command may do.
type Policy struct {
	Mode     Mode
	Root     string   // the project's root: writable in WorkspaceWrite
	Temp     string   // the temporary directory: always writable
	Caches   []string // build caches: writable in WorkspaceWrite (missing ones are skipped)
	Writable []string // more directories the user made writable
	Network  bool     // allow TCP bind and connect
}

// WritableDirs lists the directories the policy lets a command write.
func (p Policy) WritableDirs() []string {
	out := []string{p.Temp}
	if p.Mode == WorkspaceWrite {
		out = append(out, p.Root)
		out = append(out, p.Caches...)
		out = append(out, p.Writable...)
	}
	return slices.DeleteFunc(out, func(d string) bool { return d == "" })
}

// Sandbox runs commands under a policy on this machine's kernel.
type Sandbox struct {
	abi    int    // the kernel's Landlock ABI; 0: none, or turned off
	helper string // the binary to re-execute as the helper
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
	}
	return s, nil
}

// ABI is the Landlock ABI version commands are confined with; 0 when none.
func (s *Sandbox) ABI() int { return s.abi }

// Confines reports whether commands run under p are confined at all.
func (s *Sandbox) Confines(p Policy) bool { return p.Mode != Off && s.abi > 0 }

// Argv returns the command line that runs argv under p: argv itself when
// nothing confines it, else the helper with the policy, then argv.
func (s *Sandbox) Argv(p Policy, argv ...string) []string {
	if !s.Confines(p) {
		return argv
	}
	out := []string{s.helper, helperArg}
	for _, d := range p.WritableDirs() {
		out = append(out, "--write", d)
	}
	if p.Network {
		out = append(out, "--network")
	}
	return append(append(out, "--"), argv...)
}

// Report says what a policy enforces here: the rights Landlock actually
// applies at this kernel's ABI (best-effort mode silently drops the rest).
type Report struct {
	Mode        Mode     `json:"mode"`
	LandlockABI int      `json:"landlockABI"`
	Enforced    []string `json:"enforced"`
	NotEnforced []string `json:"notEnforced,omitempty"`
	Writable    []string `json:"writable,omitempty"`
	Network     bool     `json:"network"`
}

// Describe reports what p enforces on this machine.
func (s *Sandbox) Describe(p Policy) Report {
	// Network is what commands can do, not the setting: before ABI 4 nothing confines it.
	r := Report{Mode: p.Mode, LandlockABI: s.abi, Network: p.Network || !s.Confines(p) || s.abi < 4, Enforced: []string{}}
	switch {
	case p.Mode == Off:
		r.NotEnforced = []string{"the sandbox is off: commands run with the user's full rights"}
		return r
	case s.abi == 0:
		r.NotEnforced = []string{"this kernel has no Landlock (or it is turned off): commands run with the user's full rights"}
		return r
	}
	r.Writable = p.WritableDirs()
	r.Enforced = append(r.Enforced, "files: read everywhere, write only in "+strings.Join(r.Writable, ", "))
	if s.abi >= 2 {
		r.Enforced = append(r.Enforced, "files: no linking or renaming into another directory")
	}
	if s.abi >= 3 {
		r.Enforced = append(r.Enforced, "files: no truncating outside the writable directories")
	} else {
		r.NotEnforced = append(r.NotEnforced, "truncating files (needs Landlock ABI 3)")
	}
	if s.abi >= 4 {
		if !p.Network {
			r.Enforced = append(r.Enforced, "network: TCP bind and connect denied")
		}
	} else {
		r.NotEnforced = append(r.NotEnforced, "network (needs Landlock ABI 4)")
	}
	if s.abi >= 5 {
		r.Enforced = append(r.Enforced, "devices: ioctl only on /dev/null, /dev/zero and terminals")
	}
	if s.abi >= 6 {
		r.Enforced = append(r.Enforced, "IPC: abstract Unix sockets and signals scoped to the sandbox")
	} else {
		r.NotEnforced = append(r.NotEnforced, "abstract Unix sockets and signals (needs Landlock ABI 6)")
	}
	if !p.Network {
		r.NotEnforced = append(r.NotEnforced, "UDP (needs Landlock ABI 10)", "Multipath TCP sockets", "pathname Unix sockets")
	}
	return r
}

// Caches are the directories builds write to, per project type, under the
// environment getenv reads: Go's build and module caches, npm's, yarn's,
// pnpm's, bun's, pip's, uv's, poetry's, cargo's, mix's and hex's, gradle's
// and maven's. Commands of a project may write to its type's caches.
func Caches(projectType string, getenv func(string) string) []string {
	home := getenv("HOME")
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
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
		dirs = []string{or(getenv("GOCACHE"), join(cache, "go-build")), or(getenv("GOMODCACHE"), join(gopath, "pkg", "mod"))}
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
	return Policy{Mode: st.Mode, Root: root, Temp: st.Temp, Caches: Caches(projectType, getenv), Writable: st.Writable,
		Network: slices.Contains(st.Network, "*") || slices.Contains(st.Network, project)}
}
