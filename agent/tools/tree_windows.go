package tools

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tree is the process tree of a command: on Windows a Job Object that
// kills every process in it when it is closed or terminated.
type tree struct {
	cmd *exec.Cmd
	mu  sync.Mutex     // guards job: cmd.Cancel kills from exec's goroutine
	job windows.Handle // 0 until run made it, and once kill closed it
}

// newTree makes cmd start in a process group of its own, and cancelling it
// terminate its job (every process it started).
func newTree(cmd *exec.Cmd) *tree {
	t := &tree{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error { t.kill(); return nil }
	return t
}

// adoptTree is the tree of a command whose start and cancellation another
// set up: the job run puts it in.
func adoptTree(cmd *exec.Cmd) *tree { return &tree{cmd: cmd} }

// run starts the command, puts it in a new job (what it starts from then
// on is in the job too), and waits for it.
func (t *tree) run() error {
	if err := t.start(); err != nil {
		return err
	}
	return t.wait()
}

// wait waits for the command started by start.
func (t *tree) wait() error { return t.cmd.Wait() }

// start starts the command and puts it in a new job (what it starts from
// then on is in the job too).
func (t *tree) start() error {
	job, err := killOnCloseJob()
	if err != nil {
		return err
	}
	if err := t.cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return err
	}
	t.mu.Lock()
	if h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(t.cmd.Process.Pid)); err == nil {
		if windows.AssignProcessToJobObject(job, h) == nil {
			t.job = job
		}
		windows.CloseHandle(h)
	}
	if t.job == 0 {
		windows.CloseHandle(job)
	}
	t.mu.Unlock()
	return nil
}

// killOnCloseJob is a new Job Object whose processes die when it closes.
func killOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, errors.Join(errors.New("create a job object"), err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, errors.Join(errors.New("set up a job object"), err)
	}
	return job, nil
}

// kill kills every process of the job, or the command alone when it has
// none; the job is closed.
func (t *tree) kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		windows.TerminateJobObject(t.job, 1)
		windows.CloseHandle(t.job)
		t.job = 0
		return
	}
	if t.cmd.Process != nil {
		t.cmd.Process.Kill()
	}
}
