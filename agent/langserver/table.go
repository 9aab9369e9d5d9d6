// Package langserver runs the language servers agent-lsp starts itself,
// as an LSP client (go.lsp.dev/jsonrpc2 for the connection, LSP's shapes
// for the messages), when no editor gives the agent language features: a
// headless run, an ACP client, or an editor without the
// experimental.language capability. Its Manager implements tools.Language.
//
// A server comes from the table of known servers by project type (found
// on PATH) or from the user's settings (languageServers), never from the
// repository's files. It starts at the first question about its project,
// one per project, under the sandbox policy of the project's build and
// test with the network off, and with the permission that test needs; it
// stops when idle, and after it dies the next question restarts it, with
// a growing delay between attempts. Everything it sends is bounded: frame
// size, diagnostics per file, files, and the time any answer may take.
package langserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Spec is how to start one language server.
type Spec struct {
	Name        string          `json:"-"` // shown to the user, e.g. "gopls"
	Command     string          `json:"command"`
	Args        []string        `json:"args,omitempty"`
	InitOptions json.RawMessage `json:"initializationOptions,omitempty"`
	// Extensions are the file extensions it serves (".go"); empty: all.
	Extensions []string `json:"extensions,omitempty"`
	// Caches are folders of the user's cache directory it writes to (its
	// own cache), besides the build caches of the project's type.
	Caches []string `json:"-"`
	// FromSettings: the user's languageServers setting named it.
	FromSettings bool `json:"-"`
	// Pull names how to ask the server for a file's diagnostics of its
	// current text, for a server whose pushed diagnostics name no version:
	// "tsserver" (typescript-language-server's tsserverRequest). "": pushed,
	// or LSP's textDocument/diagnostic when the server has it.
	Pull string `json:"-"`
}

// known is one row of the table of servers agent-lsp knows.
type known struct {
	types   []string // project types (workspace.Type)
	markers []string // files at a project's root that call for it when its type is unknown
	specs   []Spec   // candidates, the first found on PATH wins
}

var (
	tsExtensions = []string{".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"}
	cExtensions  = []string{".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm"}
)

// table is every language server agent-lsp knows, by project type.
var table = []known{
	{types: []string{"go"}, specs: []Spec{{Name: "gopls", Command: "gopls", Extensions: []string{".go", ".mod", ".sum", ".work"}, Caches: []string{"gopls"}}}},
	{types: []string{"typescript", "javascript"}, specs: []Spec{{Name: "typescript-language-server", Command: "typescript-language-server", Args: []string{"--stdio"}, Extensions: tsExtensions, Pull: "tsserver",
		InitOptions: json.RawMessage(`{"disableAutomaticTypingAcquisition": true}`)}}}, // typings come from npm: no network
	{types: []string{"python"}, specs: []Spec{
		{Name: "basedpyright", Command: "basedpyright-langserver", Args: []string{"--stdio"}, Extensions: []string{".py", ".pyi"}},
		{Name: "pyright", Command: "pyright-langserver", Args: []string{"--stdio"}, Extensions: []string{".py", ".pyi"}},
	}},
	{types: []string{"rust"}, specs: []Spec{{Name: "rust-analyzer", Command: "rust-analyzer", Extensions: []string{".rs"}}}},
	{types: []string{"c", "cpp"}, markers: []string{"compile_commands.json", "compile_flags.txt", "CMakeLists.txt", "meson.build"},
		specs: []Spec{{Name: "clangd", Command: "clangd", Extensions: cExtensions}}},
}

// Settings are the user's languageServers setting: a Spec per project type
// ("go", "typescript", …, or "c" for C and C++); a nil Spec turns that
// type's server off, and "*": null turns off every server the setting does
// not name.
type Settings map[string]*Spec

// ParseSettings reads the languageServers setting: {TYPE: {command, args,
// initializationOptions, extensions} | null}.
func ParseSettings(raw json.RawMessage) (Settings, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("languageServers must be an object {projectType: {command, args, initializationOptions} | null}")
	}
	out := Settings{}
	for typ, v := range m {
		if string(v) == "null" || string(v) == "false" {
			out[typ] = nil
			continue
		}
		var s Spec
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("languageServers.%s: %v (fields: command, args, initializationOptions, extensions)", typ, err)
		}
		if strings.TrimSpace(s.Command) == "" {
			return nil, fmt.Errorf("languageServers.%s: command is empty", typ)
		}
		if typ == "*" {
			return nil, fmt.Errorf("languageServers.*: only null (turn off the servers the setting does not name)")
		}
		s.Name, s.FromSettings = filepath.Base(s.Command), true
		if len(s.InitOptions) > 0 && !json.Valid(s.InitOptions) {
			return nil, fmt.Errorf("languageServers.%s: initializationOptions is not JSON", typ)
		}
		out[typ] = &s
	}
	return out, nil
}

// Candidate is a server a project would get, as doctor lists it.
type Candidate struct {
	Type    string `json:"type"`    // the project type it is for
	Name    string `json:"name"`    // e.g. gopls
	Command string `json:"command"` // the command line
	Path    string `json:"path,omitempty"`
	Source  string `json:"source"` // "settings" or "built-in"
	Found   bool   `json:"found"`  // the program is on PATH (or the path exists)
	Note    string `json:"note,omitempty"`
}

// choose picks the server for a project of type typ at root: the
// settings' server for the type, else the first known one found on PATH.
// It returns the spec and the program's path, or why there is none.
func choose(st Settings, typ, root string, look func(string) string) (Spec, string, error) {
	if typ == "" || typ == "unknown" {
		typ = markerType(root)
	}
	if s, ok := st[typ]; ok {
		if s == nil {
			return Spec{}, "", noServer("language servers for %s projects are turned off (the languageServers setting)", typ)
		}
		path := look(s.Command)
		if path == "" {
			return Spec{}, "", noServer("%s, the language server the languageServers setting names for %s projects, is not found", s.Command, typ)
		}
		return *s, path, nil
	}
	if s, ok := st["*"]; ok && s == nil {
		return Spec{}, "", noServer("agent-lsp starts no language server for %s projects (languageServers turns them off)", typ)
	}
	for _, k := range table {
		if !slices.Contains(k.types, typ) {
			continue
		}
		var names []string
		for _, s := range k.specs {
			if path := look(s.Command); path != "" {
				return s, path, nil
			}
			names = append(names, s.Command)
		}
		return Spec{}, "", noServer("no language server for %s projects: %s not found on PATH (install it, or name a server in the languageServers setting)", typ, strings.Join(names, " or "))
	}
	if typ == "" || typ == "unknown" {
		return Spec{}, "", noServer("no language server: the project's type is unknown (name one in the languageServers setting)")
	}
	return Spec{}, "", noServer("no language server is known for %s projects (name one in the languageServers setting)", typ)
}

// markerType is the type a project of unknown type gets from the files at
// its root that call for a server ("c"), else "unknown".
func markerType(root string) string {
	for _, k := range table {
		for _, m := range k.markers {
			if fi, err := os.Lstat(filepath.Join(root, m)); err == nil && fi.Mode().IsRegular() {
				return k.types[0]
			}
		}
	}
	return "unknown"
}

// Candidates lists the servers a project of type typ at root would get,
// as doctor shows them: the one chosen, or every known candidate with why
// none is used. It starts nothing.
func Candidates(st Settings, typ, root string, look func(string) string) []Candidate {
	spec, path, err := choose(st, typ, root, look)
	if err == nil {
		return []Candidate{candidate(typ, spec, path, "")}
	}
	var out []Candidate
	if typ == "" || typ == "unknown" {
		typ = markerType(root)
	}
	for _, k := range table {
		if slices.Contains(k.types, typ) {
			for _, s := range k.specs {
				out = append(out, candidate(typ, s, "", err.Error()))
			}
		}
	}
	if s, ok := st[typ]; ok && s != nil {
		out = []Candidate{candidate(typ, *s, "", err.Error())}
	}
	if len(out) == 0 {
		out = []Candidate{{Type: typ, Source: "none", Note: err.Error()}}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Found && !out[j].Found })
	return out
}

func candidate(typ string, s Spec, path, note string) Candidate {
	src := "built-in"
	if s.FromSettings {
		src = "settings"
	}
	return Candidate{Type: typ, Name: s.Name, Command: strings.Join(append([]string{s.Command}, s.Args...), " "), Path: path, Source: src, Found: path != "", Note: note}
}

// LookPath finds a program in the PATH of env (the environment servers
// run with), as a shell would: "" when it is not there. A name with a
// slash is taken as a path.
func LookPath(name string, env []string) string {
	executable := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	}
	if strings.ContainsRune(name, '/') {
		if executable(name) {
			return name
		}
		return ""
	}
	path := ""
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			path = v
			break
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the current directory: the repository's own programs
		}
		if p := filepath.Join(dir, name); executable(p) {
			return p
		}
	}
	return ""
}
