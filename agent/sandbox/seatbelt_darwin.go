//go:build darwin

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runHelper runs macOS's one stage: the command under Seatbelt.
func runHelper(o *opts) error {
	if o.stage != stageSeatbelt {
		return fmt.Errorf("stage %q runs only on Linux", o.stage)
	}
	return runSeatbelt(o)
}

// runSeatbelt runs o's command under sandbox-exec with o's profile, watches
// its processes while it runs, and when it ends (or this helper is asked to
// end) kills every process of it, then exits as the command did.
func runSeatbelt(o *opts) error {
	temp, err := os.MkdirTemp("", "agent-lsp-command-")
	if err != nil {
		return fmt.Errorf("make the command's temporary directory: %w", err)
	}
	defer os.RemoveAll(temp) // on failure; os.Exit below skips it
	sp := seatbeltSpecFor(o, temp, realPath)
	cmd := exec.Command(seatbeltExec, seatbeltArgs(sp, o.argv)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = setenv(o.env(), "TMPDIR", temp)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", seatbeltExec, err)
	}
	t := newTracker()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			t.killAll()
			os.RemoveAll(temp)
			os.Exit(exitStatus(cmd.ProcessState))
		case sig := <-stop:
			t.killAll()
			os.RemoveAll(temp)
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-tick.C:
			t.scan()
		}
	}
}

// exitStatus is a shell's status for how a process ended.
func exitStatus(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// realPath is p with every symlink followed; for a path that does not
// exist yet, its nearest existing parent's real path joined with the rest.
func realPath(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(dir) == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// tracker knows the processes of the command (see commandProcs). Only
// the helper's goroutine uses it.
type tracker struct {
	self int
	sid  int // this helper's session when it leads one; 0 otherwise
	seen map[proc]bool
}

func newTracker() *tracker {
	t := &tracker{self: os.Getpid(), seen: map[proc]bool{}}
	if sid, err := unix.Getsid(0); err == nil && sid == t.self {
		t.sid = sid
	}
	return t
}

// scan adds the command's processes running now to what was seen, and
// returns those alive now.
func (t *tracker) scan() []proc {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	table := make([]procInfo, 0, len(kps))
	for _, kp := range kps {
		if kp.Proc.P_stat == 5 { // SZOMB: dead, waiting for its parent
			continue
		}
		pi := procInfo{proc: proc{pid: int(kp.Proc.P_pid), start: kp.Proc.P_starttime.Sec*1e6 + int64(kp.Proc.P_starttime.Usec)}, ppid: int(kp.Eproc.Ppid)}
		if t.sid != 0 {
			pi.sid, _ = unix.Getsid(pi.pid)
		}
		table = append(table, pi)
	}
	return commandProcs(table, t.self, t.sid, t.seen)
}

// killAll stops every process of the command (so none forks again), looks
// once more, and kills them all; a few rounds, until none is left.
func (t *tracker) killAll() {
	for range 10 {
		procs := t.scan()
		if len(procs) == 0 {
			return
		}
		for _, p := range procs {
			unix.Kill(p.pid, unix.SIGSTOP)
		}
		for _, p := range t.scan() {
			if err := unix.Kill(p.pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				fmt.Fprintf(os.Stderr, "agent-lsp sandbox: kill %d: %v\n", p.pid, err)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkSeatbelt runs sandbox-exec with args (a profile and a command that
// does nothing).
func checkSeatbelt(args []string) error {
	out, err := exec.Command(seatbeltExec, args...).CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
	}
	return err
}
