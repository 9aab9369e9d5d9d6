//go:build unix

package server_test

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/acp-go-sdk"
	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// reasonOf is a JSON-RPC error's code and data.
func reasonOf(t *testing.T, err error) (jsonrpc2.Code, map[string]any) {
	t.Helper()
	var re *jsonrpc2.Error
	if !errors.As(err, &re) {
		t.Fatalf("not a JSON-RPC error: %v", err)
	}
	var data map[string]any
	if err := json.Unmarshal(re.Data, &data); err != nil {
		t.Fatalf("error %q has no data: %v", re.Message, err)
	}
	return re.Code, data
}

// proxyTrap is a listener that counts the connections made to it: a proxy
// every request would go through.
func proxyTrap(t *testing.T) (url string, conns *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String(), conns
}

// noModelEnv is the environment of a server without a key, for OpenAI's
// endpoint (the default), every request of which would go through proxy.
func noModelEnv(t *testing.T, proxy string) []string {
	env := []string{"OPENAI_API_KEY=", "AGENT_LSP_STORE=" + filepath.Join(t.TempDir(), "s.db"),
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy, "NO_PROXY=", "no_proxy="}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "AGENT_LSP_MODEL=") {
			env = append(env, strings.SplitN(kv, "=", 2)[0]+"=")
		}
	}
	return env
}

// TestNoKeyNoRequest: without a key for OpenAI's endpoint, agent.run,
// agent.resume and agent.models are refused at once with data.reason
// no-api-key and the setting to fix, and no request leaves the server;
// agent.endpoint says what an empty chat shows.
func TestNoKeyNoRequest(t *testing.T) {
	proxy, conns := proxyTrap(t)
	c := startServer(t, noModelEnv(t, proxy)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	for _, tc := range []struct {
		command string
		args    map[string]any
	}{
		{"agent.run", map[string]any{"prompt": "hi"}},
		{"agent.resume", map[string]any{"session": "s-any"}},
		{"agent.models", map[string]any{}},
	} {
		var res json.RawMessage
		err := c.command(tc.command, tc.args, &res)
		if err == nil {
			t.Fatalf("%s answered %s", tc.command, res)
		}
		code, data := reasonOf(t, err)
		if code != jsonrpc2.InvalidParams || data["reason"] != "no-api-key" || data["apiKeyEnv"] != "OPENAI_API_KEY" ||
			data["baseURL"] != "https://api.openai.com/v1" || data["setting"] != "model.apiKeyEnv" || data["model"] == "" {
			t.Errorf("%s: code %d, data %v", tc.command, code, data)
		}
		if msg := err.Error(); !strings.Contains(msg, "no API key") || !strings.Contains(msg, "OPENAI_API_KEY") {
			t.Errorf("%s: message %q", tc.command, msg)
		}
	}
	var ep map[string]any
	if err := c.command("agent.endpoint", map[string]any{}, &ep); err != nil {
		t.Fatal(err)
	}
	if ep["keySet"] != false || ep["needsKey"] != true || ep["baseURL"] != "https://api.openai.com/v1" || ep["apiKeyEnv"] != "OPENAI_API_KEY" {
		t.Errorf("agent.endpoint: %v", ep)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connection(s) left the server", n)
	}
}

// TestEndpointThatRefusedWithoutKey: an endpoint that answered 401 to a run
// without a key needs one: the run's result says no-api-key, and the next
// run is refused before a request leaves.
func TestEndpointThatRefusedWithoutKey(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Error: &scripted.HTTPError{Status: 401, Message: "You didn't provide an API key."}}}})
	c := startServer(t, "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+filepath.Join(t.TempDir(), "s.db"))
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var res struct {
		runResult
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Reason != "no-api-key" || !strings.Contains(res.Error, "OPENAI_API_KEY is not set") {
		t.Fatalf("first run: %+v", res)
	}
	err := c.command("agent.run", map[string]any{"prompt": "again"}, &res)
	if _, data := reasonOf(t, err); data["reason"] != "no-api-key" {
		t.Fatalf("second run: %v", data)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the endpoint got %d requests, want 1", n)
	}
}

// TestFailureReasons: a refused key, an unknown model and an endpoint out
// of reach each name their reason, and the key's sentence offers no resume.
func TestFailureReasons(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{Error: &scripted.HTTPError{Status: 401, Message: "Incorrect API key provided"}},
		{Error: &scripted.HTTPError{Status: 404, Message: "The model `gpt-9` does not exist"}},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	type result struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	var res result
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Reason != "key-refused" || !strings.Contains(res.Error, "refused the API key (HTTP 401)") || strings.Contains(res.Error, "resume") {
		t.Fatalf("401: %+v", res)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Reason != "model-unknown" || strings.Contains(res.Error, "agent.models") {
		t.Fatalf("404: %+v", res)
	}
	err := c.command("agent.run", map[string]any{"prompt": "hi", "model": "gpt-9"}, &res)
	if _, data := reasonOf(t, err); data["reason"] != "model-unknown" || data["model"] != "gpt-9" || data["setting"] != "model.model" {
		t.Fatalf("unknown model: %v", data)
	}

	down := model(t, scripted.Script{})
	url := down.URL
	down.Close()
	c2 := startServer(t, "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=sk-x", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+filepath.Join(t.TempDir(), "s.db"))
	c2.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	if err := c2.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Reason != "endpoint-unreachable" {
		t.Fatalf("unreachable: %+v", res)
	}
	err = c2.command("agent.models", map[string]any{}, &res)
	if _, data := reasonOf(t, err); data["reason"] != "endpoint-unreachable" || data["setting"] != "model.baseURL" {
		t.Fatalf("agent.models unreachable: %v", data)
	}
}

// TestACPNoKeyNoRequest: an ACP prompt without a key for OpenAI's endpoint
// is refused at once with data.reason no-api-key; no request leaves.
func TestACPNoKeyNoRequest(t *testing.T) {
	proxy, conns := proxyTrap(t)
	c := startACP(t, false, noModelEnv(t, proxy))
	session := c.newSession(copyFixture(t, "sample"))
	_, err := c.prompt(session, "hi")
	if err == nil || !strings.Contains(err.Error(), "no API key") {
		t.Fatalf("prompt: %v", err)
	}
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Fatalf("error %#v", err)
	}
	if b, _ := json.Marshal(re.Data); !strings.Contains(string(b), `"reason":"no-api-key"`) {
		t.Fatalf("data %s", b)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connection(s) left the server", n)
	}
}
