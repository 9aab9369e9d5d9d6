//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

func runHelper(o *opts) error {
	switch o.stage {
	case stageSpawn:
		return spawn(o)
	case stageNS, stageProbe:
		return nsInit(o)
	case stageReaper:
		return reaper(o)
	case stageRestrict:
		if err := restrict(o, false); err != nil {
			return err
		}
		path, err := exec.LookPath(o.argv[0])
		if err != nil {
			return err
		}
		return syscall.Exec(path, o.argv, o.env())
	}
	return fmt.Errorf("unknown stage %q", o.stage)
}

// nsAttr starts a process in new user, mount, PID and IPC namespaces (and a
// network namespace when netns): this user maps to itself (root to root,
// so its capabilities apply only to the namespaces), and it keeps the
// capabilities it needs to set them up across its exec.
func nsAttr(netns bool) *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC)
	if netns {
		flags |= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Setsid:      true,
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
	}
}

// nsInit sets up the namespaces it runs in (as their init), drops every
// right, and runs the command.
func nsInit(o *opts) error {
	cwd, _ := os.Getwd() // entered again once the mounts are made
	if err := joinCgroup(o.cgroup); err != nil {
		return err
	}
	if o.nproc > 0 {
		// In a user namespace of its own the count is of this user's tasks
		// in the namespace: the helper's threads and the command's.
		if err := limitProcs(o.nproc + 64); err != nil {
			return err
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	if err := bindAll(o); err != nil {
		return err
	}
	sockets := boundSockets(o.server) // read before /proc is replaced
	if err := privateTemp(o); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := maskSockets(sockets, o); err != nil {
		return err
	}
	if o.netns {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if cwd != "" {
		// The directory as mounted now; one the private /tmp hides stays
		// the directory it was.
		unix.Chdir(cwd)
	}
	if err := restrict(o, true); err != nil {
		return err
	}
	if o.stage == stageProbe {
		exit(0)
	}
	path, err := exec.LookPath(o.argv[0])
	if err != nil {
		return err
	}
	pid, err := syscall.ForkExec(path, o.argv, &syscall.ProcAttr{Env: o.env(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return err
	}
	// The namespace's init: reap every orphan, and end with the command.
	// When init exits the kernel kills whatever is left in the namespace
	// before its parent sees the exit.
	exit(waitFor(pid))
	return nil
}

// waitFor reaps children until pid ends and returns its exit status as a
// shell reports it.
func waitFor(pid int) int {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 126
		}
		if wpid == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// bindAll makes the pins and the read-only paths mounts. Paths inside the
// root are opened beneath it without following any symlink: a path that
// became a symlink since the scan stops the command.
func bindAll(o *opts) error {
	if len(o.pin)+len(o.ro) > 0 {
		root, err := unix.Open(o.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open the project: %w", err)
		}
		defer unix.Close(root)
		for i, rel := range append(append([]string{}, o.pin...), o.ro...) {
			fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the scan: nothing to protect there
			}
			if err != nil {
				return fmt.Errorf("%s changed while the command started (%w); run it again", rel, err)
			}
			err = bindFD(fd, i >= len(o.pin))
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("make %s read-only: %w", rel, err)
			}
		}
	}
	for _, abs := range o.roAbs {
		fd, err := unix.Open(abs, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // missing: git finds nothing there either
		}
		err = bindFD(fd, true)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("make %s read-only: %w", abs, err)
		}
	}
	return nil
}

// bindFD mounts the file or directory fd refers to onto itself, read-only
// when ro (which makes it a mount point too: it cannot be renamed or
// removed).
func bindFD(fd int, ro bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errors.New("it is a symlink")
	}
	mnt, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(mnt)
	if ro {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(mnt, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// privateTemp mounts a size-limited tmpfs of the namespace's own on /tmp
// (and on the temporary directory, when it is elsewhere) and /dev/shm.
// What the command must still see under /tmp (a project, a cache or a
// worktree's repository there) is carried over onto the new tmpfs.
func privateTemp(o *opts) error {
	hidden := append([]string{"/tmp"}, o.temps...)
	under := func(p string) bool {
		for _, h := range hidden {
			if p != h && strings.HasPrefix(p, h+"/") {
				return true
			}
		}
		return false
	}
	type carried struct {
		path string
		rw   bool
		fd   int
	}
	var cands []string
	for _, p := range append(append(append([]string{o.root}, o.write...), o.roAbs...), programDirs(o)...) {
		if p != "" && under(p) && !contains(o.temps, p) && !contains(cands, p) {
			cands = append(cands, p)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return strings.Count(cands[i], "/") < strings.Count(cands[j], "/") })
	var keep []carried
	for _, p := range cands {
		rw := underAny(p, o.write)
		// Within what is carried already, only what turns writable is
		// mounted again.
		if slices.ContainsFunc(keep, func(k carried) bool { return underAny(p, []string{k.path}) && (k.rw || !rw) }) {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			continue // missing
		}
		// Landlock's rule for /tmp covers what is mounted below it: what the
		// command may not write (a read-only project, a program's
		// directory) is made read-only.
		if !rw {
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
				return fmt.Errorf("carry %s over the private /tmp: %w", p, err)
			}
		}
		keep = append(keep, carried{p, rw, fd})
	}
	size := fmt.Sprintf("size=%d,mode=1777", o.tmpSize)
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, size); err != nil {
		return fmt.Errorf("mount a private /tmp: %w", err)
	}
	for _, t := range o.temps {
		if t == "/tmp" {
			continue
		}
		if strings.HasPrefix(t, "/tmp/") {
			os.MkdirAll(t, 0o700) // on the new tmpfs
		} else if fi, err := os.Stat(t); err != nil || !fi.IsDir() {
			continue // no such directory: nothing to hide
		}
		if err := unix.Mount("/tmp", t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mount the private temporary directory on %s: %w", t, err)
		}
	}
	for _, k := range keep {
		os.MkdirAll(k.path, 0o755)
		err := unix.MoveMount(k.fd, "", unix.AT_FDCWD, k.path, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(k.fd)
		if err != nil {
			return fmt.Errorf("carry %s over the private /tmp: %w", k.path, err)
		}
	}
	unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, size) // where there is one
	return nil
}

// programDirs are the directories the command's programs come from: its
// PATH's and its program's own (a tool or an MCP server installed below
// /tmp must still run; they are carried over read-only).
func programDirs(o *opts) []string {
	dirs := filepath.SplitList(os.Getenv("PATH"))
	if len(o.argv) > 0 && filepath.IsAbs(o.argv[0]) {
		dirs = append(dirs, filepath.Dir(o.argv[0]))
	}
	out := dirs[:0]
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// maxMasked bounds the sockets masked for one command.
const maxMasked = 4096

// boundSockets lists the pathname Unix sockets bound in the network
// namespace of process pid (the server's), from its /proc/net/unix.
func boundSockets(pid int) []string {
	if pid <= 0 {
		return nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < maxMasked {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			out = append(out, fields[7])
		}
	}
	return out
}

// maskSockets mounts /dev/null over each socket of paths that lies outside
// the directories the command may write (its own sockets are there): a
// connect then finds no socket. What a mount namespace cannot hide, a
// socket bound after this, is reported as not enforced.
func maskSockets(paths []string, o *opts) error {
	for _, p := range paths {
		if underAny(p, o.write) || underAny(p, []string{"/tmp", o.root}) {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			null, err := unix.OpenTree(unix.AT_FDCWD, "/dev/null", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err == nil {
				err = unix.MoveMount(null, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
				unix.Close(null)
			}
			if err != nil {
				unix.Close(fd)
				return fmt.Errorf("mask the socket %s: %w", p, err)
			}
		}
		unix.Close(fd)
	}
	return nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d != "" && (p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")) {
			return true
		}
	}
	return false
}

// loopbackUp brings up the loopback interface of a new network namespace:
// the command's own servers and clients meet there, and nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// secureBits keep root from regaining capabilities by exec or setuid, and
// ambient capabilities from being raised, for good (they need CAP_SETPCAP,
// which an unprivileged user outside a namespace lacks: no_new_privs covers
// that case).
const secureBits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7

// restrict drops every capability (bounding, ambient, inheritable,
// permitted, effective), sets no_new_privs, and applies Landlock. ns says
// the command runs in its own namespaces: /tmp and /dev/shm are its
// private tmpfs, and a network namespace (when the network is off) stands
// in for Landlock's TCP rules, so the command's own loopback servers work.
//
// Capabilities belong to threads, and the command gets those of the thread
// that forks or execs it: restrict locks the calling goroutine to its
// thread and drops them there (the caller forks or execs from it). The
// helper's other threads keep theirs, within its own user namespace, out of
// the command's reach: tracing a process needs a superset of its
// capabilities. no_new_privs and Landlock apply to every thread.
func restrict(o *opts, ns bool) error {
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_SECUREBITS, secureBits, 0, 0, 0)
	for c := 0; c <= 63; c++ {
		// EPERM without CAP_SETPCAP (an unprivileged user outside a
		// namespace, who has none to lose); EINVAL past the last one.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			break
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if _, _, e := psx.Syscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil || data[0].Effective|data[0].Permitted|data[1].Effective|data[1].Permitted != 0 {
		return errors.New("capabilities remain after dropping them")
	}
	write := o.write
	cfg := landlock.V11.BestEffort() // the newest rights, downgraded to what the kernel has
	if ns {
		write = append(append([]string{}, write...), "/tmp", "/dev/shm")
		if o.netns {
			cfg.HandledAccessNet = 0
		}
	}
	if o.network {
		cfg.HandledAccessNet = 0
	}
	err := cfg.Restrict(
		landlock.RODirs("/"),
		landlock.RWDirs(write...).WithResolveUnix().IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("apply Landlock: %w", err)
	}
	return nil
}

// limitProcs sets RLIMIT_NPROC (never above the hard limit, which only a
// privileged process can raise).
func limitProcs(n int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return err
	}
	v := min(uint64(n), lim.Max)
	return unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: v, Max: v})
}

// reaper runs the command under the snapshot mechanism: a child subreaper
// (orphans of the command, setsid or double-forked ones included, become
// its children), it starts the command through the restricting stage (so
// the command, confined by Landlock, can neither signal nor trace it), and
// when the command ends, or on SIGTERM, kills every process left and
// reaps it before it exits itself.
func reaper(o *opts) error {
	if err := joinCgroup(o.cgroup); err != nil {
		return err
	}
	if o.nproc > 0 && os.Getuid() != 0 {
		// Outside a user namespace the count is of all this user's tasks.
		if err := limitProcs(o.nproc + userTasks(os.Getuid())); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a subreaper: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	next := *o
	next.stage, next.cgroup, next.nproc = stageRestrict, "", 0
	var pid atomic.Int64
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for range sigs {
			if p := pid.Load(); p > 0 {
				syscall.Kill(int(p), syscall.SIGKILL)
			}
		}
	}()
	p, err := syscall.ForkExec(self, next.commandLine(self), &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return err
	}
	pid.Store(int64(p))
	code := waitFor(p)
	killChildren()
	exit(code)
	return nil
}

// killChildren kills this process's children until none is left: each
// round kills the children it finds, whose own children then become ours
// (a subreaper's), and reaps.
func killChildren() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for {
			wpid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return // none left (the common case: nothing was left running)
			}
			if wpid <= 0 {
				break
			}
		}
		for _, c := range children(os.Getpid()) {
			syscall.Kill(c, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// children lists the processes whose parent is pid: from the children
// files of its threads where the kernel has them, else from all of /proc.
func children(pid int) []int {
	var out []int
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err == nil {
		ok := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
			if err != nil {
				ok = false
				break
			}
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
		if ok {
			return out
		}
		out = nil
	}
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		n, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, n)
			}
		}
	}
	return out
}

// userTasks counts the threads of uid's processes (what RLIMIT_NPROC counts
// outside a user namespace).
func userTasks(uid int) int {
	n := 0
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "status"))
		if err != nil {
			continue
		}
		var owner, threads int = -1, 0
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					owner, _ = strconv.Atoi(f[0])
				}
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if owner == uid {
			n += threads
		}
	}
	return n
}

// spawn starts the command's stage (o.next) in new namespaces, or as the
// snapshot reaper, within a pids cgroup of its own where one can be made,
// and ends as it ends. Its death kills the stage (PR_SET_PDEATHSIG, tied to
// this locked thread); a signal to it is passed on.
func spawn(o *opts) error {
	runtime.LockOSThread()
	next := *o
	next.stage = o.next
	cg := cgroupsHere()
	dir, _ := cg.create(o.nproc)
	if dir != "" {
		next.cgroup = dir
		if os.Getuid() == 0 {
			next.nproc = 0
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	line := next.commandLine(self)
	cmd := exec.Command(self, line[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	stop := syscall.SIGTERM // the reaper kills what the command left, then exits
	if next.stage == stageNS {
		cmd.SysProcAttr = nsAttr(next.netns)
		cmd.SysProcAttr.Setsid = false
		stop = syscall.SIGKILL // the namespace ends with its init
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = stop
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		cg.remove(dir)
		return err
	}
	go func() {
		for range sigs {
			cmd.Process.Signal(stop)
		}
	}()
	err = cmd.Wait()
	cg.remove(dir)
	if cmd.ProcessState != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit(128 + int(ws.Signal()))
		}
		exit(cmd.ProcessState.ExitCode())
	}
	return err
}

// exit ends the helper at once with code. It skips os.Exit's hooks, which
// the helper has no use for and which, in a race-detector build (the
// tests'), sleep a second before exiting.
func exit(code int) {
	syscall.Exit(code)
}
