package daemon

import "syscall"

// detached is how the daemon is started on Linux: in a process group of its
// own, so that the terminal's signals (Ctrl-C, a hangup), which go to the
// editor's foreground group, do not reach it, and it gives the terminal up
// itself (agent-lsp's leaveTerminal). Not in a session of its own: with
// the kernel's autogroups on (sched_autogroup_enabled, and the process in
// the root cpu cgroup), a session is a scheduling group, and each turn's
// wake-ups between the daemon and the process that started it (the
// editor's, or the one that shares its session) crossed groups: with
// autogroups off, 6.8-7.0 voluntary context switches per turn instead of
// 10.8, and a turn a fifth shorter.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
