package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/acp"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
)

// DefaultIdle is how long a daemon waits after its last connection closed
// before it exits (AGENT_LSP_DAEMON_IDLE).
const DefaultIdle = 60 * time.Second

// SessionsFunc runs `agent-lsp sessions ARGS` against st; running says
// whether a session runs now. It returns the exit code.
type SessionsFunc func(ctx context.Context, st *store.Bolt, running func(string) bool, args []string, stdout, stderr io.Writer) int

// Config configures a daemon.
type Config struct {
	Store string        // the store file, an absolute path
	Idle  time.Duration // exit this long after the last connection; <0: never; 0: DefaultIdle
	// Durability is the store's default durability; a connection's settings
	// override it per run.
	Durability store.Durability
	Logf       func(format string, args ...any) // the daemon's log; never given secrets
	Warn       func(msg string)                 // the store's warnings (damaged records); nil: to Logf
	Sessions   SessionsFunc
}

// Daemon owns a store and serves every connection over it: one server per
// connection, one Hub (store, running sessions, event sequences) for all.
type Daemon struct {
	cfg    Config
	db     *store.Bolt
	hub    *server.Hub
	l      net.Listener
	socket string
	nconns atomic.Int64 // connections being served, for status

	mu       sync.Mutex          // guards the fields below
	sidecar  sidecar             // what Listen recorded; rewritten while the daemon serves, if removed
	unlisted bool                // Close removed the sidecar: it is never written again
	conns    map[net.Conn]func() // open connections -> cancels their server
	retire   bool                // a newer binary connected: exit once idle, at once
	stopping bool                // stop was asked: exit once no session runs
	closed   bool                // Close has begun: connections accepted now are not served
	idle     *time.Timer         // runs out idle; nil while connections are open
	quit     chan struct{}       // closed to end Serve
	quitOnce sync.Once
	serving  sync.WaitGroup // connection handlers

	closeOnce sync.Once
	closeErr  error
}

// Open opens the daemon's store, importing the sibling files earlier
// versions wrote when the store was locked; it does not listen yet.
func Open(ctx context.Context, cfg Config) (*Daemon, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Idle == 0 {
		cfg.Idle = DefaultIdle
	}
	if err := storeDir(cfg.Store); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	if cfg.Warn == nil {
		cfg.Warn = func(m string) { cfg.Logf("store: %s", m) }
	}
	db, err := store.Open(cfg.Store, store.WithDefaultDurability(cfg.Durability), store.WithWarn(cfg.Warn))
	if err != nil {
		return nil, err
	}
	if r := db.Recovered(); r != "" {
		cfg.Logf("store: %s", r)
	}
	if n, notes := store.ImportSiblings(ctx, db); n > 0 || len(notes) > 0 {
		cfg.Logf("imported %d session(s) from the store files of earlier versions", n)
		for _, note := range notes {
			cfg.Logf("%s", note)
		}
	}
	return &Daemon{cfg: cfg, db: db, hub: server.NewHub(db, cfg.Store), conns: map[net.Conn]func(){}, quit: make(chan struct{})}, nil
}

// Recovered says what opening the store did with a damaged file ("" when
// nothing): store.Bolt.Recovered.
func (d *Daemon) Recovered() string { return d.db.Recovered() }

// Hub is what the daemon's connections share; an in-process server (a
// headless run serving the daemon's address) uses it too.
func (d *Daemon) Hub() *server.Hub { return d.hub }

// Listen listens on a new socket and records it in the store's sidecar, so
// that forwarders find the daemon.
func (d *Daemon) Listen() error {
	l, name, err := listen()
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	d.l, d.socket = l, name
	d.sidecar = sidecar{Socket: name, Pid: os.Getpid(), Version: Version(), Handshake: handshakeVersion()}
	if err := writeSidecar(d.cfg.Store, d.sidecar); err != nil {
		l.Close()
		return fmt.Errorf("record the daemon's address: %w", err)
	}
	if err := writeRecord(d.cfg.Store, d.sidecar); err != nil {
		d.cfg.Logf("record the daemon's address in %s: %v", lockPath(d.cfg.Store), err)
	}
	d.cfg.Logf("agent-lsp %s daemon (pid %d) serves %s on %s", Version(), os.Getpid(), d.cfg.Store, name)
	return nil
}

// Serve accepts connections until ctx ends, the daemon is stopped or it has
// been idle for Config.Idle; then it cancels the connections' runs (each
// leaves a resumable checkpoint), waits for their servers and closes the
// store. A panic in one connection never ends the daemon.
func (d *Daemon) Serve(ctx context.Context) error {
	go d.keepListed()
	go func() {
		for {
			c, err := d.l.Accept()
			if err != nil {
				d.end()
				return
			}
			d.relist()
			d.mu.Lock()
			if d.closed { // accepted as Close shut the listener: it is not served
				d.mu.Unlock()
				c.Close()
				continue
			}
			d.serving.Add(1) // under d.mu, so that Close's Wait sees it
			d.mu.Unlock()
			go func() {
				defer d.serving.Done()
				d.handle(ctx, c)
			}()
		}
	}()
	d.mu.Lock()
	d.armIdleLocked()
	d.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-d.quit:
	}
	return d.Close()
}

// Close stops listening, removes the sidecar, cancels every connection's
// server, waits for them and closes the store.
// Close may be called more than once.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		d.end()
		if d.l != nil {
			d.l.Close()
			d.mu.Lock()
			d.unlisted = true
			removeSidecar(d.cfg.Store, d.socket)
			d.mu.Unlock()
		}
		d.mu.Lock()
		d.closed = true
		for _, cancel := range d.conns {
			cancel() // the server ends its runs (they checkpoint) and closes the connection
		}
		d.mu.Unlock()
		d.serving.Wait()
		d.closeErr = d.db.Close()
	})
	return d.closeErr
}

func (d *Daemon) end() { d.quitOnce.Do(func() { close(d.quit) }) }

// relistEvery is how often a daemon checks that its sidecar is still there.
const relistEvery = 3 * time.Second

// keepListed writes the sidecar again, every relistEvery, when it is gone
// (a user or a cleaner removed it), until the daemon ends: windows find
// the daemon by it.
func (d *Daemon) keepListed() {
	t := time.NewTicker(relistEvery)
	defer t.Stop()
	for {
		select {
		case <-d.quit:
			return
		case <-t.C:
			d.relist()
		}
	}
}

// relist writes the sidecar (and the lock file's record) again when the
// sidecar is missing; a sidecar of another daemon is left alone.
func (d *Daemon) relist() {
	if _, err := os.Stat(sidecarPath(d.cfg.Store)); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unlisted || d.sidecar.Socket == "" {
		return
	}
	if err := writeSidecar(d.cfg.Store, d.sidecar); err != nil {
		d.cfg.Logf("write the sidecar again: %v", err)
		return
	}
	writeRecord(d.cfg.Store, d.sidecar)
	d.cfg.Logf("the sidecar %s was missing: written again", sidecarPath(d.cfg.Store))
}

// armIdleLocked starts the idle countdown when no connection is open. d.mu is held.
func (d *Daemon) armIdleLocked() {
	if len(d.conns) > 0 || d.cfg.Idle < 0 {
		return
	}
	if d.retire {
		d.cfg.Logf("a newer agent-lsp connected earlier: exiting now that no window uses this daemon")
		d.end()
		return
	}
	if d.idle == nil {
		idle := d.cfg.Idle
		d.idle = time.AfterFunc(idle, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.conns) == 0 {
				d.cfg.Logf("idle for %s: exiting", idle)
				d.end()
			}
		})
	}
}

// track records an open connection whose server cancel stops. Once Close
// has begun it cancels it at once: Close cancelled those it found, and
// waits for this one too.
func (d *Daemon) track(c net.Conn, cancel func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		cancel()
	}
	d.conns[c] = cancel
	if d.idle != nil {
		d.idle.Stop()
		d.idle = nil
	}
	d.nconns.Add(1)
}

func (d *Daemon) untrack(c net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.conns, c)
	d.nconns.Add(-1)
	d.armIdleLocked()
}

// handshakeTimeout bounds what a connection sends before it is served: its
// Hello, and the editor's streams a forwarder passes.
const handshakeTimeout = 10 * time.Second

// handle serves one connection: it checks the peer, reads its Hello and
// does what it asks.
func (d *Daemon) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	defer func() {
		if v := recover(); v != nil {
			d.cfg.Logf("panic in a connection: %v\n%s", v, debug.Stack())
		}
	}()
	welcome := Welcome{Handshake: handshakeVersion(), Version: Version()}
	if user, _, err := peerUser(c); err != nil || user != thisUser() {
		d.cfg.Logf("refused a connection from %s %s (%v): the daemon serves %s %s only", userKind, user, err, userKind, thisUser())
		welcome.Error = fmt.Sprintf("refused: this agent-lsp daemon serves only %s %s", userKind, thisUser())
		writeLine(c, welcome)
		return
	}
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(c)
	var hello Hello
	if err := readLine(br, &hello); err != nil {
		if !errors.Is(err, io.EOF) { // EOF: a forwarder checking that the daemon is up
			d.cfg.Logf("a connection sent no handshake: %v", err)
		}
		return
	}
	c.SetReadDeadline(time.Time{})
	if hello.Handshake != handshakeVersion() {
		if hello.Op == opStop { // any binary of this user may stop it: what IncompatibleError advises
			writeLine(c, welcome)
			d.stop(hello.Now)
			return
		}
		welcome.Error = fmt.Sprintf("incompatible: this daemon is agent-lsp %s (handshake %d), the client agent-lsp %s (handshake %d)",
			Version(), handshakeVersion(), hello.Version, hello.Handshake)
		d.cfg.Logf("%s", welcome.Error)
		writeLine(c, welcome)
		if newer(hello.Version, Version()) {
			d.retireWhenIdle(hello.Version)
			d.mu.Lock()
			d.armIdleLocked() // no window uses it: exit now, so that the newer binary starts its daemon
			d.mu.Unlock()
		}
		return
	}
	if newer(hello.Version, Version()) {
		d.retireWhenIdle(hello.Version)
	}
	switch hello.Op {
	case opServe:
		d.serve(ctx, c, br, hello, welcome)
	case opACP:
		d.serveACP(ctx, c, br, hello, welcome)
	case opStatus:
		welcome.Status = &Status{Pid: os.Getpid(), Socket: d.socket, Store: d.cfg.Store, Version: Version(),
			Connections: int(d.nconns.Load()), Running: d.hub.Running()}
		writeLine(c, welcome)
	case opStop:
		writeLine(c, welcome)
		d.stop(hello.Now)
	case opSessions:
		d.sessions(ctx, c, hello, welcome)
	default:
		welcome.Error = fmt.Sprintf("unknown operation %q", hello.Op)
		writeLine(c, welcome)
	}
}

// retireWhenIdle makes the daemon exit as soon as no connection is open: a
// newer binary's daemon then takes over. An older binary never retires a
// newer daemon.
func (d *Daemon) retireWhenIdle(version string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.retire {
		d.cfg.Logf("agent-lsp %s connected: this daemon (%s) exits once no window uses it", version, Version())
	}
	d.retire = true
}

// stop ends the daemon: at once (cancelling the runs, which checkpoint), or
// once no session runs.
func (d *Daemon) stop(now bool) {
	d.mu.Lock()
	already := d.stopping
	d.stopping = true
	d.mu.Unlock()
	if already {
		return
	}
	if now {
		d.cfg.Logf("stopping now: cancelling the runs")
		d.end()
		return
	}
	d.cfg.Logf("stopping once the runs in progress end")
	go func() {
		for d.hub.Running() > 0 {
			select {
			case <-d.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		d.end()
	}()
}

// serve runs a server on the connection with the client's environment and
// flags, over the daemon's hub.
func (d *Daemon) serve(ctx context.Context, c net.Conn, br *bufio.Reader, hello Hello, welcome Welcome) {
	fs := flag.NewFlagSet("agent-lsp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := config.Register(fs)
	fs.Bool("stdio", true, "")
	welcome.Fds = takesStreams(c, hello)
	if !accept(c, fs, hello, welcome) {
		return
	}
	env := append([]string(nil), hello.Env...)
	k, ok := d.open(ctx, c, br, "connection", hello.Dir, welcome.Fds)
	if !ok {
		return
	}
	err := server.Serve(k.ctx, k.in, k.out, server.Options{
		Flags:   flags,
		Getenv:  lookup(env),
		Environ: func() []string { return env },
		Logf:    k.logf,
		Exit:    func(int) { k.cancel() }, // the editor died: end this connection, never the daemon
		Hub:     d.hub,
	})
	// The forwarder exits with the server's code, not as if the daemon died.
	d.finish(c, k, err, func(code int) { c.Write(endFrame(code)) })
}

// connection is a connection being served: its context, which ends when
// the daemon or the client ends it, its streams (the client's, handed over,
// or the connection itself), and its name in the log.
type connection struct {
	ctx    context.Context
	cancel context.CancelFunc
	in     io.ReadCloser
	out    io.WriteCloser
	kind   string // "connection", "ACP connection"
	id     string
	logf   func(format string, args ...any) // the daemon's log, in its name
}

// open starts serving c, a connection of kind from dir: tracked (the
// daemon's closing cancels it), its streams taken. finish ends it.
func (d *Daemon) open(ctx context.Context, c net.Conn, br *bufio.Reader, kind, dir string, handed bool) (*connection, bool) {
	cctx, cancel := context.WithCancel(ctx)
	d.track(c, cancel)
	in, out, err := streams(cctx, cancel, c, br, handed)
	if err != nil {
		cancel()
		d.untrack(c)
		d.cfg.Logf("%v", err)
		return nil, false
	}
	k := &connection{ctx: cctx, cancel: cancel, in: in, out: out, kind: kind, id: randomHex(3)}
	k.logf = func(format string, args ...any) { d.cfg.Logf("["+k.id+"] "+format, args...) }
	d.cfg.Logf("%s %s opened (%s; %s)", kind, k.id, dir, how(handed))
	return k, true
}

// finish ends k, whose server returned err. Its streams are closed first:
// once the forwarder reads the end (writeEnd, with the server's exit code),
// the client's streams are its own again. When the daemon or the client
// ended the connection, no end is written: the forwarder says so.
func (d *Daemon) finish(c net.Conn, k *connection, err error, writeEnd func(code int)) {
	defer d.cfg.Logf("%s %s closed", k.kind, k.id)
	defer d.untrack(c)
	defer k.cancel()
	k.in.Close()
	k.out.Close()
	if k.ctx.Err() != nil {
		return
	}
	code := 0
	if err != nil {
		code = 1
		d.cfg.Logf("%s %s: %v", k.kind, k.id, err)
	}
	writeEnd(code)
}

// streams returns what a connection's server reads and writes: the editor's
// stdin and stdout when the forwarder passes them (handed), else the
// connection itself. Handed streams are taken before ctx ends (the daemon
// closing) and within handshakeTimeout; the connection then carries only
// the end, and its own end (the forwarder gone: killed, or stopped by the
// editor) cancels ctx. Closing out leaves the connection open for the end.
func streams(ctx context.Context, cancel func(), c net.Conn, br *bufio.Reader, handed bool) (io.ReadCloser, io.WriteCloser, error) {
	if !handed {
		return readCloser{br, c}, nopWriteCloser{c}, nil
	}
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	in, out, err := receiveStdio(c, br)
	stop()
	c.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, nil, err
	}
	go func() {
		io.Copy(io.Discard, c) // ends when the handler closes c, too
		cancel()
	}()
	return in, out, nil
}

// takesStreams reports whether the daemon takes the streams the client of
// c offers to pass (Hello.Fds): it can, over a Unix socket.
func takesStreams(c net.Conn, hello Hello) bool {
	_, unixConn := c.(*net.UnixConn)
	return hello.Fds && handoffs && unixConn
}

// how says how a connection's streams reach the daemon, for its log.
func how(handed bool) string {
	if handed {
		return "the editor's streams handed over"
	}
	return "forwarded"
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveACP serves the Agent Client Protocol on the connection with the
// client's environment, flags and workspace folders, over the daemon's hub.
// Its last line is the end line with the exit code.
func (d *Daemon) serveACP(ctx context.Context, c net.Conn, br *bufio.Reader, hello Hello, welcome Welcome) {
	fs := flag.NewFlagSet("agent-lsp acp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := config.Register(fs)
	var folders folderFlags
	fs.Var(&folders, "workspace", "")
	welcome.Fds = takesStreams(c, hello)
	if !accept(c, fs, hello, welcome) {
		return
	}
	env := append([]string(nil), hello.Env...)
	k, ok := d.open(ctx, c, br, "ACP connection", hello.Dir, welcome.Fds)
	if !ok {
		return
	}
	err := acp.Serve(k.ctx, k.in, k.out, server.Options{
		Flags:   flags,
		Getenv:  lookup(env),
		Environ: func() []string { return env },
		Logf:    k.logf,
		Hub:     d.hub,
		Version: server.Version,
	}, folders)
	d.finish(c, k, err, func(code int) { fmt.Fprintf(c, "%s: %d\n", endHeader, code) })
}

// accept parses a connection's flags into fs and answers its hello; false
// when the flags are bad (the client is told why) or the client is gone.
func accept(c net.Conn, fs *flag.FlagSet, hello Hello, welcome Welcome) bool {
	if err := fs.Parse(hello.Args); err != nil {
		welcome.Error = fmt.Sprintf("bad flags: %v", err)
		writeLine(c, welcome)
		return false
	}
	return writeLine(c, welcome) == nil
}

// folderFlags collects repeated --workspace flags.
type folderFlags []string

func (f *folderFlags) String() string     { return strings.Join(*f, ",") }
func (f *folderFlags) Set(v string) error { *f = append(*f, v); return nil }

// sessions runs the sessions subcommand on the daemon's store.
func (d *Daemon) sessions(ctx context.Context, c net.Conn, hello Hello, welcome Welcome) {
	if d.cfg.Sessions == nil {
		welcome.Error = "this daemon cannot list sessions"
		writeLine(c, welcome)
		return
	}
	writeLine(c, welcome)
	var out, errb bytes.Buffer
	code := d.cfg.Sessions(ctx, d.db, d.hub.Live().Running, hello.Args, &out, &errb)
	writeLine(c, SessionsResult{Stdout: out.String(), Stderr: errb.String(), Code: code})
}

// lookup is Getenv over an environment list.
func lookup(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// readCloser reads from the handshake's buffered reader; closing it closes
// the connection's reading side only, so that the end frame can still be
// written after the server closed its stream.
type readCloser struct {
	*bufio.Reader
	c net.Conn
}

func (r readCloser) Close() error {
	if uc, ok := r.c.(*net.UnixConn); ok {
		return uc.CloseRead()
	}
	return nil
}
