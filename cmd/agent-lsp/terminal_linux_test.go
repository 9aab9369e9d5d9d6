package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// openPTY opens a pseudo-terminal: its master, kept open until the test
// ends (closing it hangs the terminal up), and its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// procStat is what /proc/<pid>/stat says of a process's session.
type procStat struct{ pgrp, session, tty int }

func statOf(t *testing.T, pid int) procStat {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// After the command's name: state ppid pgrp session tty_nr ...
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return procStat{pgrp: atoi(f[2]), session: atoi(f[3]), tty: atoi(f[4])}
}

// The daemon an editor in a terminal starts stays in the editor's session
// (with Linux's autogroups a session is a scheduling group: in one of its
// own, each turn's wake-ups crossed groups and a turn took a fifth longer),
// in a process group of its own (the terminal's Ctrl-C and hangup go to the
// editor's group, not to it), without the terminal (what it runs cannot
// prompt on the editor's screen or stop reading it), and survives the
// terminal's hangup. Here the window itself leads the terminal's session.
func TestDaemonStartedFromATerminal(t *testing.T) {
	ptm, pts := openPTY(t)
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srv := model(t, scripted.Script{})
	env := daemonEnv(store, srv, "AGENT_LSP_DAEMON_IDLE=1m") // the last value counts
	w := openWindow(t, "", env, map[string]string{"sample": sample(t)}, func(c *exec.Cmd) {
		c.ExtraFiles = []*os.File{pts}
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3} // the editor, in its terminal
	})
	st, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}
	editor, daemon := statOf(t, w.cmd.Process.Pid), statOf(t, st.Pid)
	if editor.tty == 0 {
		t.Fatal("the window has no controlling terminal: the test's setup did not take")
	}
	if daemon.session != editor.session {
		t.Errorf("the daemon is in session %d, the editor in %d", daemon.session, editor.session)
	}
	if daemon.pgrp != st.Pid || daemon.pgrp == editor.pgrp {
		t.Errorf("the daemon (pid %d) is in process group %d, the editor in %d", st.Pid, daemon.pgrp, editor.pgrp)
	}
	if daemon.tty != 0 {
		t.Errorf("the daemon kept the editor's terminal (tty %#x)", daemon.tty)
	}

	ptm.Close() // the terminal hangs up: its session's leader, the window, ends
	select {
	case <-w.exited:
	case <-time.After(time.Minute):
		t.Fatal("the window outlived its terminal's hangup")
	}
	if now, ok := status(t, store); !ok || now.Pid != st.Pid {
		t.Fatalf("the daemon did not outlive the terminal: %+v %v", now, ok)
	}
}

// agent-lsp an editor in a terminal starts (in-process, without the
// daemon) gives up that terminal too, and keeps the editor's session and
// process group.
func TestServerStartedFromATerminal(t *testing.T) {
	_, pts := openPTY(t)
	store := filepath.Join(t.TempDir(), "sessions.db")
	srv := model(t, scripted.Script{})
	w := openWindow(t, "", daemonEnv(store, srv, "AGENT_LSP_DAEMON=off"), map[string]string{"sample": sample(t)}, func(c *exec.Cmd) {
		// The editor: a shell leading the terminal's session, which starts
		// agent-lsp as its child.
		c.Args = []string{"sh", "-c", `"$0"; exit $?`, c.Path}
		c.Path = "/bin/sh"
		c.ExtraFiles = []*os.File{pts}
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	})
	editorPid := w.cmd.Process.Pid
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", editorPid, editorPid))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(kids)))
	if err != nil || pid == 0 {
		t.Skipf("the editor's child is not listed (%q, %v)", kids, err)
	}
	editor, server := statOf(t, editorPid), statOf(t, pid)
	if editor.tty == 0 {
		t.Fatal("the editor has no controlling terminal: the test's setup did not take")
	}
	if server.session != editor.session || server.pgrp != editor.pgrp {
		t.Errorf("the server is in session %d, group %d; the editor in %d, %d", server.session, server.pgrp, editor.session, editor.pgrp)
	}
	if server.tty != 0 {
		t.Errorf("the server kept the editor's terminal (tty %#x)", server.tty)
	}
}
