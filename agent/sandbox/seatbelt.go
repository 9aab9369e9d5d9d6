package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// macOS confines commands with Seatbelt: the helper (seatbelt_darwin.go)
// runs them as `sandbox-exec -p PROFILE -D NAME=PATH... sh -c LINE` in a
// session of its own, and kills every process of the command when it ends.
// The profile is made here, from the same options as the Linux helper's, so
// that it is tested on every platform; only running it needs macOS.
//
// The profile names no path: every path is a parameter (-D), which
// sandbox-exec hands to the profile as a string value, so a repository
// path holding `"`, `)` or a newline cannot change the profile's meaning.
// The profile's text depends only on how many paths of each kind there
// are, never on what they hold.

// seatbeltExec is the one sandbox-exec used (never one found on PATH).
const seatbeltExec = "/usr/bin/sandbox-exec"

// stageSeatbelt is the helper's stage on macOS: it runs the command under
// sandbox-exec and kills what the command left.
const stageSeatbelt stage = "seatbelt"

// findSeatbelt returns sandbox-exec's path on macOS when it is there and
// runs a command under profiles of both kinds (network off and on: a
// macOS that no longer knows an operation the profile names refuses it
// whole); "" and why not otherwise ("" and nil elsewhere than macOS).
func findSeatbelt() (string, error) {
	if runtime.GOOS != "darwin" {
		return "", nil
	}
	if fi, err := os.Stat(seatbeltExec); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is missing", seatbeltExec)
	}
	for _, network := range []bool{false, true} {
		o := &opts{root: "/", write: []string{os.TempDir()}, ro: []string{"nonexistent/.git"}, pin: []string{"nonexistent"}, network: network}
		if err := checkSeatbelt(seatbeltArgs(seatbeltSpecFor(o, os.TempDir(), func(p string) string { return p }), []string{"/usr/bin/true"})); err != nil {
			return "", fmt.Errorf("%s refused agent-lsp's profile: %w", seatbeltExec, err)
		}
	}
	return seatbeltExec, nil
}

// seatbeltSpec is what one command's profile allows: absolute paths, each
// already resolved (macOS's /tmp and /var are links to /private/...: the
// kernel checks the real path).
type seatbeltSpec struct {
	Write    []string // directories the command may write (and bind Unix sockets in)
	ReadOnly []string // paths in them it may not write, nor anything below them
	Pins     []string // directories it may not rename, remove or replace (what is in them is not pinned)
	// Sockets are the directories whose Unix sockets the command may bind
	// and connect to (network off): the project and its private temporary
	// directory, never /tmp or $TMPDIR, where the user's other programs
	// listen (tmux, ssh-agent, the editor's IPC).
	Sockets []string
	Network bool // allow the network
}

// seatbeltSpecFor makes the spec of the helper's options: writable are
// o.write and the system's temporary directories (/tmp, /var/tmp: macOS
// programs use them beside $TMPDIR); read-only are every .git and protected
// path of the project (o.ro, o.roAbs) and the directories above them are
// pinned (o.pin), as the Linux helper mounts them. temp is the command's
// private temporary directory (its TMPDIR; "" for none). resolve gives a
// path's real path (symlinks followed; the path itself when it cannot); a
// path whose real path differs is listed both ways.
func seatbeltSpecFor(o *opts, temp string, resolve func(string) string) seatbeltSpec {
	both := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if p == "" || !filepath.IsAbs(p) {
				continue
			}
			p = filepath.Clean(p)
			out = append(out, p)
			if r := resolve(p); r != "" && r != p {
				out = append(out, r)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	inRoot := func(rels []string) []string {
		out := make([]string, 0, len(rels))
		for _, r := range rels {
			out = append(out, filepath.Join(o.root, filepath.FromSlash(r)))
		}
		return out
	}
	return seatbeltSpec{
		Write:    both(append(slices.Clone(o.write), "/tmp", "/var/tmp", temp)),
		ReadOnly: both(append(inRoot(o.ro), o.roAbs...)),
		Pins:     both(inRoot(o.pin)),
		Sockets:  both([]string{o.root, temp}),
		Network:  o.network,
	}
}

// seatbeltArgs is sandbox-exec's command line (without sandbox-exec
// itself) that runs argv under sp.
func seatbeltArgs(sp seatbeltSpec, argv []string) []string {
	args := []string{"-p", seatbeltProfile(sp)}
	param := func(prefix string, paths []string) {
		for i, p := range paths {
			args = append(args, "-D", fmt.Sprintf("%s%d=%s", prefix, i, p))
		}
	}
	param("W", sp.Write)
	param("R", sp.ReadOnly)
	param("P", sp.Pins)
	param("S", sp.Sockets)
	return append(args, argv...)
}

// seatbeltBase is what every command may do: run programs, read every
// file, and the few system services and devices programs need (after
// Chromium's and Codex's profiles). Everything not allowed is denied:
// writes, the network, other processes, and the services that would run a
// program outside the sandbox (LaunchServices, Apple events).
const seatbeltBase = `(version 1)
; agent-lsp: one command's Seatbelt profile (agent/sandbox/seatbelt.go).
; Every path is a parameter (-D): W* writable, R* read-only, P* pinned.
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow file-read*)
(allow user-preference-read)
(allow mach-host*)
(allow sysctl-read)
(allow sysctl-write (sysctl-name "kern.grade_cputype"))
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.PowerManagement.control"))
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))
(allow file-write-data file-ioctl (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper")
  (literal "/dev/tty") (literal "/dev/stdout") (literal "/dev/stderr") (regex #"^/dev/fd/[0-9]+$"))
`

// seatbeltNetwork is added when the network is allowed: IP sockets, and
// the services name lookups and TLS need. Unix sockets stay as they are
// without the network: the network is not the user's other programs.
const seatbeltNetwork = `; network on: IP anywhere, and name lookups
(allow network-bind (local ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-outbound (remote ip "*:*"))
(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.dnssd.service")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd"))
(allow sysctl-read (sysctl-name-regex #"^net.routetable"))
`

// seatbeltProfile is the SBPL profile of sp. Writes are allowed in one
// rule: in a writable directory and in no read-only path or pin, so no rule
// order or precedence decides it.
func seatbeltProfile(sp seatbeltSpec) string {
	var b strings.Builder
	b.WriteString(seatbeltBase)
	params := func(prefix string, n int, form string) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = fmt.Sprintf(form, fmt.Sprintf(`(param "%s%d")`, prefix, i))
		}
		return out
	}
	writable := params("W", len(sp.Write), "(subpath %s)")
	if len(writable) > 0 {
		b.WriteString("(allow file-write*\n  (require-all\n    (require-any\n      ")
		b.WriteString(strings.Join(writable, "\n      "))
		b.WriteString(")")
		for _, r := range params("R", len(sp.ReadOnly), "(require-not (subpath %s))") {
			b.WriteString("\n    " + r)
		}
		for _, p := range params("P", len(sp.Pins), "(require-not (literal %s))") {
			b.WriteString("\n    " + p)
		}
		b.WriteString("))\n")
	}
	// Network off: no IP socket gets anywhere, loopback included (the
	// host's loopback reaches other local servers; Linux gives a command a
	// loopback of its own, which Seatbelt cannot).
	if sp.Network {
		b.WriteString(seatbeltNetwork)
	}
	// Unix sockets only in the project and the command's own temporary
	// directory.
	b.WriteString("; Unix sockets: in the project and the command's temporary directory only\n(allow system-socket (socket-domain AF_UNIX))\n")
	for _, w := range params("S", len(sp.Sockets), "%s") {
		fmt.Fprintf(&b, "(allow network-bind (local unix-socket (subpath %s)))\n", w)
		fmt.Fprintf(&b, "(allow network-outbound (remote unix-socket (subpath %s)))\n", w)
	}
	return b.String()
}

// describeSeatbelt is what Describe says of p under Seatbelt.
func describeSeatbelt(p Policy, enforce, not func(string, ...any)) {
	enforce("files: read everywhere, write only in %s, /tmp and /var/tmp (Seatbelt, sandbox-exec)", strings.Join(p.WritableDirs(), ", "))
	enforce("git metadata and protected paths: not writable (every .git, nested repositories and a worktree's repository included, and every protected path found before the command), the directories above them not renamable; protected paths the command creates are removed after it")
	enforce("processes: run in a session of their own; when the command ends, every process of its session and every descendant seen while it ran is killed")
	enforce("other processes: no signals or process information outside the sandbox; no LaunchServices or Apple events (nothing starts outside it)")
	if !p.Network {
		enforce("network: no TCP, UDP or raw socket, loopback included")
	}
	enforce("Unix sockets: only in the project and the command's own temporary directory (its TMPDIR, removed after it): not the user's tmux, ssh-agent or editor")
	not("a private /tmp (Seatbelt has no mounts): /tmp and /var/tmp are writable and shared with the user's other programs; TMPDIR is the command's own")
	not("the number of processes and their memory (macOS has no pids cgroup)")
	not("protected paths created by the command while it runs (they are removed after it)")
}
