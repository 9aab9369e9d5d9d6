package config

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedence(t *testing.T) {
	e := env(map[string]string{"OPENAI_BASE_URL": "http://env/v1", "AGENT_LSP_MODEL": "env-model", "AGENT_LSP_DURABILITY": "sync",
		"AGENT_LSP_STORE": "/env/s.db", "MY_KEY": "sk-from-my-key", "OPENAI_API_KEY": "sk-default", "HOME": "/home/u"})
	tests := []struct {
		name  string
		init  string
		flags []string
		want  func(Settings) bool
	}{
		{"defaults and environment", ``, nil, func(s Settings) bool {
			return s.BaseURL == "http://env/v1" && s.Model == "env-model" && s.Durability == store.Sync && s.StorePath == "/env/s.db" &&
				s.APIKey == "sk-default" && s.Edits == "apply" && s.MaxSteps == 100 && s.Window == 200 && s.ContextTokens == 0 && s.ToolOutput == 16384
		}},
		{"initializationOptions win over the environment", `{"model":{"model":"init-model","apiKeyEnv":"MY_KEY"},"store":{"path":"/init.db"},"durability":"exit","edits":"review","permissions":{"allow":["go *"]},"maxSteps":7,"window":12}`, nil,
			func(s Settings) bool {
				return s.Model == "init-model" && s.APIKey == "sk-from-my-key" && s.StorePath == "/init.db" && s.Durability == store.Exit &&
					s.Edits == "review" && reflect.DeepEqual(s.Allow, []string{"go *"}) && s.MaxSteps == 7 && s.Window == 12 && s.BaseURL == "http://env/v1"
			}},
		{"flags win over both; list flags replace then add up", `{"model":{"model":"init-model"},"permissions":{"allow":["go *"]}}`,
			[]string{"--model", "flag-model", "--allow", "npm test", "--allow", "make *", "--max-steps", "3"},
			func(s Settings) bool {
				return s.Model == "flag-model" && reflect.DeepEqual(s.Allow, []string{"npm test", "make *"}) && s.MaxSteps == 3
			}},
		{"null leaves the lower value", `{"model":{"model":null},"maxSteps":null}`, nil, func(s Settings) bool {
			return s.Model == "env-model" && s.MaxSteps == 100
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			f := Register(fs)
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatal(err)
			}
			s, warn, err := Resolve(e, json.RawMessage(tt.init), f)
			if err != nil || len(warn) > 0 || !tt.want(s) {
				t.Fatalf("%+v %v %v", s, warn, err)
			}
		})
	}
}

func TestBadValuesNameTheSetting(t *testing.T) {
	for _, tt := range []struct {
		env, init, want string
	}{
		{init: `{"maxSteps":"ten"}`, want: "initializationOptions.maxSteps: must be an integer"},
		{init: `{"window":5}`, want: "initializationOptions.window: must be between 10 and 1000, not 5"},
		{init: `{"edits":"yolo"}`, want: `initializationOptions.edits: must be apply or review, not "yolo"`},
		{init: `{"durability":"often"}`, want: `initializationOptions.durability: unknown durability "often"`},
		{init: `{"permissions":{"allow":"*"}}`, want: "initializationOptions.permissions.allow: must be a list of strings"},
		{init: `[1,2]`, want: "initializationOptions must be an object"},
		{env: "often", want: `AGENT_LSP_DURABILITY=often: unknown durability "often"`},
	} {
		_, _, err := Resolve(env(map[string]string{"AGENT_LSP_DURABILITY": tt.env}), json.RawMessage(tt.init), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s%s: err %v, want %q", tt.env, tt.init, err, tt.want)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Register(fs)
	if err := fs.Parse([]string{"--max-steps", "lots"}); err == nil || !strings.Contains(err.Error(), "must be an integer") {
		t.Errorf("--max-steps lots: %v", err)
	}
}

func TestUnknownInitKeysWarn(t *testing.T) {
	_, warn, err := Resolve(env(nil), json.RawMessage(`{"model":{"model":"m","temperature":1},"colour":"blue","edits":"apply"}`), nil)
	want := []string{
		"initializationOptions.colour is not a setting of agent-lsp; ignored",
		"initializationOptions.model.temperature is not a setting of agent-lsp; ignored",
	}
	if err != nil || !reflect.DeepEqual(warn, want) {
		t.Fatalf("%v %v", warn, err)
	}
}

func TestEverySettingIsReachable(t *testing.T) {
	for _, st := range Table {
		if st.Init == "" || st.Doc == "" || st.Default == "" {
			t.Errorf("setting %q needs an initializationOptions path, a doc line and a default", st.Name)
		}
	}
}

// The default store is an absolute path whatever the environment: an
// agent started with a bare environment (no HOME, no XDG_STATE_HOME) keeps
// its sessions in the account's home, not beside wherever it started.
func TestDefaultStorePathIsAbsolute(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"xdg":          {"XDG_STATE_HOME": "/state", "HOME": "/home/u"},
		"home":         {"HOME": "/home/u"},
		"bare":         {},
		"relative xdg": {"XDG_STATE_HOME": "state", "HOME": "/home/u"},
	} {
		got := DefaultStorePath(func(k string) string { return env[k] })
		if !filepath.IsAbs(got) || filepath.Base(got) != "sessions.db" {
			t.Errorf("%s: %q", name, got)
		}
		switch name {
		case "xdg":
			if got != "/state/agent-lsp/sessions.db" {
				t.Errorf("xdg: %q", got)
			}
		case "home", "relative xdg":
			if got != "/home/u/.local/state/agent-lsp/sessions.db" {
				t.Errorf("%s: %q", name, got)
			}
		}
	}
}

// The temporary fallback folder is this user's alone: one another user
// made first (here: of another mode) is not used.
func TestPrivateTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := privateTempDir()
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(dir) != tmp {
		t.Fatalf("%s: %v %v", dir, fi, err)
	}
	os.Chmod(dir, 0o777) // as if someone else had made it for everyone
	if other := privateTempDir(); other == dir || filepath.Dir(other) != tmp {
		t.Fatalf("a folder of mode 0777 was used: %s", other)
	}
}

// --allow-hooks may be given bare (any hooks the repository has), with
// =HASH, or followed by a hash; a prompt after a bare --allow-hooks stays
// the prompt.
func TestAllowHooksFlag(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, c := range []struct {
		args       []string
		want       []string
		positional []string
	}{
		{[]string{"--allow-hooks", "fix the bug"}, []string{"*"}, []string{"fix the bug"}},
		{[]string{"--allow-hooks", hash, "fix"}, []string{hash}, []string{"fix"}},
		{[]string{"-allow-hooks=" + hash, "--allow-hooks", "repo@" + hash, "fix"}, []string{hash, "repo@" + hash}, []string{"fix"}},
		{[]string{"fix", "--", "--allow-hooks", hash}, nil, []string{"fix", "--", "--allow-hooks", hash}},
	} {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		f := Register(fs)
		if err := fs.Parse(JoinFlagValues(c.args)); err != nil {
			t.Fatal(err)
		}
		s, _, err := Resolve(func(string) string { return "" }, nil, f)
		if err != nil || !slices.Equal(s.AllowHooks, c.want) || !slices.Equal(fs.Args(), c.positional) {
			t.Errorf("%q: allow %q, args %q, %v", c.args, s.AllowHooks, fs.Args(), err)
		}
	}
}
