package sandbox

import (
	"fmt"
	"strings"
)

// Report says what a policy enforces here: the mechanism in force, and the
// rights Landlock actually applies at this kernel's ABI (best-effort mode
// silently drops the rest). Every line is backed by a test.
type Report struct {
	Mode        Mode `json:"mode"`
	LandlockABI int  `json:"landlockABI"`
	// Isolation is "namespaces", "snapshot" (where user namespaces are
	// refused, or forced), "seatbelt" (macOS), "restricted-token"
	// (Windows), or "none" (not confined).
	Isolation Isolation `json:"isolation"`
	// Processes says what bounds the number of a command's processes:
	// "pids cgroup v1", "pids cgroup v2" or "RLIMIT_NPROC"; on Windows, the
	// Job Object and its bounds; "" when nothing does.
	Processes   string   `json:"processes,omitempty"`
	Enforced    []string `json:"enforced"`
	NotEnforced []string `json:"notEnforced,omitempty"`
	Writable    []string `json:"writable,omitempty"`
	Network     bool     `json:"network"`
}

// Describe reports what p enforces on this machine.
func (s *Sandbox) Describe(p Policy) Report {
	iso := s.Isolation(p)
	// Network is what commands can do, not the setting: before ABI 4 and
	// without a network namespace nothing confines it.
	r := Report{Mode: p.Mode, LandlockABI: s.abi, Isolation: iso, Enforced: []string{},
		Network: p.Network || iso == None || iso == RestrictedToken || (iso == Snapshot && s.abi < 4)}
	switch {
	case p.Mode == Off:
		r.NotEnforced = []string{"the sandbox is off: commands run with the user's full rights"}
		return r
	case iso == Seatbelt:
		r.Writable = p.WritableDirs()
		describeSeatbelt(p, func(f string, a ...any) { r.Enforced = append(r.Enforced, fmt.Sprintf(f, a...)) },
			func(f string, a ...any) { r.NotEnforced = append(r.NotEnforced, fmt.Sprintf(f, a...)) })
		return r
	case iso == RestrictedToken:
		r.Writable, r.Processes = p.WritableDirs(), describeJob(p)
		describeToken(p, func(f string, a ...any) { r.Enforced = append(r.Enforced, fmt.Sprintf(f, a...)) },
			func(f string, a ...any) { r.NotEnforced = append(r.NotEnforced, fmt.Sprintf(f, a...)) })
		return r
	case s.abi == 0:
		r.NotEnforced = []string{s.Unconfined() + ": commands run with the user's full rights"}
		if jobs {
			r.Processes = describeJob(p)
		}
		return r
	}
	enforce := func(f string, a ...any) { r.Enforced = append(r.Enforced, fmt.Sprintf(f, a...)) }
	not := func(f string, a ...any) { r.NotEnforced = append(r.NotEnforced, fmt.Sprintf(f, a...)) }
	r.Writable = p.WritableDirs()
	enforce("files: read everywhere, write only in %s", strings.Join(r.Writable, ", "))
	if s.abi >= 2 {
		enforce("files: no linking or renaming into another directory")
	}
	if s.abi >= 3 {
		enforce("files: no truncating outside the writable directories")
	} else {
		not("truncating files (needs Landlock ABI 3)")
	}
	enforce("capabilities: none (bounding, ambient, permitted and effective sets empty, root included) and no_new_privs")
	if iso == Namespaces {
		s.describeNamespaces(p, enforce, not)
	} else {
		s.describeSnapshot(p, enforce, not)
	}
	if r.Processes = s.cgroups.bound(); r.Processes != "" {
		enforce("processes: at most %d at once, threads included (%s)", p.maxProcs(), r.Processes)
	} else {
		not("the number of processes (no writable pids cgroup here, and root ignores RLIMIT_NPROC)")
	}
	if s.abi >= 5 {
		enforce("devices: ioctl only on /dev/null, /dev/zero and terminals")
	}
	if s.abi >= 6 {
		enforce("IPC: abstract Unix sockets and signals scoped to the sandbox (Landlock): the daemon, the editor and the server are out of reach")
	} else {
		not("abstract Unix sockets and signals (needs Landlock ABI 6)")
	}
	if p.GoCache != "" && p.Mode == WorkspaceWrite {
		enforce("Go build cache: the sandbox's own for this project (GOCACHE=%s); the user's is read-only", p.GoCache)
	}
	if !p.Network {
		enforce("package caches (Go modules, npm, yarn, pnpm, bun, pip, uv, poetry, cargo, mix, hex): read-only, as the project's network is off")
	}
	return r
}

func (s *Sandbox) describeNamespaces(p Policy, enforce, not func(string, ...any)) {
	enforce("git metadata and protected paths: read-only mounts of every .git (nested repositories and a worktree's repository included) and protected path, their directories pinned against renaming")
	enforce("processes: a PID namespace of the command's own: every process ends when the command does, and /proc shows no other")
	temp := "/tmp"
	if p.Temp != "" && p.Temp != "/tmp" {
		temp += " and " + p.Temp
	}
	enforce("temporary files: a private tmpfs of %d MiB on %s, and on /dev/shm", p.tempSize()>>20, temp)
	if !p.Network {
		enforce("network: a network namespace with only its own loopback: no TCP, UDP or raw socket reaches outside")
	}
	enforce("pathname Unix sockets bound outside the writable directories when the command starts: masked")
	not("pathname Unix sockets bound after the command started, or bound in another network namespace")
}

func (s *Sandbox) describeSnapshot(p Policy, enforce, not func(string, ...any)) {
	if s.probeErr != nil {
		not("namespaces: refused here (%v)", s.probeErr)
	}
	enforce("git metadata and protected paths: saved before the project's commands and restored after their last process ends (all of .git but objects/, refs/, logs/, index, packed-refs and *.lock), through os.Root, never following a symlink")
	enforce("processes: a subreaper kills every process of the command (setsid, double-forked and nohup ones included) when it ends")
	if !p.Network {
		if s.abi >= 4 {
			enforce("network: TCP bind and connect denied (Landlock); raw sockets denied (no capabilities)")
		} else {
			not("TCP (needs Landlock ABI 4 or namespaces)")
		}
		if s.abi >= 10 {
			enforce("network: UDP bind and send denied (Landlock)")
		} else {
			not("UDP (needs Landlock ABI 10 or namespaces)")
		}
		not("Multipath TCP sockets (needs namespaces)")
	}
	not("a private /tmp (needs namespaces)")
	if s.abi >= 9 {
		enforce("pathname Unix sockets outside the writable directories: connect denied (Landlock)")
	} else {
		not("pathname Unix sockets (needs Landlock ABI 9 or namespaces)")
	}
}
