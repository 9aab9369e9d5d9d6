//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupPrefix names the pids cgroups of commands: agent-lsp.<pid>.<n>,
// <pid> the process that made it (to sweep those of processes gone).
const cgroupPrefix = "agent-lsp."

// cgroups makes a pids cgroup per command, where the pids controller can be
// written here: cgroup v1's pids hierarchy, or a cgroup v2 subtree with the
// pids controller delegated to this user.
type cgroups struct {
	once sync.Once
	base string // set once: where commands' cgroups are made; "" when none can be
	kind string // set once: "v1" or "v2"
	seq  atomic.Int64
}

// cgroupsHere returns the pids cgroups of this machine (found on first use).
func cgroupsHere() *cgroups { return &cgroups{} }

func (c *cgroups) find() {
	c.once.Do(func() {
		base, kind := pidsBase()
		if base == "" {
			return
		}
		probe := filepath.Join(base, fmt.Sprintf("%s%d.probe", cgroupPrefix, os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil && !os.IsExist(err) {
			return
		}
		ok := os.WriteFile(filepath.Join(probe, "pids.max"), []byte("10\n"), 0o644) == nil
		syscall.Rmdir(probe)
		if ok {
			c.base, c.kind = base, kind
			sweep(base)
		}
	})
}

// Bound says how the number of a command's processes is bounded here.
func (c *cgroups) bound() string {
	c.find()
	switch {
	case c.base != "":
		return "pids cgroup " + c.kind
	case os.Getuid() != 0:
		return "RLIMIT_NPROC"
	}
	return ""
}

// create makes a cgroup for one command, limited to max tasks; "" when
// there is no pids controller to use.
func (c *cgroups) create(max int) (string, error) {
	c.find()
	if c.base == "" || max <= 0 {
		return "", nil
	}
	dir := filepath.Join(c.base, fmt.Sprintf("%s%d.%d", cgroupPrefix, os.Getpid(), c.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)+"\n"), 0o644); err != nil {
		syscall.Rmdir(dir)
		return "", fmt.Errorf("pids cgroup: %w", err)
	}
	return dir, nil
}

// remove removes a command's cgroup (empty once its processes are gone).
func (c *cgroups) remove(dir string) {
	if dir == "" {
		return
	}
	for i := 0; i < 50; i++ { // the last exits are accounted a moment after the wait
		if err := syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sweep removes empty cgroups left by agent-lsp processes that are gone.
func sweep(base string) {
	des, _ := os.ReadDir(base)
	for _, de := range des {
		rest, ok := strings.CutPrefix(de.Name(), cgroupPrefix)
		if !ok || !de.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, ".")
		if pid, err := strconv.Atoi(pidText); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			syscall.Rmdir(filepath.Join(base, de.Name())) // fails if a process is still in it
		}
	}
}

// joinCgroup moves this process into the cgroup dir (before it starts
// anything, so every process of the command is counted there).
func joinCgroup(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0\n"), 0); err != nil {
		return fmt.Errorf("join the pids cgroup: %w", err)
	}
	return nil
}

// pidsBase finds the cgroup of this process in which a pids cgroup can be
// made: the pids hierarchy of cgroup v1, or the v2 cgroup when its
// subtree has the pids controller. It returns the directory and "v1" or
// "v2", or "" when there is neither.
func pidsBase() (string, string) {
	var v1, v2 string
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, rest := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(rest) < 3 {
			continue
		}
		switch rest[0] {
		case "cgroup":
			for _, opt := range strings.Split(rest[2], ",") {
				if opt == "pids" && v1 == "" {
					v1 = fields[4]
				}
			}
		case "cgroup2":
			if v2 == "" {
				v2 = fields[4]
			}
		}
	}
	f.Close()
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" && v1 != "" {
				return filepath.Join(v1, parts[2]), "v1"
			}
		}
	}
	for _, line := range strings.Split(string(self), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok && v2 != "" {
			base := filepath.Join(v2, path)
			sub, _ := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
			if strings.Contains(" "+strings.TrimSpace(string(sub))+" ", " pids ") && unix.Access(base, unix.W_OK) == nil {
				return base, "v2"
			}
		}
	}
	return "", ""
}
