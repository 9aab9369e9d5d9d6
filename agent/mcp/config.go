package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Source says where a server definition came from. It decides whether
// variables are expanded (not for SourceProject) and which definition wins
// when several sources define the same name (see Merge).
type Source string

// The sources of definitions.
const (
	// SourceUser is the user's own file ($XDG_CONFIG_HOME/agent-lsp/mcp.json).
	SourceUser Source = "user"
	// SourceEditor is the editor's setting (initializationOptions.mcpServers).
	SourceEditor Source = "editor"
	// SourceFlag is a file given with agent-lsp run --mcp-config.
	SourceFlag Source = "flag"
	// SourceProject is a repository's .mcp.json: repository content, untrusted.
	SourceProject Source = "project"
	// SourceACP is the mcpServers of an ACP session/new.
	SourceACP Source = "acp"
)

// rank orders sources for Merge: higher wins; 0 is an unknown source.
func rank(s Source) int {
	switch s {
	case SourceProject:
		return 1
	case SourceUser:
		return 2
	case SourceFlag:
		return 3
	case SourceEditor:
		return 4
	case SourceACP:
		return 5
	}
	return 0
}

// Transport is how a server is reached.
type Transport string

// The transports.
const (
	// TransportStdio runs a command and speaks over its standard input and output.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks streamable HTTP to a URL.
	TransportHTTP Transport = "http"
)

// Definition is one server as configured: a command to run (stdio) or a URL
// (http). Values are already expanded for non-project sources.
type Definition struct {
	// Name is the key under mcpServers.
	Name string
	// Source is where the definition came from.
	Source Source
	// Origin names the file or setting it was read from, for messages.
	Origin string
	// Transport is stdio or http.
	Transport Transport
	// Command and Args are the program to run (stdio).
	Command string
	Args    []string
	// Env holds the variables the definition sets (stdio); they are added
	// to the clean environment the Manager is given.
	Env map[string]string
	// Cwd is the working directory (stdio); empty or relative ones are
	// resolved against the Manager's Dir.
	Cwd string
	// URL and Headers address an http server.
	URL     string
	Headers map[string]string
	// Unsandboxed: the definition opts out of the sandbox ("sandbox":
	// false): a stdio server then runs with the user's rights.
	Unsandboxed bool
	// Unexpanded lists the ${...} references left literal because the
	// definition comes from a project (Source is SourceProject).
	Unexpanded []string
}

// Config is the result of parsing one file or setting.
type Config struct {
	// Servers are the definitions, sorted by name.
	Servers []Definition
	// Warnings are things to tell the user that do not stop the servers:
	// unset variables, references left literal in project definitions.
	Warnings []string
}

// rawServer is the JSON shape of one server. Unknown fields are ignored:
// other agents' files carry their own (timeout, disabled, alwaysAllow).
type rawServer struct {
	Type    string          `json:"type"`
	Command json.RawMessage `json:"command"`
	Args    json.RawMessage `json:"args"`
	Env     json.RawMessage `json:"env"`
	Cwd     json.RawMessage `json:"cwd"`
	URL     json.RawMessage `json:"url"`
	Headers json.RawMessage `json:"headers"`
	Sandbox *bool           `json:"sandbox"`
}

// Parse reads the {"mcpServers": {NAME: {...}}} shape (Claude Code's
// .mcp.json). origin names the file or setting in errors and warnings.
// getenv resolves ${VAR} and ${VAR:-default} in env values, args, url and
// headers for every source but SourceProject, whose references stay literal
// and are reported; a nil getenv resolves nothing (unset). An empty document
// or one without mcpServers has no servers.
func Parse(data []byte, origin string, source Source, getenv func(string) (string, bool)) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Config{}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", origin, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return &Config{}, nil
	}
	return ParseServers(raw, origin, source, getenv)
}

// ParseServers reads the object under mcpServers ({NAME: {...}}), as the
// editors' initializationOptions.mcpServers gives it. See Parse.
func ParseServers(data []byte, origin string, source Source, getenv func(string) (string, bool)) (*Config, error) {
	if rank(source) == 0 {
		return nil, fmt.Errorf("%s: unknown source %q", origin, source)
	}
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return &Config{}, nil
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(data, &servers); err != nil {
		return nil, fmt.Errorf("%s: mcpServers must be an object of servers by name: %w", origin, err)
	}
	cfg := &Config{}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := &parser{origin: origin, name: name, source: source, getenv: getenv}
		def, err := p.parse(servers[name])
		if err != nil {
			return nil, err
		}
		cfg.Servers = append(cfg.Servers, def)
		cfg.Warnings = append(cfg.Warnings, p.warnings...)
	}
	return cfg, nil
}

// parser reads one server's definition.
type parser struct {
	origin, name string
	source       Source
	getenv       func(string) (string, bool)
	unexpanded   []string
	warnings     []string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: server %q: %s", p.origin, p.name, fmt.Sprintf(format, args...))
}

// parse decodes one server's definition, checks that its fields fit its
// transport, and expands variables where its source allows.
func (p *parser) parse(data json.RawMessage) (Definition, error) {
	def := Definition{Name: p.name, Source: p.source, Origin: p.origin}
	if strings.TrimSpace(p.name) == "" {
		return def, fmt.Errorf("%s: a server has an empty name", p.origin)
	}
	var raw rawServer
	if err := json.Unmarshal(data, &raw); err != nil {
		return def, p.errorf("must be an object with command or url: %v", err)
	}
	def.Unsandboxed = raw.Sandbox != nil && !*raw.Sandbox
	var err error
	if def.Command, err = p.str("command", raw.Command); err != nil {
		return def, err
	}
	urlText, err := p.str("url", raw.URL)
	if err != nil {
		return def, err
	}
	if def.Transport, err = p.transport(raw.Type, def.Command, urlText); err != nil {
		return def, err
	}
	if def.Transport == TransportStdio {
		err = p.stdio(&def, raw, urlText)
	} else {
		err = p.http(&def, raw, urlText)
	}
	if err != nil {
		return def, err
	}
	sort.Strings(p.unexpanded)
	def.Unexpanded = compact(p.unexpanded)
	if len(def.Unexpanded) > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("%s: server %q: %s left as written: variables are not expanded in a project's definitions",
			p.origin, p.name, strings.Join(def.Unexpanded, ", ")))
	}
	return def, nil
}

// transport is the transport a definition's type names; without a type, a
// definition with only a url is HTTP.
func (p *parser) transport(typ, command, urlText string) (Transport, error) {
	switch typ {
	case "", "stdio":
		if command == "" && urlText != "" && typ == "" {
			return TransportHTTP, nil
		}
		return TransportStdio, nil
	case "http", "streamable-http", "streamableHttp":
		return TransportHTTP, nil
	case "sse":
		return "", p.errorf(`type "sse" (the deprecated HTTP+SSE transport) is not supported; use "http"`)
	default:
		return "", p.errorf("unknown type %q (want stdio or http)", typ)
	}
}

// stdio fills def's command line, environment and folder from raw: a stdio
// server has a command and no url or headers.
func (p *parser) stdio(def *Definition, raw rawServer, urlText string) error {
	if def.Command == "" {
		return p.errorf("a stdio server needs a command")
	}
	if urlText != "" || len(raw.Headers) > 0 {
		return p.errorf("a stdio server has no url or headers")
	}
	var err error
	if def.Args, err = p.strs("args", raw.Args); err != nil {
		return err
	}
	if def.Env, err = p.strMap("env", raw.Env); err != nil {
		return err
	}
	if def.Cwd, err = p.str("cwd", raw.Cwd); err != nil {
		return err
	}
	for i, a := range def.Args {
		def.Args[i] = p.expand(a)
	}
	for k, v := range def.Env {
		def.Env[k] = p.expand(v)
	}
	return nil
}

// http fills def's URL and headers from raw: an HTTP server has an http(s)
// url (checked once expanded, or as written when a project's definition
// keeps its variables) and no command, args or env.
func (p *parser) http(def *Definition, raw rawServer, urlText string) error {
	if def.Command != "" || len(raw.Args) > 0 || len(raw.Env) > 0 {
		return p.errorf("an http server has no command, args or env")
	}
	if urlText == "" {
		return p.errorf("an http server needs a url")
	}
	def.URL = p.expand(urlText)
	if p.source != SourceProject || !strings.Contains(def.URL, "${") {
		u, err := url.Parse(def.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p.errorf("url %q is not an http(s) URL", def.URL)
		}
	}
	var err error
	if def.Headers, err = p.strMap("headers", raw.Headers); err != nil {
		return err
	}
	for k, v := range def.Headers {
		def.Headers[k] = p.expand(v)
	}
	return nil
}

// str decodes an optional string field.
func (p *parser) str(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", p.errorf("%s must be a string", field)
	}
	return s, nil
}

// strs decodes an optional array of strings.
func (p *parser) strs(field string, raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s []string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, p.errorf("%s must be an array of strings", field)
	}
	return s, nil
}

// strMap decodes an optional object of strings.
func (p *parser) strMap(field string, raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, p.errorf("%s must be an object of strings", field)
	}
	for k := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, p.errorf("%s has an invalid name %q", field, k)
		}
	}
	return m, nil
}

// expand resolves ${VAR} and ${VAR:-default} in s (the default when VAR is
// unset or empty), or, for a project definition, records the references and
// returns s unchanged. An unset variable without a default becomes empty,
// with a warning. A "${" without its "}" is left as written.
func (p *parser) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		ref := rest[i : i+j+1]
		b.WriteString(rest[:i])
		rest = rest[i+j+1:]
		name, def, hasDefault := strings.Cut(ref[2:len(ref)-1], ":-")
		if p.source == SourceProject {
			p.unexpanded = append(p.unexpanded, ref)
			b.WriteString(ref)
			continue
		}
		var v string
		ok := false
		if p.getenv != nil {
			v, ok = p.getenv(name)
		}
		switch {
		case ok && (v != "" || !hasDefault):
			b.WriteString(v)
		case hasDefault:
			b.WriteString(def)
		default:
			p.warnings = append(p.warnings, fmt.Sprintf("%s: server %q: ${%s} is not set", p.origin, p.name, name))
		}
	}
	return b.String()
}

func compact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Merge combines definitions from several sources into one per name. For the
// same name the higher source wins: acp > editor > flag > user > project (the
// client's own definitions over a file named on the command line over the
// user's file over the repository's). Within one source the later definition
// wins. The result is sorted by name.
func Merge(lists ...[]Definition) []Definition {
	byName := map[string]Definition{}
	for _, list := range lists {
		for _, d := range list {
			if old, ok := byName[d.Name]; ok && rank(old.Source) > rank(d.Source) {
				continue
			}
			byName[d.Name] = d
		}
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Hash identifies what a definition runs: it changes when the transport,
// command, args, env, cwd, url or headers change, and not with the name,
// source or origin. Approvals are remembered by it (with the name and the
// project), so an edited definition must be approved again.
func (d Definition) Hash() string {
	canon := struct {
		Transport Transport         `json:"transport"`
		Command   string            `json:"command"`
		Args      []string          `json:"args"`
		Env       map[string]string `json:"env"` // encoding/json sorts map keys
		Cwd       string            `json:"cwd"`
		URL       string            `json:"url"`
		Headers   map[string]string `json:"headers"`
		Unbound   bool              `json:"unsandboxed,omitempty"`
	}{d.Transport, d.Command, d.Args, d.Env, d.Cwd, d.URL, d.Headers, d.Unsandboxed}
	if canon.Args == nil {
		canon.Args = []string{}
	}
	data, err := json.Marshal(canon)
	if err != nil {
		panic(fmt.Sprintf("mcp: hashing a definition: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Ref names exactly this definition, as an --allow-mcp value approves it:
// NAME@HASH.
func (d Definition) Ref() string { return d.Name + "@" + d.Hash() }

// Allowed reports whether an allow list (--allow-mcp, mcp.allow) approves
// d. NAME@HASH approves exactly that definition, from any source. A bare
// NAME, or *, approves only a definition the user made (their file, the
// editor's setting, a --mcp-config file, an ACP client's), never a
// repository's: a repository can redefine any name, so what the user
// approved must be the definition itself.
func Allowed(allow []string, d Definition) bool {
	for _, a := range allow {
		name, hash, pinned := cutRef(a)
		switch {
		case pinned:
			if name == d.Name && hash == d.Hash() {
				return true
			}
		case d.Source != SourceProject && (a == d.Name || a == "*"):
			return true
		}
	}
	return false
}

// NamedOnly reports whether allow names d by its name alone (or *) while
// Allowed refuses it: a repository's definition the user meant to allow
// the way earlier versions did.
func NamedOnly(allow []string, d Definition) bool {
	return d.Source == SourceProject && (slices.Contains(allow, d.Name) || slices.Contains(allow, "*"))
}

// cutRef splits NAME@HASH, where HASH is Hash's 64 hexadecimal digits;
// pinned is false for anything else (a bare name).
func cutRef(a string) (name, hash string, pinned bool) {
	i := strings.LastIndexByte(a, '@')
	if i < 0 || len(a)-i-1 != sha256.Size*2 {
		return "", "", false
	}
	hash = strings.ToLower(a[i+1:])
	if _, err := hex.DecodeString(hash); err != nil {
		return "", "", false
	}
	return a[:i], hash, true
}

// Summary describes a definition for an approval prompt or a status line:
// the command and its arguments (or the URL), the names of the variables it
// sets (never their values), the names of the headers and the working
// directory.
func (d Definition) Summary() string {
	var b strings.Builder
	if d.Transport == TransportHTTP {
		fmt.Fprintf(&b, "%s (http)", d.URL)
		if len(d.Headers) > 0 {
			fmt.Fprintf(&b, "; headers: %s", strings.Join(sortedKeys(d.Headers), ", "))
		}
		return b.String()
	}
	b.WriteString(quoteArg(d.Command))
	for _, a := range d.Args {
		b.WriteByte(' ')
		b.WriteString(quoteArg(a))
	}
	if len(d.Env) > 0 {
		fmt.Fprintf(&b, "; sets %s", strings.Join(sortedKeys(d.Env), ", "))
	}
	if d.Cwd != "" {
		fmt.Fprintf(&b, "; in %s", d.Cwd)
	}
	return b.String()
}

func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
