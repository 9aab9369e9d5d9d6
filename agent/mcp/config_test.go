package mcp

import (
	"reflect"
	"strings"
	"testing"
)

// vars is a getenv over a fixed map.
func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestParseShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		want []Definition
	}{
		{"empty document", ``, nil},
		{"no mcpServers", `{"other": 1}`, nil},
		{"null mcpServers", `{"mcpServers": null}`, nil},
		{"stdio", `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "/tmp"], "env": {"A": "1"}, "cwd": "sub"}}}`,
			[]Definition{{Name: "fs", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "server-fs", "/tmp"}, Env: map[string]string{"A": "1"}, Cwd: "sub"}}},
		{"explicit stdio, unknown fields ignored", `{"mcpServers": {"s": {"type": "stdio", "command": "srv", "disabled": false, "timeout": 5}}}`,
			[]Definition{{Name: "s", Transport: TransportStdio, Command: "srv"}}},
		{"http", `{"mcpServers": {"web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}`,
			[]Definition{{Name: "web", Transport: TransportHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}}},
		{"url without type is http", `{"mcpServers": {"web": {"url": "http://127.0.0.1:8080/"}}}`,
			[]Definition{{Name: "web", Transport: TransportHTTP, URL: "http://127.0.0.1:8080/"}}},
		{"streamable-http", `{"mcpServers": {"web": {"type": "streamable-http", "url": "http://h/"}}}`,
			[]Definition{{Name: "web", Transport: TransportHTTP, URL: "http://h/"}}},
		{"several, sorted", `{"mcpServers": {"b": {"command": "b"}, "a": {"command": "a"}}}`,
			[]Definition{{Name: "a", Transport: TransportStdio, Command: "a"}, {Name: "b", Transport: TransportStdio, Command: "b"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.doc), "/home/u/.mcp.json", SourceUser, nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for i := range c.want {
				c.want[i].Source, c.want[i].Origin = SourceUser, "/home/u/.mcp.json"
			}
			if !reflect.DeepEqual(cfg.Servers, c.want) {
				t.Errorf("got  %+v\nwant %+v", cfg.Servers, c.want)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("warnings %q", cfg.Warnings)
			}
		})
	}
}

func TestParseBadShapes(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"not JSON", `{`, "not a JSON object"},
		{"not an object", `[1]`, "not a JSON object"},
		{"mcpServers an array", `{"mcpServers": []}`, "mcpServers must be an object"},
		{"server not an object", `{"mcpServers": {"s": "npx"}}`, `server "s": must be an object`},
		{"command not a string", `{"mcpServers": {"s": {"command": ["npx"]}}}`, `server "s": command must be a string`},
		{"args not strings", `{"mcpServers": {"s": {"command": "x", "args": [1]}}}`, `server "s": args must be an array of strings`},
		{"env not strings", `{"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}`, `server "s": env must be an object of strings`},
		{"env bad name", `{"mcpServers": {"s": {"command": "x", "env": {"A=B": "1"}}}}`, `server "s": env has an invalid name`},
		{"cwd not a string", `{"mcpServers": {"s": {"command": "x", "cwd": 1}}}`, `server "s": cwd must be a string`},
		{"stdio without command", `{"mcpServers": {"s": {"args": ["x"]}}}`, `server "s": a stdio server needs a command`},
		{"stdio with url", `{"mcpServers": {"s": {"type": "stdio", "command": "x", "url": "http://h/"}}}`, `server "s": a stdio server has no url`},
		{"http without url", `{"mcpServers": {"s": {"type": "http"}}}`, `server "s": an http server needs a url`},
		{"http with command", `{"mcpServers": {"s": {"type": "http", "url": "http://h/", "command": "x"}}}`, `server "s": an http server has no command`},
		{"http bad url", `{"mcpServers": {"s": {"type": "http", "url": "ftp://h/"}}}`, `server "s": url "ftp://h/" is not an http(s) URL`},
		{"headers not strings", `{"mcpServers": {"s": {"type": "http", "url": "http://h/", "headers": {"A": true}}}}`, `server "s": headers must be an object of strings`},
		{"sse", `{"mcpServers": {"s": {"type": "sse", "url": "http://h/"}}}`, `server "s": type "sse"`},
		{"unknown type", `{"mcpServers": {"s": {"type": "ws", "url": "ws://h/"}}}`, `server "s": unknown type "ws"`},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, "a server has an empty name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "/p/.mcp.json", SourceProject, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "/p/.mcp.json: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want the file and %q", err, c.want)
			}
		})
	}
	if _, err := ParseServers([]byte(`{}`), "x", Source("nope"), nil); err == nil {
		t.Error("an unknown source is accepted")
	}
}

func TestParseExpansion(t *testing.T) {
	env := vars(map[string]string{"TOKEN": "secret", "EMPTY": "", "HOST": "example.com"})
	doc := `{"mcpServers": {
		"cmd": {"command": "srv", "args": ["--token=${TOKEN}", "${MISSING:-fallback}", "${EMPTY:-def}", "${EMPTY}", "$TOKEN", "${unclosed"],
		        "env": {"T": "${TOKEN}", "U": "${UNSET}"}},
		"web": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`
	for _, source := range []Source{SourceUser, SourceEditor, SourceFlag, SourceACP} {
		t.Run(string(source), func(t *testing.T) {
			cfg, err := Parse([]byte(doc), "origin", source, env)
			if err != nil {
				t.Fatal(err)
			}
			cmd, web := cfg.Servers[0], cfg.Servers[1]
			if want := []string{"--token=secret", "fallback", "def", "", "$TOKEN", "${unclosed"}; !reflect.DeepEqual(cmd.Args, want) {
				t.Errorf("args %q, want %q", cmd.Args, want)
			}
			if want := map[string]string{"T": "secret", "U": ""}; !reflect.DeepEqual(cmd.Env, want) {
				t.Errorf("env %q, want %q", cmd.Env, want)
			}
			if web.URL != "https://example.com/mcp" || web.Headers["Authorization"] != "Bearer secret" {
				t.Errorf("http %q %q", web.URL, web.Headers)
			}
			if len(cmd.Unexpanded) > 0 || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "${UNSET} is not set") {
				t.Errorf("unexpanded %q, warnings %q, want one about UNSET", cmd.Unexpanded, cfg.Warnings)
			}
		})
	}
	t.Run("project", func(t *testing.T) {
		called := false
		cfg, err := Parse([]byte(doc), "/repo/.mcp.json", SourceProject, func(string) (string, bool) {
			called = true
			return "leaked", true
		})
		if err != nil {
			t.Fatal(err)
		}
		if called {
			t.Error("getenv was called for a project definition")
		}
		cmd, web := cfg.Servers[0], cfg.Servers[1]
		if want := []string{"--token=${TOKEN}", "${MISSING:-fallback}", "${EMPTY:-def}", "${EMPTY}", "$TOKEN", "${unclosed"}; !reflect.DeepEqual(cmd.Args, want) {
			t.Errorf("args %q, want them literal", cmd.Args)
		}
		if cmd.Env["T"] != "${TOKEN}" || web.URL != "https://${HOST}/mcp" || web.Headers["Authorization"] != "Bearer ${TOKEN}" {
			t.Errorf("expanded: %q %q %q", cmd.Env, web.URL, web.Headers)
		}
		if want := []string{"${EMPTY:-def}", "${EMPTY}", "${MISSING:-fallback}", "${TOKEN}", "${UNSET}"}; !reflect.DeepEqual(cmd.Unexpanded, want) {
			t.Errorf("unexpanded %q, want %q", cmd.Unexpanded, want)
		}
		if len(cfg.Warnings) != 2 || !strings.Contains(cfg.Warnings[0], `/repo/.mcp.json: server "cmd": ${EMPTY:-def}`) ||
			!strings.Contains(cfg.Warnings[0], "not expanded in a project") {
			t.Errorf("warnings %q, want one per server naming the references", cfg.Warnings)
		}
	})
}

func TestMergePrecedence(t *testing.T) {
	def := func(name string, s Source, cmd string) Definition {
		return Definition{Name: name, Source: s, Transport: TransportStdio, Command: cmd}
	}
	project := []Definition{def("a", SourceProject, "p"), def("b", SourceProject, "p"), def("c", SourceProject, "p"), def("only-project", SourceProject, "p")}
	user := []Definition{def("a", SourceUser, "u"), def("b", SourceUser, "u"), def("c", SourceUser, "u")}
	flag := []Definition{def("a", SourceFlag, "f"), def("b", SourceFlag, "f")}
	editor := []Definition{def("a", SourceEditor, "e")}
	// The order of the arguments does not matter, only the sources.
	for _, order := range [][][]Definition{{project, user, flag, editor}, {editor, flag, user, project}} {
		got := Merge(order...)
		var summary []string
		for _, d := range got {
			summary = append(summary, d.Name+"="+d.Command)
		}
		if want := []string{"a=e", "b=f", "c=u", "only-project=p"}; !reflect.DeepEqual(summary, want) {
			t.Errorf("merged %q, want %q", summary, want)
		}
	}
	if got := Merge([]Definition{def("a", SourceEditor, "e")}, []Definition{def("a", SourceACP, "acp")}); got[0].Command != "acp" {
		t.Errorf("acp does not win over editor: %+v", got)
	}
	if got := Merge([]Definition{def("a", SourceUser, "1"), def("a", SourceUser, "2")}); len(got) != 1 || got[0].Command != "2" {
		t.Errorf("within a source the later should win: %+v", got)
	}
}

func TestHash(t *testing.T) {
	base := Definition{Name: "s", Source: SourceProject, Origin: "o", Transport: TransportStdio, Command: "srv",
		Args: []string{"a"}, Env: map[string]string{"A": "1", "B": "2"}, Cwd: "d"}
	h := base.Hash()
	if len(h) != 64 {
		t.Errorf("hash %q", h)
	}
	same := base
	same.Name, same.Source, same.Origin = "other", SourceUser, "elsewhere"
	same.Env = map[string]string{"B": "2", "A": "1"}
	if same.Hash() != h {
		t.Error("the hash depends on the name, source, origin or map order")
	}
	for _, c := range []struct {
		name   string
		change func(*Definition)
	}{
		{"command", func(d *Definition) { d.Command = "srv2" }},
		{"args", func(d *Definition) { d.Args = []string{"a", "b"} }},
		{"args split differently", func(d *Definition) { d.Command, d.Args = "srv a", nil }},
		{"env value", func(d *Definition) { d.Env = map[string]string{"A": "1", "B": "3"} }},
		{"env name", func(d *Definition) { d.Env = map[string]string{"A": "1", "C": "2"} }},
		{"cwd", func(d *Definition) { d.Cwd = "e" }},
		{"transport and url", func(d *Definition) { d.Transport, d.URL = TransportHTTP, "http://h/" }},
		{"url", func(d *Definition) { d.URL = "http://h/" }},
		{"headers", func(d *Definition) { d.Headers = map[string]string{"X": "y"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := base
			c.change(&d)
			if d.Hash() == h {
				t.Errorf("the hash did not change")
			}
		})
	}
}

func TestSummary(t *testing.T) {
	for _, c := range []struct {
		def  Definition
		want string
	}{
		{Definition{Transport: TransportStdio, Command: "npx", Args: []string{"-y", "a b", "it's"}, Env: map[string]string{"TOKEN": "secret", "A": "x"}, Cwd: "/w"},
			`npx -y 'a b' 'it'\''s'; sets A, TOKEN; in /w`},
		{Definition{Transport: TransportHTTP, URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer secret"}},
			"https://h/mcp (http); headers: Authorization"},
	} {
		got := c.def.Summary()
		if got != c.want {
			t.Errorf("Summary %q, want %q", got, c.want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("Summary %q shows a value", got)
		}
	}
}

// An allow list approves a repository's definition only by its hash: a
// bare name or * approves the user's own definitions, never a repository
// redefining a name the user allowed. NAME@HASH approves exactly that
// definition from any source.
func TestAllowed(t *testing.T) {
	repo := Definition{Name: "docs", Source: SourceProject, Transport: TransportStdio, Command: "docs-mcp"}
	redefined := repo
	redefined.Args = []string{"--exfiltrate"}
	unsandboxed := repo
	unsandboxed.Unsandboxed = true
	mine := repo
	mine.Source = SourceUser
	for _, c := range []struct {
		name  string
		allow []string
		d     Definition
		want  bool
	}{
		{"nothing allowed", nil, repo, false},
		{"a repository's, by name", []string{"docs"}, repo, false},
		{"a repository's, by *", []string{"*"}, repo, false},
		{"a repository's, by its hash", []string{repo.Ref()}, repo, true},
		{"by its hash in capitals", []string{"docs@" + strings.ToUpper(repo.Hash())}, repo, true},
		{"redefined after approval", []string{repo.Ref()}, redefined, false},
		{"sandbox turned off after approval", []string{repo.Ref()}, unsandboxed, false},
		{"another name's hash", []string{"lint@" + repo.Hash()}, repo, false},
		{"a hash prefix", []string{"docs@" + repo.Hash()[:12]}, repo, false},
		{"the user's, by name", []string{"docs"}, mine, true},
		{"the user's, by *", []string{"*"}, mine, true},
		{"the user's, by its hash", []string{mine.Ref()}, mine, true},
		{"a name with @", []string{"a@b@" + repo.Hash()}, Definition{Name: "a@b", Source: SourceProject, Transport: TransportStdio, Command: "docs-mcp"}, true},
	} {
		if got := Allowed(c.allow, c.d); got != c.want {
			t.Errorf("%s: Allowed(%v) = %v, want %v", c.name, c.allow, got, c.want)
		}
	}
	if !NamedOnly([]string{"docs"}, repo) || !NamedOnly([]string{"*"}, repo) || NamedOnly([]string{"docs"}, mine) || NamedOnly([]string{repo.Ref()}, repo) {
		t.Error("NamedOnly")
	}
}
