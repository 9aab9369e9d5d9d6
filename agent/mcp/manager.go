package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultStartTimeout = 30 * time.Second
	DefaultBackoff      = 250 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
	DefaultStopTimeout  = 2 * time.Second
)

// Options configure a Manager. The zero value works (with no environment at
// all for stdio servers).
type Options struct {
	// Env is the whole environment of a stdio server before its definition's
	// env is added: the clean command environment. Nothing else of this
	// process's environment reaches a server. PATH in it finds the command.
	Env []string
	// Dir is a stdio server's working directory when its definition has no
	// cwd, and the base of a relative cwd (the project's root).
	Dir string
	// CallTimeout bounds a call or a tool listing, the server's start
	// included (default DefaultCallTimeout). A shorter ctx deadline wins.
	CallTimeout time.Duration
	// StartTimeout bounds starting a server and the protocol's handshake
	// (default DefaultStartTimeout).
	StartTimeout time.Duration
	// Backoff is the delay before the first restart after a crash or a failed
	// start; it doubles with each further failure in a row, up to MaxBackoff
	// (defaults DefaultBackoff, DefaultMaxBackoff). A successful call or
	// listing resets it.
	Backoff, MaxBackoff time.Duration
	// StopTimeout is how long stopping a stdio server waits after closing its
	// standard input before SIGTERM, and again before SIGKILL (default
	// DefaultStopTimeout).
	StopTimeout time.Duration
	// Log receives a server's standard error line by line, and lines about
	// its lifecycle starting with "[mcp] ". It is called from several
	// goroutines, never with a lock of the Manager held. Nil discards.
	Log func(server, line string)
	// OnChange is called after a server's status or tool list changed (it
	// started, failed, stopped, or announced tools/list_changed), under the
	// same conditions as Log. Nil: nothing.
	OnChange func(server string)
	// HTTPClient is the base client of http servers (default a new
	// http.Client); a definition's headers are added by a wrapping transport.
	HTTPClient *http.Client
	// Prepare, when set, may change a stdio server's command before it
	// starts (to run it inside the sandbox); an error fails the start.
	Prepare func(def Definition, cmd *exec.Cmd) error
	// ClientName and ClientVersion identify the client to servers
	// (default "agent-lsp", "dev").
	ClientName, ClientVersion string
}

// State is a server's lifecycle state.
type State string

// The states.
const (
	// StateStopped: not started yet, or stopped.
	StateStopped State = "stopped"
	// StateStarting: the process or connection and the handshake are under way.
	StateStarting State = "starting"
	// StateRunning: connected.
	StateRunning State = "running"
	// StateFailed: the start failed or the server exited; Reason says why.
	// The next call restarts it once the backoff has passed.
	StateFailed State = "failed"
)

// Status is a snapshot of one server.
type Status struct {
	Name      string
	Source    Source
	Transport Transport
	State     State
	// Reason says why a failed server failed.
	Reason string
	// Tools is the number of tools in the last listing, -1 before one.
	Tools int
	// Starts counts the sessions started, restarts included.
	Starts int
	// RetryAt is when a failed server may start again.
	RetryAt time.Time
}

// Manager runs the servers of a set of definitions: each starts at its first
// Tools or Call, restarts after a crash with backoff, and stops at Close.
// It is safe for concurrent use.
//
// Goroutines: callers of Tools and Call wait for a server's session and use
// it (the SDK's session is safe for concurrent use); one goroutine per start
// attempt (server.start) connects and publishes the session or the failure;
// one goroutine per session (server.watch) waits for its end (the server
// exiting or being closed) and records it. The SDK runs its own goroutines
// per session, which call back for tools/list_changed (server.listChanged).
// Each server's state is guarded by its own mutex (server.mu); the
// Manager's mutex guards only closed. The lock order is server.mu, then
// Manager.mu; no lock is held while calling Log, OnChange or the SDK.
type Manager struct {
	opts    Options
	servers map[string]*server // set by NewManager, never changed: read without a lock
	base    context.Context    // parent of start attempts; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // start and watch goroutines, waited for by Close

	mu     sync.Mutex // guards closed
	closed bool
}

// NewManager returns a Manager of the given definitions (one per name; see
// Merge to combine sources). Nothing starts until a server is used.
func NewManager(defs []Definition, opts Options) (*Manager, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.ClientName == "" {
		opts.ClientName = "agent-lsp"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	m := &Manager{opts: opts, servers: map[string]*server{}}
	for _, d := range defs {
		if _, dup := m.servers[d.Name]; dup {
			return nil, fmt.Errorf("mcp: server %q is defined twice (merge the sources first)", d.Name)
		}
		if d.Transport != TransportStdio && d.Transport != TransportHTTP {
			return nil, fmt.Errorf("mcp: server %q: unknown transport %q", d.Name, d.Transport)
		}
		m.servers[d.Name] = &server{m: m, def: d, state: StateStopped}
	}
	m.base, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Servers returns the names of the servers, sorted.
func (m *Manager) Servers() []string {
	names := make([]string, 0, len(m.servers))
	for name := range m.servers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Definition returns the definition of the named server.
func (m *Manager) Definition(name string) (Definition, bool) {
	s, ok := m.servers[name]
	if !ok {
		return Definition{}, false
	}
	return s.def, true
}

func (m *Manager) server(name string) (*server, error) {
	s, ok := m.servers[name]
	if !ok {
		return nil, fmt.Errorf("mcp: no server named %q", name)
	}
	return s, nil
}

// request runs op on server name's session, starting the server if
// needed. op runs under the CallTimeout and ends with the session (the
// server's stop or exit); the error it reports is explained by callError,
// after the session is marked broken, with what op was doing.
func (m *Manager) request(ctx context.Context, name string, op func(ctx context.Context, s *server, sess *sdk.ClientSession, gen uint64) (what string, err error)) error {
	s, err := m.server(name)
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	sess, gen, calls, watched, err := s.session(ctx)
	if err != nil {
		return s.callError(parent, ctx, nil, "starting", err)
	}
	defer context.AfterFunc(calls, cancel)()
	if what, err := op(ctx, s, sess, gen); err != nil {
		s.broken(ctx, gen, sess, err)
		if s.def.Transport == TransportStdio && (errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed)) {
			// The session ended under the call (a server that exited): the
			// call returns once watch recorded it, so that the next one
			// starts the server again instead of meeting the closing session.
			awaitWatched(ctx, watched)
		}
		return s.callError(parent, ctx, calls, what, err)
	}
	return nil
}

// exitNoticed bounds how long a call whose session ended waits for the
// exit to be recorded.
const exitNoticed = 5 * time.Second

// awaitWatched waits until watched is closed, ctx ends or exitNoticed passed.
func awaitWatched(ctx context.Context, watched <-chan struct{}) {
	t := time.NewTimer(exitNoticed)
	defer t.Stop()
	select {
	case <-watched:
	case <-ctx.Done():
	case <-t.C:
	}
}

// Tools returns the server's tools, starting the server if needed. The list
// is fetched once per session and again after the server announced
// tools/list_changed. The tools are shared: do not modify them.
func (m *Manager) Tools(ctx context.Context, name string) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	err := m.request(ctx, name, func(ctx context.Context, s *server, sess *sdk.ClientSession, gen uint64) (string, error) {
		if cached, ok := s.cachedTools(gen); ok {
			tools = cached
			return "", nil
		}
		changes := s.changesSeen()
		var list []*sdk.Tool
		for t, err := range sess.Tools(ctx, nil) {
			if err != nil {
				return "listing tools", err
			}
			list = append(list, t)
		}
		s.storeTools(gen, changes, list)
		tools = append([]*sdk.Tool(nil), list...)
		return "", nil
	})
	return tools, err
}

// Call calls a tool of the server with its arguments (a JSON object; empty
// means none), starting the server if needed. The call ends at the
// CallTimeout or when ctx ends, whichever is first; the SDK then sends
// notifications/cancelled. A result the server flagged IsError is returned
// as a result, not an error; an error means no result: the server could not
// start, exited during the call, answered with a protocol error, or the call
// timed out or was cancelled. Stopping the server (Stop, Close, its exit)
// ends the calls on it.
func (m *Manager) Call(ctx context.Context, name, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	params := &sdk.CallToolParams{Name: tool}
	if len(args) > 0 && string(args) != "null" {
		if !json.Valid(args) {
			return nil, fmt.Errorf("mcp server %q: calling %q: the arguments are not valid JSON", name, tool)
		}
		params.Arguments = args
	}
	var res *sdk.CallToolResult
	err := m.request(ctx, name, func(ctx context.Context, s *server, sess *sdk.ClientSession, _ uint64) (string, error) {
		var err error
		if res, err = sess.CallTool(ctx, params); err != nil {
			return fmt.Sprintf("calling %q", tool), err
		}
		s.healthy()
		return "", nil
	})
	return res, err
}

// callError explains why an operation got no answer: the caller's
// cancellation, the call timeout, the server's stop or exit (calls, the
// session's context, ended), or the error itself.
func (s *server) callError(parent, ctx, calls context.Context, what string, err error) error {
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("mcp server %q: %s: cancelled: %w", s.def.Name, what, parent.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("mcp server %q: %s: no answer within %s, gave up: %w", s.def.Name, what, s.m.opts.CallTimeout, err)
	case errors.Is(err, sdk.ErrConnectionClosed) || calls != nil && calls.Err() != nil:
		return fmt.Errorf("mcp server %q: %s: the server stopped, exited or closed the connection: %w", s.def.Name, what, err)
	}
	return fmt.Errorf("mcp server %q: %s: %w", s.def.Name, what, err)
}

// Status returns a snapshot of every server, sorted by name.
func (m *Manager) Status() []Status {
	var out []Status
	for _, name := range m.Servers() {
		out = append(out, m.servers[name].status())
	}
	return out
}

// Stop stops the named server (for idleness, say); the next Tools or Call
// starts it again. Calls in flight end with an error. It waits for a
// running stdio server's process to exit; what goes wrong stopping it is
// logged. The error is for an unknown name.
func (m *Manager) Stop(name string) error {
	s, err := m.server(name)
	if err != nil {
		return err
	}
	s.stop(false)
	return nil
}

// Close stops every server, ends the calls in flight with an error, waits
// for the servers' processes to exit and makes further calls fail. What
// goes wrong stopping a server (an http server already gone) is logged, not
// returned: the error is always nil. It is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() { s.stop(true) })
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

// isClosed reports whether Close has begun.
func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// log sends a line to Options.Log.
func (m *Manager) log(server, line string) {
	if m.opts.Log != nil {
		m.opts.Log(server, line)
	}
}

// changed calls Options.OnChange.
func (m *Manager) changed(server string) {
	if m.opts.OnChange != nil {
		m.opts.OnChange(server)
	}
}

// ModelTools lists the tools of every server concurrently, starting them as
// needed, and returns the model's view of them all (see the function
// ModelTools), with the errors of the servers that could not list theirs,
// by name: their tools are left out.
func (m *Manager) ModelTools(ctx context.Context) ([]ModelTool, map[string]error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards byServer and errs
		byServer = map[string][]*sdk.Tool{}
		errs     map[string]error
	)
	for name := range m.servers {
		wg.Go(func() {
			tools, err := m.Tools(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if errs == nil {
					errs = map[string]error{}
				}
				errs[name] = err
				return
			}
			byServer[name] = tools
		})
	}
	wg.Wait()
	return ModelTools(byServer), errs
}
