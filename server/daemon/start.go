package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// startTimeout bounds starting a daemon and waiting for it to answer.
const startTimeout = 20 * time.Second

// maxLog is the size past which a daemon's log is moved aside when the next
// daemon starts.
const maxLog = 8 << 20

// Starter starts a daemon for a store when none runs.
type Starter struct {
	Exe  string        // the agent-lsp binary; "" means this one
	Idle time.Duration // the daemon's idle time; 0: its default
	// Logf tells the user what Connect decided on their behalf (a socket
	// of another user ignored); nil: nothing is told.
	Logf func(format string, args ...any)
}

// Session is an open connection to a daemon after the handshake.
type Session struct {
	Conn    net.Conn
	Reader  *bufio.Reader // reads Conn, holding what followed the Welcome
	Welcome Welcome
}

// Dial connects to the daemon of store and says hello; errNoDaemon when
// none runs. A daemon that refuses (another handshake, another user) is an
// *IncompatibleError or an error naming why.
func Dial(store string, hello Hello) (*Session, error) {
	c, _, err := dial(store)
	if err != nil {
		return nil, err
	}
	s, err := greet(c, hello)
	return withStore(s, err, store)
}

// IsNoDaemon reports whether err says that no daemon runs for the store.
func IsNoDaemon(err error) bool { return errors.Is(err, errNoDaemon) }

// IncompatibleError is a daemon that speaks another handshake.
type IncompatibleError struct {
	Store                  string
	Daemon, Client         string // versions
	DaemonHello, ClientHel int    // handshakes
}

func (e *IncompatibleError) Error() string {
	exe, _ := os.Executable()
	if newer(e.Daemon, e.Client) {
		return fmt.Sprintf("the agent-lsp daemon serving %s is agent-lsp %s, which this binary (%s, agent-lsp %s) cannot talk to: update %s to agent-lsp %s or later",
			e.Store, e.Daemon, exe, e.Client, exe, e.Daemon)
	}
	return fmt.Sprintf("an older agent-lsp daemon (%s, incompatible with this agent-lsp %s) serves %s for other windows: it exits once they close (or run `agent-lsp daemon stop`); then start this server again",
		e.Daemon, e.Client, e.Store)
}

func greet(c net.Conn, hello Hello) (*Session, error) {
	hello.Handshake, hello.Version = handshakeVersion(), Version()
	// A daemon that refuses the peer answers without reading the Hello and
	// closes: the write may then fail (EPIPE) with the answer already here.
	werr := writeLine(c, hello)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var w Welcome
	if err := readLine(br, &w); err != nil {
		c.Close()
		if werr != nil {
			err = werr
		}
		return nil, &unansweredError{err}
	}
	c.SetReadDeadline(time.Time{})
	if w.Handshake != hello.Handshake && (hello.Op != opStop || w.Error != "") { // a daemon of any handshake takes a stop
		c.Close()
		return nil, &IncompatibleError{Daemon: w.Version, Client: hello.Version, DaemonHello: w.Handshake, ClientHel: hello.Handshake}
	}
	if w.Error != "" {
		c.Close()
		return nil, fmt.Errorf("the agent-lsp daemon refused the connection: %s", w.Error)
	}
	return &Session{Conn: c, Reader: br, Welcome: w}, nil
}

// Connect connects to the daemon of store, starting one when none runs.
// Starting is serialized by a lock file, so that forwarders starting at
// once end up with one daemon. A socket held by another user
// (*ForeignPeerError) counts as none: it is logged, sent nothing, and a new
// daemon starts under a fresh random name, which replaces the sidecar.
//
// When no daemon can be started or reached (the store's directory cannot be
// written, or is unsafe; the daemon fails to start), the error is a
// *StartError: the caller can serve without one. A daemon that lives
// without its sidecar (someone removed it) is found by the lock file's
// record of it, or by its sidecar once it writes it again.
func (st Starter) Connect(ctx context.Context, store string, hello Hello) (*Session, error) {
	s, err := Dial(store, hello)
	var unsafe *UnsafeDirError
	var unanswered *unansweredError
	switch {
	case errors.As(err, &unsafe), errors.As(err, &unanswered):
		return nil, &StartError{Store: store, Err: err}
	case !IsNoDaemon(err):
		return withStore(s, err, store)
	}
	st.foreign(err)
	if err := storeDir(store); err != nil {
		return nil, &StartError{Store: store, Err: err}
	}
	unlock, err := lockFile(ctx, lockPath(store))
	if err != nil {
		return nil, &StartError{Store: store, Err: err}
	}
	defer unlock()
	if s, err := Dial(store, hello); !IsNoDaemon(err) { // another one started it meanwhile
		return withStore(s, err, store)
	}
	if serr := st.start(ctx, store); serr != nil {
		// One may live without its sidecar, holding the store the new one
		// could not open: it writes its sidecar again within relistEvery.
		if s, err := redial(ctx, store, hello, 2*relistEvery); !IsNoDaemon(err) {
			return withStore(s, err, store)
		}
		return nil, &StartError{Store: store, Err: serr}
	}
	s, err = Dial(store, hello)
	return withStore(s, err, store)
}

// redial dials the daemon of store until one answers or wait passes.
func redial(ctx context.Context, store string, hello Hello, wait time.Duration) (*Session, error) {
	deadline := time.Now().Add(wait)
	for {
		s, err := Dial(store, hello)
		if !IsNoDaemon(err) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, errNoDaemon
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unansweredError is a daemon that accepted a connection and did not
// answer its hello (it hangs, or died meanwhile).
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return "daemon handshake: " + e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

// StartError is a daemon that could not be started or reached for a
// store: a server can still serve without one.
type StartError struct {
	Store string
	Err   error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("no agent-lsp daemon could be started for %s: %v", e.Store, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// foreign logs err when it is a socket of another user's.
func (st Starter) foreign(err error) {
	var fp *ForeignPeerError
	if errors.As(err, &fp) && st.Logf != nil {
		st.Logf("%v; starting a new daemon", fp)
	}
}

// withStore names the store in an *IncompatibleError.
func withStore(s *Session, err error, store string) (*Session, error) {
	var inc *IncompatibleError
	if errors.As(err, &inc) {
		inc.Store = store
	}
	return s, err
}

// start starts a detached daemon for store and waits until it answers. It
// gets no environment: each connection brings its own.
func (st Starter) start(ctx context.Context, store string) error {
	exe := st.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("start the daemon: %w", err)
		}
	}
	args := []string{"daemon", "--store", store}
	if st.Idle != 0 {
		args = append(args, "--idle", st.Idle.String())
	}
	if fi, err := os.Stat(LogPath(store)); err == nil && fi.Size() > maxLog {
		os.Rename(LogPath(store), LogPath(store)+".1") // one old log is kept
	}
	logf, err := os.OpenFile(LogPath(store), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start the daemon: log file: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it if it fails; a detached daemon outlives us
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	for {
		if c, _, err := dial(store); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the agent-lsp daemon did not start (%v): %s", err, lastLine(LogPath(store)))
		case <-deadline.C:
			return fmt.Errorf("the agent-lsp daemon did not answer within %s (its log: %s)", startTimeout, LogPath(store))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// lastLine is the last line of a log file, for an error message.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon lock: %w", err)
	}
	deadline := time.Now().Add(startTimeout + 5*time.Second)
	for {
		busy, err := tryLock(f)
		if err == nil {
			return func() { unlockFile(f); f.Close() }, nil
		}
		if !busy || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("daemon lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// RunSessions runs `agent-lsp sessions ARGS` in the daemon of store;
// IsNoDaemon(err) when none runs.
func RunSessions(store string, args []string) (SessionsResult, error) {
	s, err := Dial(store, Hello{Op: opSessions, Args: args})
	if err != nil {
		return SessionsResult{}, err
	}
	defer s.Conn.Close()
	var res SessionsResult
	if err := readLine(s.Reader, &res); err != nil {
		return res, fmt.Errorf("the daemon did not finish the command: %w", err)
	}
	return res, nil
}

// StatusOf asks the daemon of store how it is; IsNoDaemon(err) when none runs.
func StatusOf(store string) (Status, error) {
	s, err := Dial(store, Hello{Op: opStatus})
	if err != nil {
		return Status{}, err
	}
	s.Conn.Close()
	if s.Welcome.Status == nil {
		return Status{}, fmt.Errorf("the daemon sent no status")
	}
	return *s.Welcome.Status, nil
}

// Stop asks the daemon of store to stop (now: at once, cancelling its runs,
// which checkpoint) and waits until it is gone or ctx ends.
func Stop(ctx context.Context, store string, now bool) error {
	s, err := Dial(store, Hello{Op: opStop, Now: now})
	if err != nil {
		return err
	}
	s.Conn.Close()
	for {
		c, _, err := dial(store)
		if err != nil {
			return nil
		}
		c.Close()
		select {
		case <-ctx.Done():
			return fmt.Errorf("the daemon is still running (%w); it stops once its runs end", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
