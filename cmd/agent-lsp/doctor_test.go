//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// doctorKey is a recognizable fake API key: no part of it may ever appear
// in doctor's output.
const doctorFakeKey = "sk-doctor-FAKEKEY-Q7zX9wVu"

// doctorKeyParts are the pieces of the key a leak would show (OpenAI's 401
// quotes the key masked to its first and last characters).
var doctorKeyParts = []string{doctorFakeKey, "FAKEKEY", "Q7zX9wVu", "9wVu"}

// doctorResult is the part of doctor --json the tests read.
type doctorResult struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	Model   string `json:"model"`
	BaseURL string `json:"baseURL"`
	APIKey  struct {
		Variable string `json:"variable"`
		Present  bool   `json:"present"`
	} `json:"apiKey"`
	Endpoint struct {
		URL          string   `json:"url"`
		Status       string   `json:"status"`
		HTTPStatus   int      `json:"httpStatus"`
		LatencyMs    *float64 `json:"latencyMs"`
		ModelCount   int      `json:"modelCount"`
		Models       []string `json:"models"`
		ModelOffered *bool    `json:"modelOffered"`
		Error        string   `json:"error"`
	} `json:"endpoint"`
	Store struct {
		Path     string `json:"path"`
		ServedBy string `json:"servedBy"`
		Daemon   *struct {
			Pid     int    `json:"pid"`
			Version string `json:"version"`
		} `json:"daemon"`
		Exists   bool   `json:"exists"`
		Writable bool   `json:"writable"`
		Error    string `json:"error"`
	} `json:"store"`
	Sandbox *struct {
		Mode        string   `json:"mode"`
		LandlockABI *int     `json:"landlockABI"`
		Enforced    []string `json:"enforced"`
	} `json:"sandbox"`
	Projects []struct {
		Name      string `json:"name"`
		Path      string `json:"path"`
		Type      string `json:"type"`
		TechStack struct {
			BuildCommand string `json:"buildCommand"`
			TestCommand  string `json:"testCommand"`
		} `json:"techStack"`
		Sandbox struct {
			Mode     string   `json:"mode"`
			Writable []string `json:"writable"`
		} `json:"sandbox"`
	} `json:"projects"`
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
}

// doctorEnv is this process's environment without agent-lsp's and OpenAI's
// variables (so the host's settings cannot leak in), plus extra. The race
// detector's second of sleep at a successful exit is turned off.
func doctorEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_LSP_") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "GORACE=atexit_sleep_ms=0"), extra...)
}

// runDoctor runs agent-lsp doctor ARGS in dir with env.
func runDoctor(t *testing.T, env []string, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"doctor"}, args...)...)
	cmd.Env, cmd.Dir = env, dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// noKeyIn fails the test if any part of the fake key is in out.
func noKeyIn(t *testing.T, what, out string) {
	t.Helper()
	for _, part := range doctorKeyParts {
		if strings.Contains(out, part) {
			t.Errorf("%s shows the API key (%q):\n%s", what, part, out)
		}
	}
}

// closedEndpoint is a base URL nothing listens on.
func closedEndpoint(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/v1"
}

func TestDoctor(t *testing.T) {
	type env struct {
		url, key, store string // url "": OPENAI_BASE_URL unset
	}
	cases := []struct {
		name   string
		script scripted.Script
		// environ returns the case's variables from the scripted endpoint
		// and a fresh store path.
		environ func(t *testing.T, e env) []string
		args    []string
		code    int
		check   func(t *testing.T, r doctorResult, human string)
	}{
		{name: "all good", script: scripted.Script{Models: []string{"gpt-4o-mini", "scripted"}},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store}
			},
			code: 0, check: func(t *testing.T, r doctorResult, human string) {
				if !r.OK || !r.APIKey.Present || r.APIKey.Variable != "OPENAI_API_KEY" || r.Model != "scripted" ||
					r.Endpoint.Status != "ok" || r.Endpoint.ModelCount != 2 || r.Endpoint.ModelOffered == nil || !*r.Endpoint.ModelOffered ||
					r.Endpoint.LatencyMs == nil || len(r.Problems) != 0 || r.Version == "" {
					t.Errorf("report %+v", r)
				}
				if r.Store.ServedBy != "daemon" || r.Store.Daemon != nil || r.Store.Exists || !r.Store.Writable {
					t.Errorf("store %+v", r.Store)
				}
				if r.Sandbox == nil || r.Sandbox.Mode != "workspace-write" || r.Sandbox.LandlockABI == nil {
					t.Errorf("sandbox %+v", r.Sandbox)
				}
				if len(r.Projects) != 1 || r.Projects[0].Name != "sample" || r.Projects[0].Type != "go" ||
					r.Projects[0].TechStack.TestCommand != "go test ./..." || r.Projects[0].Sandbox.Mode != "workspace-write" {
					t.Errorf("projects %+v", r.Projects)
				}
				for _, want := range []string{"✓ API key     present in OPENAI_API_KEY", "✓ model list", "2 model(s), scripted offered",
					"✓ project     sample (go)", "test:  go test ./...", "✓ ready"} {
					if !strings.Contains(human, want) {
						t.Errorf("human output lacks %q:\n%s", want, human)
					}
				}
			}},
		{name: "endpoint down",
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + closedEndpoint(t), "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store}
			},
			code: 1, check: func(t *testing.T, r doctorResult, human string) {
				if r.OK || r.Endpoint.Status != "failed" || !strings.Contains(r.Endpoint.Error, "unreachable") || len(r.Problems) != 1 {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "✗ model list") || !strings.Contains(human, "connection refused") || !strings.Contains(human, "✗ not ready") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "no model list", script: scripted.Script{ModelsStatus: 404},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=llama3.1", "AGENT_LSP_STORE=" + e.store}
			},
			code: 0, check: func(t *testing.T, r doctorResult, human string) {
				if !r.OK || r.Endpoint.Status != "no model list" || r.Endpoint.HTTPStatus != 404 || r.Endpoint.ModelOffered != nil || len(r.Warnings) == 0 {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "! model list  no model list (fine for many local servers)") || !strings.Contains(human, "GET /models answered 404 Not Found in ") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "model not offered", script: scripted.Script{Models: []string{"qwen2.5-coder:7b", "llama3.1:8b"}},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=gpt-4o", "AGENT_LSP_STORE=" + e.store}
			},
			code: 1, check: func(t *testing.T, r doctorResult, human string) {
				if r.OK || r.Endpoint.Status != "ok" || r.Endpoint.ModelOffered == nil || *r.Endpoint.ModelOffered ||
					strings.Join(r.Endpoint.Models, ",") != "llama3.1:8b,qwen2.5-coder:7b" || len(r.Problems) != 1 ||
					!strings.Contains(r.Problems[0], "gpt-4o is not offered; the endpoint offers llama3.1:8b, qwen2.5-coder:7b") {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "✗ model list") || !strings.Contains(human, "offered: llama3.1:8b, qwen2.5-coder:7b") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "flag overrides the environment", script: scripted.Script{Models: []string{"scripted"}},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store}
			},
			args: []string{"--model", "other"}, code: 1, check: func(t *testing.T, r doctorResult, human string) {
				if r.Model != "other" || r.Endpoint.ModelOffered == nil || *r.Endpoint.ModelOffered {
					t.Errorf("report %+v", r)
				}
			}},
		{name: "Ollama's latest tag", script: scripted.Script{Models: []string{"llama3.1:latest"}},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "AGENT_LSP_MODEL=llama3.1", "AGENT_LSP_STORE=" + e.store}
			},
			code: 0, check: func(t *testing.T, r doctorResult, human string) {
				if !r.OK || r.APIKey.Present || r.Endpoint.ModelOffered == nil || !*r.Endpoint.ModelOffered || len(r.Warnings) == 0 {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "! API key     none in OPENAI_API_KEY") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "key refused", script: scripted.Script{ModelsStatus: 401},
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store}
			},
			code: 1, check: func(t *testing.T, r doctorResult, human string) {
				if r.OK || r.Endpoint.Status != "failed" || !strings.Contains(r.Endpoint.Error, "401 Unauthorized: the endpoint refused the API key") {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "(check OPENAI_API_KEY)") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "no key for OpenAI's API",
			environ: func(t *testing.T, e env) []string { return []string{"AGENT_LSP_STORE=" + e.store} },
			code:    1, check: func(t *testing.T, r doctorResult, human string) {
				if r.OK || r.APIKey.Present || r.BaseURL != "https://api.openai.com/v1" || r.Endpoint.Status != "skipped" ||
					len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "no API key: set OPENAI_API_KEY") {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "✗ API key     missing: set OPENAI_API_KEY") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "a short key is not redacted",
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=ollama", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store}
			},
			code: 0, check: func(t *testing.T, r doctorResult, human string) {
				if !r.OK || !slices.ContainsFunc(r.Warnings, func(w string) bool {
					return strings.Contains(w, "shorter than 12 characters: it is not redacted")
				}) {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "not redacted") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "store not writable",
			environ: func(t *testing.T, e env) []string {
				file := filepath.Join(t.TempDir(), "file")
				os.WriteFile(file, []byte("x"), 0o600)
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + filepath.Join(file, "s.db")}
			},
			code: 1, check: func(t *testing.T, r doctorResult, human string) {
				if r.OK || r.Store.Writable || !strings.Contains(r.Store.Error, "not a directory") || len(r.Problems) != 1 {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "✗ store") {
					t.Errorf("human output:\n%s", human)
				}
			}},
		{name: "daemon off, sandbox off",
			environ: func(t *testing.T, e env) []string {
				return []string{"OPENAI_BASE_URL=" + e.url, "OPENAI_API_KEY=" + e.key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + e.store,
					"AGENT_LSP_DAEMON=off", "AGENT_LSP_SANDBOX=off"}
			},
			code: 0, check: func(t *testing.T, r doctorResult, human string) {
				if !r.OK || r.Store.ServedBy != "in-process" || r.Sandbox == nil || r.Sandbox.Mode != "off" || len(r.Warnings) != 1 {
					t.Errorf("report %+v", r)
				}
				if !strings.Contains(human, "! sandbox     off") || !strings.Contains(human, "opened in-process") {
					t.Errorf("human output:\n%s", human)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, err := scripted.Start("127.0.0.1:0", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ws := filepath.Join(t.TempDir(), "sample")
			os.CopyFS(ws, os.DirFS("../../testdata/workspaces/sample"))
			store := filepath.Join(t.TempDir(), "state", "s.db")
			environ := doctorEnv(tc.environ(t, env{url: srv.URL, key: doctorFakeKey, store: store})...)

			out, errOut, code := runDoctor(t, environ, ws, append([]string{"--json"}, tc.args...)...)
			noKeyIn(t, "doctor --json", out+errOut)
			var r doctorResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("not one JSON object (%v): %s\nstderr: %s", err, out, errOut)
			}
			human, errOut2, code2 := runDoctor(t, environ, ws, tc.args...)
			noKeyIn(t, "doctor", human+errOut2)
			if code != tc.code || code2 != tc.code {
				t.Fatalf("exit %d (--json) and %d, want %d\n%s\n%s%s", code, code2, tc.code, out, human, errOut+errOut2)
			}
			if r.OK != (tc.code == 0) {
				t.Errorf("ok %v with exit %d", r.OK, code)
			}
			tc.check(t, r, human)
			if _, err := os.Stat(store); err == nil {
				t.Errorf("doctor created the store %s", store)
			}
		})
	}
}

// TestDoctorDaemon: a running daemon is reported with its pid and version,
// and doctor never opens or locks the store (the daemon keeps serving).
func TestDoctorDaemon(t *testing.T) {
	srv, err := scripted.Start("127.0.0.1:0", scripted.Script{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "s.db")
	d := exec.Command(binary, "daemon", "--store", store, "--idle", "2m")
	d.Env = doctorEnv()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command(binary, "daemon", "stop", "--now", "--store", store).Run()
		d.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if exec.Command(binary, "daemon", "status", "--store", store).Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
	}
	environ := doctorEnv("OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+doctorFakeKey, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+store)
	ws := t.TempDir()
	out, errOut, code := runDoctor(t, environ, ws, "--json")
	var r doctorResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d (%v): %s%s", code, err, out, errOut)
	}
	if r.Store.Daemon == nil || r.Store.Daemon.Pid != d.Process.Pid || r.Store.Daemon.Version == "" || r.Store.ServedBy != "daemon" {
		t.Fatalf("store %+v", r.Store)
	}
	human, _, _ := runDoctor(t, environ, ws)
	if !strings.Contains(human, "served by the daemon (pid ") {
		t.Fatalf("human output:\n%s", human)
	}
	// With the daemon turned off here, a server would find the store held.
	out, _, code = runDoctor(t, append(environ, "AGENT_LSP_DAEMON=off"), ws, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Store.ServedBy != "in-process" ||
		!strings.Contains(strings.Join(r.Warnings, "\n"), "keeps its sessions in memory") {
		t.Fatalf("daemon off: exit %d: %s", code, out)
	}
	if exec.Command(binary, "daemon", "status", "--store", store).Run() != nil {
		t.Fatal("the daemon stopped answering")
	}
}

func TestDoctorUsage(t *testing.T) {
	dir := t.TempDir()
	env := doctorEnv("OPENAI_BASE_URL=" + closedEndpoint(t))
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr, or in stdout after --help
	}{
		{[]string{"--help"}, 0, "Exit status"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--workspace", "/no/such/dir"}, 2, "not a folder"},
		{[]string{"now"}, 2, `unexpected argument "now"`},
		{[]string{"--sandbox", "sometimes"}, 2, "unknown sandbox mode"},
	} {
		out, errOut, code := runDoctor(t, env, dir, tc.args...)
		if tc.code == 0 {
			errOut = out
		}
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	// A bad environment variable breaks the next run: exit 1, named.
	out, _, code := runDoctor(t, append(env, "AGENT_LSP_SANDBOX=sometimes"), dir, "--json")
	var r doctorResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 || r.OK || len(r.Problems) != 1 ||
		!strings.Contains(r.Problems[0], "AGENT_LSP_SANDBOX=sometimes") {
		t.Fatalf("exit %d: %s", code, out)
	}
	// The top-level help lists the command.
	if help, _, _ := runDoctor(t, env, dir, "--help"); !strings.Contains(help, "--workspace DIR") {
		t.Fatalf("doctor --help: %s", help)
	}
	cmd := exec.Command(binary, "--help")
	var e bytes.Buffer
	cmd.Stdout = &e
	cmd.Run()
	if !strings.Contains(e.String(), "agent-lsp doctor [--json]") {
		t.Fatalf("agent-lsp --help: %s", e.String())
	}
}
