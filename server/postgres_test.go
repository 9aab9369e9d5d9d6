//go:build unix

package server_test

import (
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// An editor's server whose store is a database it cannot reach says so
// (without the URL's password), keeps working on a memory store, and marks
// its sessions as not stored.
func TestUnreachableDatabaseStore(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "answered anyway"}}})
	env := append(envFor(t, srv), "AGENT_LSP_STORE=postgres://agent:s3cretpw@127.0.0.1:1/agent_lsp?sslmode=disable")
	c := startServer(t, env...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var told string
	c.waitFor("the message about the store", func() bool {
		for _, n := range c.notifications("window/showMessage") {
			if strings.Contains(string(n), "NOT stored") {
				told = string(n)
				return true
			}
		}
		return false
	})
	if !strings.Contains(told, "127.0.0.1:1") || strings.Contains(told, "s3cretpw") {
		t.Fatalf("the message: %s", told)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "hello"}, &res); err != nil || res.Reply != "answered anyway" {
		t.Fatalf("%+v %v", res, err)
	}
	var rows []struct {
		Session   string `json:"session"`
		NotStored bool   `json:"notStored"`
	}
	if err := c.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 1 || !rows[0].NotStored {
		t.Fatalf("agent.sessions: %+v %v", rows, err)
	}
	// A settings change that names another store: the notice names the store without the password.
	c.conn.Notify(t.Context(), "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"store": map[string]any{"path": "postgres://agent:0ther-s3cret@127.0.0.1:2/x"}}})
	c.waitFor("the notice that the store stays", func() bool {
		for _, n := range append(c.notifications("window/showMessage"), c.notifications("window/logMessage")...) {
			if strings.Contains(string(n), "until the server restarts") {
				return true
			}
		}
		return false
	})
	for _, n := range append(c.notifications("window/showMessage"), c.notifications("window/logMessage")...) {
		if strings.Contains(string(n), "s3cretpw") || strings.Contains(string(n), "0ther-s3cret") {
			t.Fatalf("a password in a message: %s", n)
		}
	}
	if strings.Contains(c.stderr.String(), "s3cretpw") {
		t.Fatalf("the password is in the server's log:\n%s", c.stderr.String())
	}
}
