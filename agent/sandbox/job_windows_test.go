package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobRoleEnv makes the test binary play a command's program (see TestMain).
const jobRoleEnv = "AGENT_LSP_JOB_TEST_ROLE"

func TestMain(m *testing.M) {
	Main()
	switch os.Getenv(jobRoleEnv) {
	case "spawn": // start a child that lingers, write its pid, and exit at once
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), jobRoleEnv+"=linger")
		if err := child.Start(); err != nil {
			fmt.Println("spawn failed:", err)
			os.Exit(3)
		}
		os.WriteFile(os.Getenv("AGENT_LSP_JOB_TEST_PID"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		os.Exit(0)
	case "linger":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "args": // print the arguments as they arrived
		json.NewEncoder(os.Stdout).Encode(os.Args[1:])
		os.Exit(0)
	case "write": // write each file named, and say which were written
		for _, p := range filepath.SplitList(os.Getenv("AGENT_LSP_JOB_TEST_WRITE")) {
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				fmt.Println("denied", p)
			} else {
				fmt.Println("wrote", p)
			}
		}
		os.Exit(0)
	case "alloc": // commit 1 GiB
		b := make([]byte, 1<<30)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runRole runs the test binary as role, held by s under p (or directly when
// s is nil), and returns its output, exit code and the pid it wrote.
func runRole(t *testing.T, s *Sandbox, p Policy, role string) (string, int, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	argv := []string{os.Args[0]}
	var cmd *exec.Cmd
	var run *Run
	if s != nil {
		cmd, run = s.Command(context.Background(), p, argv)
	} else {
		cmd = exec.Command(argv[0])
	}
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), jobRoleEnv+"="+role, "AGENT_LSP_JOB_TEST_PID="+pidFile)
	out, err := cmd.CombinedOutput()
	if run != nil {
		run.Finish()
	}
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return string(out), code, pid
}

// alive reports whether pid still runs a second from now.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false // gone
	}
	defer windows.CloseHandle(h)
	ev, _ := windows.WaitForSingleObject(h, 1000)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

func kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// TestJobNoSurvivors: a process a command leaves behind ends with it in
// the Job Object; without the sandbox it lingers (the control).
func TestJobNoSurvivors(t *testing.T) {
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Root: t.TempDir(), Temp: t.TempDir()}
	if !s.Holds(p) || s.Confines(p) {
		t.Fatalf("holds %v confines %v: want a Job Object, no confinement", s.Holds(p), s.Confines(p))
	}
	// Said plainly: not sandboxed (clients show that), the job named; or,
	// where Windows enforces the restricted token, that it confines writes.
	r := s.Describe(p)
	switch {
	case s.token && (r.Isolation != RestrictedToken || len(r.Enforced) == 0 || s.Unconfined() != ""):
		t.Errorf("a restricted token, yet: unconfined %q, report %+v", s.Unconfined(), r)
	case !s.token && (len(r.Enforced) != 0 || !strings.Contains(s.Unconfined(), "Windows confines no writes")):
		t.Errorf("unconfined %q, report %+v", s.Unconfined(), r)
	}
	if !strings.Contains(r.Processes, "Job Object") || !r.Network {
		t.Errorf("report %+v", r)
	}
	out, code, pid := runRole(t, nil, p, "spawn")
	if code != 0 || pid == 0 {
		t.Fatalf("control: exit %d, pid %d: %s", code, pid, out)
	}
	if !alive(pid) {
		t.Fatal("control: the lingering child ended without a job: the test shows nothing")
	}
	kill(pid)
	out, code, pid = runRole(t, s, p, "spawn")
	if code != 0 || pid == 0 {
		t.Fatalf("in the job: exit %d, pid %d: %s", code, pid, out)
	}
	if alive(pid) {
		kill(pid)
		t.Fatal("the lingering child survived the command's Job Object")
	}
}

// underWine skips t under Wine, which neither enforces nor reports a Job
// Object's process and memory limits (Wine 8: kill-on-close alone works).
func underWine(t *testing.T) {
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		t.Skip("Wine neither enforces nor reports a Job Object's process and memory limits")
	}
}

// TestNewJobSetsLimits: the job carries the bounds it was made with, and
// kills its processes when its last handle closes.
func TestNewJobSetsLimits(t *testing.T) {
	underWine(t)
	job, err := newJob(jobLimit{ActiveProcesses: 7, JobMemory: 300 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(job)
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		t.Fatal(err)
	}
	want := uint32(windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS | windows.JOB_OBJECT_LIMIT_JOB_MEMORY)
	if info.BasicLimitInformation.LimitFlags&want != want || info.BasicLimitInformation.ActiveProcessLimit != 7 || info.JobMemoryLimit != 300<<20 {
		t.Errorf("the job's limits: flags %#x, processes %d, memory %d", info.BasicLimitInformation.LimitFlags,
			info.BasicLimitInformation.ActiveProcessLimit, info.JobMemoryLimit)
	}
}

// TestJobProcessLimit: a command may start no more processes than the
// policy allows.
func TestJobProcessLimit(t *testing.T) {
	underWine(t)
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Root: t.TempDir(), Temp: t.TempDir(), MaxProcs: 1}
	out, code, pid := runRole(t, s, p, "spawn")
	if pid != 0 {
		kill(pid)
	}
	if code != 3 || !strings.Contains(out, "spawn failed") {
		t.Fatalf("a second process started under MaxProcs 1: exit %d: %s", code, out)
	}
}

// TestJobMemoryLimit: a command may not commit more memory than the
// policy allows.
func TestJobMemoryLimit(t *testing.T) {
	underWine(t)
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Mode: WorkspaceWrite, Root: t.TempDir(), Temp: t.TempDir(), MaxMemory: 256 << 20}
	out, code, _ := runRole(t, s, p, "alloc")
	if code == 0 || strings.Contains(out, "allocated") {
		t.Fatalf("1 GiB committed under MaxMemory 256 MiB: exit %d: %s", code, out)
	}
}
