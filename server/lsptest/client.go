// Package lsptest is the LSP client agent-lsp's Go tests drive the server
// with, over any byte stream: the binary's stdio, pipes to Serve in the test's
// process, a daemon's socket. It frames messages with go.lsp.dev/jsonrpc2 (as
// the server does), answers the server's requests to the editor through
// handlers by method, and keeps the notifications, in arrival order, for the
// test to read. Raw frames what a well-behaved client cannot send.
package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"
)

// Handler answers a request (or takes a notification) of the server's; its
// result is marshalled as the response's. It runs on its own goroutine for a
// request and on the connection's reading goroutine for a notification.
type Handler func(ctx context.Context, params json.RawMessage) (any, error)

// Message is a notification or request the server sent.
type Message struct {
	Method string
	Params json.RawMessage
}

// Client is one editor's connection to the server.
type Client struct {
	conn jsonrpc2.Conn

	mu       sync.Mutex         // guards the fields below
	handlers map[string]Handler // by method; nil: the default's
	messages []Message          // what the server sent that no handler took, in arrival order
}

// New connects to the server at the other end of stream and reads from it
// until Close. The server's requests get the editor's usual answers
// (workspace/applyEdit applied, progress created, other requests
// MethodNotFound) until Handle changes them.
func New(stream io.ReadWriteCloser) *Client {
	c := &Client{conn: jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(stream)), handlers: map[string]Handler{}}
	c.Handle("workspace/applyEdit", Reply(map[string]any{"applied": true}))
	c.Handle("window/workDoneProgress/create", Reply(nil))
	c.conn.Go(context.Background(), c.handle)
	return c
}

// Stream joins a reader and a writer into the stream New takes; Close closes both (a reader that is an io.Closer too).
func Stream(r io.Reader, w io.WriteCloser) io.ReadWriteCloser { return stream{r, w} }

type stream struct {
	io.Reader
	io.WriteCloser
}

func (s stream) Close() error {
	err := s.WriteCloser.Close()
	if rc, ok := s.Reader.(io.Closer); ok {
		if e := rc.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Reply is a handler that answers every request with result.
func Reply(result any) Handler {
	return func(context.Context, json.RawMessage) (any, error) { return result, nil }
}

// Handle makes h answer the server's requests of method, or take its
// notifications of method (which are then not kept); nil restores the default.
func (c *Client) Handle(method string, h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h == nil {
		delete(c.handlers, method)
		return
	}
	c.handlers[method] = h
}

func (c *Client) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	params := json.RawMessage(append([]byte(nil), req.Params()...)) // Params and Method borrow the read buffer
	method := strings.Clone(req.Method())
	c.mu.Lock()
	h := c.handlers[method]
	if h == nil || req.IsCall() {
		c.messages = append(c.messages, Message{method, params})
	}
	c.mu.Unlock()
	if !req.IsCall() {
		if h != nil {
			h(ctx, params)
		}
		return nil, nil // kept in arrival order, on the read loop
	}
	if h == nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "lsptest client: %s", method)
	}
	jsonrpc2.Async(ctx) // answering may take a while (a test deciding); keep reading
	return h(ctx, params)
}

// Call sends a request and decodes its result into result (nil: dropped).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	_, err := c.conn.Call(ctx, method, params, result)
	return err
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Command runs a server command (workspace/executeCommand) with its one argument.
func (c *Client) Command(ctx context.Context, name string, args, result any) error {
	return c.Call(ctx, "workspace/executeCommand", map[string]any{"command": name, "arguments": []any{args}}, result)
}

// Folder is a workspace folder of initialize.
type Folder struct {
	Name string
	Path string
}

// Initialize sends initialize with folders, initOpts (nil: none) and caps
// (nil: none) as an editor does, then initialized; it returns the server's result.
func (c *Client) Initialize(ctx context.Context, folders []Folder, initOpts, caps map[string]any) (map[string]any, error) {
	fs := []map[string]string{}
	for _, f := range folders {
		fs = append(fs, map[string]string{"uri": string(uri.File(f.Path)), "name": f.Name})
	}
	if caps == nil {
		caps = map[string]any{}
	}
	params := map[string]any{"processId": nil, "workspaceFolders": fs, "capabilities": caps}
	if initOpts != nil {
		params["initializationOptions"] = initOpts
	}
	var res map[string]any
	if err := c.Call(ctx, "initialize", params, &res); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.Notify(ctx, "initialized", map[string]any{}); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return res, nil
}

// Shutdown ends the session as an editor does: shutdown, then exit.
func (c *Client) Shutdown(ctx context.Context) error {
	if err := c.Call(ctx, "shutdown", nil, nil); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return c.Notify(ctx, "exit", nil)
}

// Messages returns the params of what the server sent of method (every
// request, and the notifications no handler took), in arrival order.
func (c *Client) Messages(method string) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []json.RawMessage
	for _, m := range c.messages {
		if m.Method == method {
			out = append(out, m.Params)
		}
	}
	return out
}

// Events returns the agent/event notifications kept, decoded, in arrival order.
func (c *Client) Events() []map[string]any {
	var out []map[string]any
	for _, raw := range c.Messages("agent/event") {
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Done is closed once the connection has ended (the stream closed or failed).
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Close closes the connection and its stream.
func (c *Client) Close() error { return c.conn.Close() }
