package mcp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLogLine caps one line of a server's standard error passed to Log.
const maxLogLine = 4096

// connect starts the server for attempt gen and does the protocol's
// handshake. The session's tools/list_changed marks gen's listing stale.
func (s *server) connect(ctx context.Context, gen uint64) (*sdk.ClientSession, error) {
	var transport sdk.Transport
	switch s.def.Transport {
	case TransportStdio:
		cmd, err := s.command()
		if err != nil {
			return nil, err
		}
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.opts.StopTimeout}
	case TransportHTTP:
		transport = &sdk.StreamableClientTransport{Endpoint: s.def.URL, HTTPClient: s.httpClient()}
	default:
		return nil, fmt.Errorf("unknown transport %q", s.def.Transport)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: s.m.opts.ClientName, Version: s.m.opts.ClientVersion}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.listChanged(gen) },
	})
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	return sess, nil
}

// command builds a stdio server's process: the command found in the PATH of
// its environment, which is Options.Env plus the definition's env and
// nothing else, its working directory, and its standard error to Log.
func (s *server) command() (*exec.Cmd, error) {
	env := commandEnv(s.m.opts.Env, s.def.Env)
	dir := s.def.Cwd
	if dir == "" {
		dir = s.m.opts.Dir
	} else if !filepath.IsAbs(dir) && s.m.opts.Dir != "" {
		dir = filepath.Join(s.m.opts.Dir, dir)
	}
	path, err := lookPath(s.def.Command, env, dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, s.def.Args...)
	cmd.Args[0] = s.def.Command
	cmd.Env = env // never nil: a nil Env would inherit this process's environment
	cmd.Dir = dir
	name := s.def.Name
	cmd.Stderr = &lineWriter{log: func(line string) { s.m.log(name, line) }}
	// The copy of standard error may outlive the process when a child keeps it open.
	cmd.WaitDelay = s.m.opts.StopTimeout
	if s.m.opts.Prepare != nil {
		if err := s.m.opts.Prepare(s.def, cmd); err != nil {
			return nil, fmt.Errorf("preparing the command: %w", err)
		}
	}
	return cmd, nil
}

// commandEnv is base with extra's variables set (replacing base's values),
// never nil.
func commandEnv(base []string, extra map[string]string) []string {
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := extra[k]; !replaced {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// lookPath finds command as the server's environment would: a name with a
// slash is a path (relative to dir); a bare name is searched in env's PATH.
func lookPath(command string, env []string, dir string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) && dir != "" {
			command = filepath.Join(dir, command)
		}
		if err := executable(command); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) && dir != "" {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, command)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the PATH of the server's environment (%q)", command, path)
}

// executable reports why path is not an executable file, or nil.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not an executable file")
	}
	return nil
}

// httpClient is Options.HTTPClient (or a new client) adding the definition's
// headers to every request.
func (s *server) httpClient() *http.Client {
	var c http.Client
	if s.m.opts.HTTPClient != nil {
		c = *s.m.opts.HTTPClient
	}
	if len(s.def.Headers) > 0 {
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = &headerTransport{base: base, headers: s.def.Headers}
	}
	return &c
}

// headerTransport sets fixed headers on each request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string // read only
}

// RoundTrip sets the headers on a copy of req and sends it.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// lineWriter passes what a server writes on its standard error to log, line
// by line; a line longer than maxLogLine goes out in pieces ending with "…".
// A last line without a newline is not passed.
type lineWriter struct {
	log func(line string)

	mu  sync.Mutex // guards buf: written by exec's copying goroutine
	buf []byte
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	var lines []string
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) <= maxLogLine {
			break
		}
		if i < 0 || i > maxLogLine { // a long line goes out in pieces
			piece := cutUTF8(string(w.buf), maxLogLine)
			if piece == "" {
				piece = string(w.buf[:maxLogLine])
			}
			lines = append(lines, piece+"…")
			w.buf = w.buf[len(piece):]
			continue
		}
		lines = append(lines, strings.TrimSuffix(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	w.mu.Unlock()
	for _, l := range lines {
		w.log(l)
	}
	return len(p), nil
}
