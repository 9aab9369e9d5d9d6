package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// DefaultMaxBackground is how many background processes one session may
// have running at once by default.
const DefaultMaxBackground = 4

// stopWait bounds how long stopping a background process waits for every
// process of it to be gone (the sandbox kills them; this only catches a
// hang).
const stopWait = 30 * time.Second

// Background holds the background processes of one run, its subagents
// included: run_command {background: true} starts them, process_output,
// process_wait and process_stop reach them by ID, and Close stops every
// one when the run ends (ended or cancelled, or its window closed). A
// process's output goes to a bounded file (outFile) in Dir, never into the
// session. Safe for concurrent use; the zero value is not (NewBackground).
type Background struct {
	dir    func() string // the folder for output files ("": a temporary one)
	max    int           // running processes at most; 0: none may start
	outMax int64         // bytes of output kept per process

	mu      sync.Mutex          // guards the fields below
	procs   map[string]*process // by ID; ended ones stay until Close
	order   []string            // IDs in the order they started
	next    int                 // the next ID's number
	prefix  string              // random, names this run's files
	tempDir string              // a temporary folder made for the files, removed by Close
	closed  bool
}

// NewBackground returns the background processes of a run that may have
// max running at once, whose output files go to the folder dir returns
// (mode 0700, made when needed; "" for a temporary folder).
func NewBackground(max int, dir func() string) *Background {
	if dir == nil {
		dir = func() string { return "" }
	}
	return &Background{dir: dir, max: max, outMax: DefaultBackgroundOutput, procs: map[string]*process{}}
}

// process is one background process.
type process struct {
	id, command, project string
	started              time.Time
	out                  *outFile
	cancel               context.CancelFunc // ends every process of it
	done                 chan struct{}      // closed once it ended and was settled

	mu   sync.Mutex // guards the fields below
	read int64      // output shown to the model up to this offset
	end  processEnd // set before done is closed
}

// processEnd is how a background process ended.
type processEnd struct {
	code    int    // exit status; -1 when killed by a signal
	stopped bool   // process_stop, or the run's end, ended it
	note    string // what the sandbox says of it (protected paths restored...)
	at      time.Time
}

// startSpec is what run_command gives a background process.
type startSpec struct {
	project, root, line string
	env                 []string
	sb                  *sandbox.Sandbox // nil: unconfined
	policy              sandbox.Policy
	watch               func() (ended func()) // Env.WatchBackground
}

// errLimit: the run has as many background processes running as it may.
var errLimit = errors.New("background process limit reached")

// start starts a background process and returns it.
func (b *Background) start(s startSpec) (*process, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("the run is ending")
	}
	if running := b.runningLocked(); len(running) >= b.max {
		return nil, fmt.Errorf("%w: %d running (%s), at most %d: stop one (process_stop) first",
			errLimit, len(running), joinIDs(running), b.max)
	}
	dir, err := b.dirLocked()
	if err != nil {
		return nil, err
	}
	b.next++
	id := "p" + strconv.Itoa(b.next)
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{id: id, command: s.line, project: s.project, started: time.Now(), cancel: cancel, done: make(chan struct{}),
		out: newOutFile(filepath.Join(dir, "bg-"+b.prefix+"-"+id+".out"), b.outMax)}
	started := make(chan error, 1)
	go p.run(ctx, s, started)
	if err := <-started; err != nil {
		cancel()
		return nil, fmt.Errorf("could not start %q: %w", s.line, err)
	}
	b.procs[id] = p
	b.order = append(b.order, id)
	return p, nil
}

// run runs the process until it ends, on a thread locked for its life: its
// parent-death signal (dieWithServer) is tied to that thread.
func (p *process) run(ctx context.Context, s startSpec, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cmd *exec.Cmd
	var t *tree
	var run *sandbox.Run
	iso := sandbox.None
	if s.sb != nil {
		cmd, run = s.sb.Command(ctx, s.policy, []string{"sh", "-c", s.line})
		iso = run.Isolation()
		t = adoptTree(cmd)
	} else {
		cmd = exec.CommandContext(ctx, lookPath("sh", s.env), "-c", s.line)
		t = newTree(cmd)
		cmd.WaitDelay = time.Second
	}
	dieWithServer(cmd, iso)
	cmd.Dir, cmd.Env = s.root, s.env
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := t.start(); err != nil {
		if run != nil {
			run.Finish()
		}
		p.out.remove()
		started <- err
		return
	}
	var ended func()
	if s.watch != nil {
		ended = s.watch() // before start returns: the call knows it was handed on
	}
	started <- nil
	t.wait() // the exit status says how it ended; a stop, end.stopped
	t.kill() // what it left (unconfined: its process group)
	end := processEnd{code: -1, at: time.Now(), stopped: ctx.Err() != nil}
	if run != nil {
		end.note = outcomeNote(run.Finish())
	}
	if cmd.ProcessState != nil {
		end.code = cmd.ProcessState.ExitCode()
	}
	if ended != nil {
		ended() // (bounded by stop's wait for done, like the process)
	}
	p.mu.Lock()
	p.end = end
	p.mu.Unlock()
	close(p.done)
}

// stop ends every process of p and waits until they are gone (bounded).
func (p *process) stop() {
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(stopWait):
	}
}

// ended reports whether p has ended, and how.
func (p *process) ended() (processEnd, bool) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.end, true
	default:
		return processEnd{}, false
	}
}

// get returns the process with ID id.
func (b *Background) get(id string) (*process, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.procs[id]; ok {
		return p, nil
	}
	if b.closed {
		return nil, fmt.Errorf("no background process %q: the run that started it ended, and its background processes with it", id)
	}
	if len(b.order) == 0 {
		return nil, fmt.Errorf("no background process %q: this run started none (background processes end with the run that started them)", id)
	}
	return nil, fmt.Errorf("no background process %q (this run's: %s; background processes end with the run that started them)", id, joinIDs(b.order))
}

// runningLocked lists the IDs of the processes still running.
func (b *Background) runningLocked() []string {
	var out []string
	for _, id := range b.order {
		if p, ok := b.procs[id]; ok {
			if _, done := p.ended(); !done {
				out = append(out, id)
			}
		}
	}
	return out
}

// Running lists the processes running now, in the order they started.
func (b *Background) Running() []ProcessInfo {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []ProcessInfo
	for _, id := range b.runningLocked() {
		p := b.procs[id]
		out = append(out, ProcessInfo{ID: p.id, Command: p.command, Project: p.project, Started: p.started})
	}
	return out
}

// ProcessInfo describes a running background process.
type ProcessInfo struct {
	ID, Command, Project string
	Started              time.Time
}

// Stop stops the process with ID id (for the editor's Stop).
func (b *Background) Stop(id string) error {
	p, err := b.get(id)
	if err != nil {
		return err
	}
	p.stop()
	return nil
}

// dirLocked is the folder for output files, made when needed.
func (b *Background) dirLocked() (string, error) {
	if b.prefix == "" {
		var r [4]byte
		rand.Read(r[:])
		b.prefix = hex.EncodeToString(r[:])
	}
	if d := b.dir(); d != "" {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("make the folder of background output: %w", err)
		}
		return d, nil
	}
	if b.tempDir == "" {
		d, err := os.MkdirTemp("", "agent-lsp-bg-")
		if err != nil {
			return "", fmt.Errorf("make the folder of background output: %w", err)
		}
		b.tempDir = d
	}
	return b.tempDir, nil
}

// Close stops every background process of the run, waits until each is
// gone and deletes their output. No process starts after it. Safe to call
// on nil and more than once.
func (b *Background) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	procs := make([]*process, 0, len(b.order))
	for _, id := range b.order {
		if p, ok := b.procs[id]; ok {
			procs = append(procs, p)
		}
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	for _, p := range procs {
		p.out.remove()
	}
	b.mu.Lock()
	clear(b.procs)
	if b.tempDir != "" {
		os.RemoveAll(b.tempDir)
		b.tempDir = ""
	}
	b.mu.Unlock()
}

func joinIDs(ids []string) string { return strings.Join(ids, ", ") }
