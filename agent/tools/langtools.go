package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// Bounds of the symbol tools' answers.
const (
	maxLocations   = 60   // locations listed
	maxContextLine = 200  // bytes of a location's line of context
	maxHover       = 4000 // bytes of a hover's text
	maxSymbols     = 200  // symbols of an outline or a search
)

const symbolArgs = `"symbol": {"type": "string", "description": "Its name, e.g. Greet or Server.Handle."},
		"path": {"type": "string", "description": "A file that defines or uses it."},
		"line": {"type": "integer", "description": "Its line in that file (1-based), if the name occurs more than once."},
		` + projectArg

// symbolTool makes a tool that asks the language server about a symbol at
// its place in a file: definition, references, implementations, hover.
func symbolTool(name, method, description string) Tool {
	return Tool{
		Name:        name,
		Description: description,
		Schema:      json.RawMessage(`{"type": "object", "properties": {` + symbolArgs + `}, "required": ["symbol", "path"]}`),
		Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
			var a struct {
				Symbol, Path, Project string
				Line                  int
			}
			if err := decode(args, &a); err != nil {
				return Result{}, err
			}
			p, abs, err := env.resolve(a.Project, a.Path)
			if err != nil {
				return errorf("%v", err)
			}
			if env.Lang == nil || env.Lang.Source == nil {
				return noServer(name)
			}
			q := env.query(p, false, abs)
			text, err := q.Read(ctx, abs)
			if err != nil {
				return errorf("read %s: %v", a.Path, cleanErr(err, p.Root()))
			}
			off, how, err := locate(ctx, env.Lang.Source, q, abs, text, a.Symbol, a.Line)
			if err != nil {
				return langError(name, err)
			}
			raw, err := env.Lang.Source.Ask(ctx, q, LangRequest{Method: method, Path: abs, Offset: off})
			if err != nil {
				return langError(name, err)
			}
			at := fmt.Sprintf("%s at %s:%d (%s)", a.Symbol, p.Rel(abs), strings.Count(text[:off], "\n")+1, how)
			if method == MethodHover {
				return hoverResult(at, raw)
			}
			return env.locationsResult(ctx, p, name, at, raw)
		},
	}
}

var (
	definitionTool = symbolTool("definition", MethodDefinition,
		"Find where a symbol is defined (language server). Answers path:line with the line's text.")
	referencesTool = symbolTool("references", MethodReferences,
		"Find the references to a symbol in the project (language server). Answers path:line with each line's text.")
	implementationsTool = symbolTool("implementations", MethodImplementation,
		"Find the implementations of an interface or method (language server). Answers path:line with each line's text.")
	hoverTool = symbolTool("hover", MethodHover,
		"Show a symbol's type and documentation (language server), as an editor's hover.")
)

var symbolsTool = Tool{
	Name:        "symbols",
	Description: "List symbols (language server): a file's outline (path), or the project's symbols matching a name (query).",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "A file whose outline to list."},
		"query": {"type": "string", "description": "A name, or part of one, to search for."},
		` + projectArg + `}}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Path, Query, Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		if (a.Path == "") == (a.Query == "") {
			return errorf("give path (a file's outline) or query (a search of the project's symbols)")
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		if env.Lang == nil || env.Lang.Source == nil {
			return noServer("symbols")
		}
		if a.Query != "" {
			raw, err := env.Lang.Source.Ask(ctx, env.query(p, false), LangRequest{Method: MethodWorkspaceSym, Query: a.Query})
			if err != nil {
				return langError("symbols", err)
			}
			return env.workspaceSymbols(ctx, p, a.Query, raw)
		}
		abs, err := p.Resolve(a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		q := env.query(p, false, abs)
		text, err := q.Read(ctx, abs)
		if err != nil {
			return errorf("read %s: %v", a.Path, cleanErr(err, p.Root()))
		}
		raw, err := env.Lang.Source.Ask(ctx, q, LangRequest{Method: MethodDocumentSymbol, Path: abs})
		if err != nil {
			return langError("symbols", err)
		}
		return outline(p.Rel(abs), text, raw)
	},
}

var diagnosticsTool = Tool{
	Name:        "diagnostics",
	Description: "List the errors and warnings a language server reports now, in the project or one file (edits already report their file's errors).",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "Only this file, checked as it is now."},
		"severity": {"type": "string", "enum": ["error", "warning", "info", "hint"], "description": "The least severity listed (default warning)."},
		` + projectArg + `}}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Path, Severity, Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		least := SeverityWarning
		if a.Severity != "" {
			least = 0
			for n, s := range severityNames {
				if s == a.Severity {
					least = n
				}
			}
			if least == 0 {
				return errorf("severity must be error, warning, info or hint, not %q", a.Severity)
			}
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		var files []string
		if a.Path != "" {
			abs, err := p.Resolve(a.Path)
			if err != nil {
				return errorf("%v", err)
			}
			files = []string{abs}
		}
		if env.Lang == nil || env.Lang.Source == nil {
			return noServer("diagnostics")
		}
		rep, err := env.Lang.Source.Diagnostics(ctx, env.query(p, len(files) > 0, files...))
		if err != nil {
			return langError("diagnostics", err)
		}
		if len(files) == 0 {
			if env.Lang.Seen != nil {
				env.Lang.Seen.record(p, rep)
			}
			env.noteDiagnostics(p, rep)
		}
		return renderDiagnostics(p, rep, files, least), nil
	},
}

// renderDiagnostics lists rep's diagnostics of at least severity least (of
// files only, when given), errors first, bounded.
func renderDiagnostics(p *workspace.Project, rep LangReport, only []string, least int) Result {
	var lines []string
	count := map[int]int{}
	nfiles := 0
	for _, f := range sortedFiles(p, rep.Files) {
		if len(only) > 0 && f.Path != only[0] {
			continue
		}
		shown := false
		for _, d := range f.Items {
			if d.severity() > least {
				continue
			}
			count[d.severity()]++
			if !shown {
				nfiles++
				shown = true
			}
			lines = append(lines, d.line(p.Rel(f.Path)))
		}
	}
	where := "project " + p.Name()
	if len(only) > 0 {
		where = p.Rel(only[0])
	}
	var b strings.Builder
	switch {
	case len(lines) == 0 && !rep.Settled:
		fmt.Fprintf(&b, "%s; it shows no problems of severity %s or worse there, which may only mean it has not checked yet", unsettled(rep, where), severityNames[least])
	case len(lines) == 0:
		fmt.Fprintf(&b, "no problems of severity %s or worse in %s (from %s)", severityNames[least], where, rep.Server)
	default:
		var parts []string
		for sev := SeverityError; sev <= least; sev++ {
			if n := count[sev]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, noun(n, severityNames[sev], severityNames[sev]+"s")))
			}
		}
		fmt.Fprintf(&b, "%s in %d %s of %s, from %s (%s):", strings.Join(parts, ", "), nfiles, noun(nfiles, "file", "files"), where, rep.Server, dataLabel)
		sortBySeverity(lines)
		for i, l := range lines {
			if i == maxListedDiagnostics*3 {
				fmt.Fprintf(&b, "\n… and %d more", len(lines)-i)
				break
			}
			b.WriteString("\n" + l)
		}
	}
	if !rep.Settled && len(lines) > 0 {
		fmt.Fprintf(&b, "\n(%s: this may be out of date)", unsettled(rep, where))
	}
	return Result{Content: b.String(), Summary: fmt.Sprintf("diagnostics: %d errors", count[SeverityError])}
}

// sortBySeverity puts error lines first, keeping the order otherwise.
func sortBySeverity(lines []string) {
	rank := func(l string) int {
		for sev := SeverityError; sev <= SeverityHint; sev++ {
			if strings.Contains(l, ": "+severityNames[sev]+": ") {
				return sev
			}
		}
		return SeverityHint
	}
	ranked := make([][]string, SeverityHint+1)
	for _, l := range lines {
		r := rank(l)
		ranked[r] = append(ranked[r], l)
	}
	lines = lines[:0]
	for _, r := range ranked {
		lines = append(lines, r...)
	}
}

func noServer(tool string) (Result, error) {
	return errorf("%s: no language server answers here (no editor's, and agent-lsp starts none for this run)", tool)
}

// langError is the one-line result of a source that could not answer.
func langError(tool string, err error) (Result, error) {
	var none *NoServerError
	if errors.As(err, &none) {
		return Result{Content: tool + ": " + none.Reason, IsError: true, Summary: "no language server"}, nil
	}
	return errorf("%s: %s", tool, dataLine(err.Error(), 500))
}

// locate finds the byte offset of symbol in a file: through the file's
// document symbols, else its occurrence as a word in the text (on line, when
// given, else the first). how says which.
func locate(ctx context.Context, src Language, q LangQuery, abs, text, symbol string, line int) (off int, how string, err error) {
	symbol = strings.TrimSpace(symbol)
	if symbol == "" {
		return 0, "", errors.New("symbol is empty")
	}
	if raw, err := src.Ask(ctx, q, LangRequest{Method: MethodDocumentSymbol, Path: abs}); err == nil {
		enc := src.Encoding(q.Project)
		best, found := -1, false
		for _, s := range flatSymbols(raw) {
			if !symbolMatches(s, symbol) {
				continue
			}
			l := int(s.at.Line) + 1
			if !found || (line > 0 && abs1(l-line) < abs1(best-line)) {
				off, best, found = workspace.Offset(text, s.at, enc), l, true
			}
		}
		if found {
			return off, "its declaration", nil
		}
	} else {
		var none *NoServerError
		if errors.As(err, &none) {
			return 0, "", err
		}
	}
	name := symbol
	if i := strings.LastIndexAny(name, ".:"); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	re, err := regexp.Compile(`(^|[^\pL\pN_$])` + regexp.QuoteMeta(name) + `($|[^\pL\pN_$])`)
	if err != nil {
		return 0, "", err
	}
	bestOff, bestLine := -1, 0
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		at := m[3] // the end of the leading group: the name's start
		l := strings.Count(text[:at], "\n") + 1
		if bestOff < 0 || (line > 0 && abs1(l-line) < abs1(bestLine-line)) {
			bestOff, bestLine = at, l
		}
		if line <= 0 || l == line {
			break
		}
	}
	if bestOff < 0 {
		return 0, "", fmt.Errorf("%s does not occur in %s (neither among its symbols nor in its text)", dataLine(symbol, 100), q.Project.Rel(abs))
	}
	return bestOff, "its occurrence in the text", nil
}

func abs1(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// symbol is one entry of an outline or a search, flattened.
type symbol struct {
	name, container string
	kind            int
	at              workspace.Position // where its name starts
	path            string             // a search result's file ("" in an outline)
	depth           int
}

// lspSymbol reads DocumentSymbol, SymbolInformation and WorkspaceSymbol alike.
type lspSymbol struct {
	Name           string          `json:"name"`
	Kind           int             `json:"kind"`
	ContainerName  string          `json:"containerName"`
	Range          workspace.Range `json:"range"`
	SelectionRange workspace.Range `json:"selectionRange"`
	Location       struct {
		URI   string           `json:"uri"`
		Range *workspace.Range `json:"range"`
	} `json:"location"`
	Children []lspSymbol `json:"children"`
}

// flatSymbols reads an outline or search result, depth first, bounded.
func flatSymbols(raw json.RawMessage) []symbol {
	var list []lspSymbol
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []symbol
	var walk func(ss []lspSymbol, parent string, depth int)
	walk = func(ss []lspSymbol, parent string, depth int) {
		for _, s := range ss {
			if len(out) >= maxSymbols*5 || depth > 20 {
				return
			}
			sym := symbol{name: s.Name, container: s.ContainerName, kind: s.Kind, depth: depth, path: s.Location.URI}
			switch {
			case s.Location.URI != "" && s.Location.Range != nil:
				sym.at = s.Location.Range.Start
			case s.SelectionRange != (workspace.Range{}):
				sym.at = s.SelectionRange.Start
			default:
				sym.at = s.Range.Start
			}
			if parent != "" {
				sym.container = parent
			}
			out = append(out, sym)
			walk(s.Children, s.Name, depth+1)
		}
	}
	walk(list, "", 0)
	return out
}

// symbolMatches: the symbol's name, or its name qualified by its container
// ("Server.Handle"), with a Go method's receiver written either way.
func symbolMatches(s symbol, want string) bool {
	norm := func(n string) string { return strings.NewReplacer("(", "", ")", "", "*", "").Replace(n) }
	name, w := norm(s.name), norm(want)
	if name == w {
		return true
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 && name[i+1:] == w {
		return true
	}
	return s.container != "" && norm(s.container)+"."+name == w
}

var kindNames = map[int]string{1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property", 8: "field",
	9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable", 14: "constant", 15: "string", 16: "number",
	17: "boolean", 18: "array", 19: "object", 20: "key", 21: "null", 22: "enum member", 23: "struct", 24: "event", 25: "operator", 26: "type parameter"}

// outline renders a file's document symbols.
func outline(rel, text string, raw json.RawMessage) (Result, error) {
	syms := flatSymbols(raw)
	if len(syms) == 0 {
		return Result{Content: "no symbols in " + rel, Summary: "outline of " + rel}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "symbols of %s (%s):", rel, dataLabel)
	for i, s := range syms {
		if i == maxSymbols {
			fmt.Fprintf(&b, "\n… and %d more", len(syms)-i)
			break
		}
		fmt.Fprintf(&b, "\n%d: %s%s %s", s.at.Line+1, strings.Repeat("  ", s.depth), kindNames[s.kind], dataLine(s.name, 120))
	}
	return Result{Content: b.String(), Summary: "outline of " + rel}, nil
}

// workspaceSymbols renders a symbol search's answer: path:line kind name.
func (e *Env) workspaceSymbols(ctx context.Context, p *workspace.Project, query string, raw json.RawMessage) (Result, error) {
	syms := flatSymbols(raw)
	names := e.outsideNames()
	var lines []string
	dropped := 0
	for _, s := range syms {
		where, _, ok := e.place(p, FilePath(s.path), names)
		if !ok {
			dropped++
			continue
		}
		lines = append(lines, fmt.Sprintf("%s:%d: %s %s", where, s.at.Line+1, kindNames[s.kind], dataLine(s.name, 120)))
	}
	var b strings.Builder
	switch {
	case len(lines) == 0:
		fmt.Fprintf(&b, "no symbols match %q", dataLine(query, 100))
	default:
		fmt.Fprintf(&b, "%d %s match %q (%s):", len(lines), noun(len(lines), "symbol", "symbols"), dataLine(query, 100), dataLabel)
		for i, l := range lines {
			if i == maxSymbols {
				fmt.Fprintf(&b, "\n… and %d more", len(lines)-i)
				break
			}
			b.WriteString("\n" + l)
		}
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "\n(%d outside the project and its known library roots left out)", dropped)
	}
	return Result{Content: b.String(), Summary: fmt.Sprintf("symbols %q", query)}, nil
}

// FilePath is the clean path of a file: URI ("" for another scheme or a
// URI that cannot be parsed).
func FilePath(u string) string {
	if !strings.HasPrefix(u, "file:") {
		return ""
	}
	parsed, err := uri.Parse(u)
	if err != nil || !parsed.IsFile() {
		return ""
	}
	return filepath.Clean(parsed.FsPath())
}

// location reads Location and LocationLink alike.
type location struct {
	URI         string           `json:"uri"`
	Range       *workspace.Range `json:"range"`
	TargetURI   string           `json:"targetUri"`
	TargetRange *workspace.Range `json:"targetSelectionRange"`
}

func (l location) place() (string, workspace.Position, bool) {
	switch {
	case l.URI != "" && l.Range != nil:
		return FilePath(l.URI), l.Range.Start, true
	case l.TargetURI != "" && l.TargetRange != nil:
		return FilePath(l.TargetURI), l.TargetRange.Start, true
	}
	return "", workspace.Position{}, false
}

// locations reads a definition, references or implementation result: one
// location, a list, or links.
func locations(raw json.RawMessage) []location {
	var list []location
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one location
	if json.Unmarshal(raw, &one) == nil {
		if _, _, ok := one.place(); ok {
			return []location{one}
		}
	}
	return nil
}

// locationsResult renders locations as path:line: text, bounded. A location
// inside a project of the workspace is read there for its line; one under a
// known library root is named relative to it and never read; others are
// dropped.
func (e *Env) locationsResult(ctx context.Context, p *workspace.Project, tool, at string, raw json.RawMessage) (Result, error) {
	locs := locations(raw)
	names := e.outsideNames()
	lines := map[string][]string{} // file -> its lines, read once
	var out []string
	dropped := 0
	seen := map[string]bool{}
	for _, l := range locs {
		path, pos, ok := l.place()
		if !ok {
			continue
		}
		where, in, ok := e.place(p, path, names)
		if !ok {
			dropped++
			continue
		}
		entry := fmt.Sprintf("%s:%d", where, pos.Line+1)
		if seen[entry] {
			continue
		}
		seen[entry] = true
		if in != nil && len(out) < maxLocations {
			if _, ok := lines[path]; !ok {
				b, err := e.readFile(ctx, in, path, workspace.MaxReadSize)
				if err == nil {
					lines[path] = strings.Split(string(b), "\n")
				} else {
					lines[path] = nil
				}
			}
			if ls := lines[path]; int(pos.Line) < len(ls) {
				entry += ": " + dataLine(ls[pos.Line], maxContextLine)
			}
		}
		out = append(out, entry)
	}
	var b strings.Builder
	switch {
	case len(out) == 0:
		fmt.Fprintf(&b, "%s: nothing found for %s", tool, at)
	default:
		fmt.Fprintf(&b, "%s of %s: %d %s (%s):", tool, at, len(out), noun(len(out), "location", "locations"), dataLabel)
		for i, o := range out {
			if i == maxLocations {
				fmt.Fprintf(&b, "\n… and %d more", len(out)-i)
				break
			}
			b.WriteString("\n" + o)
		}
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "\n(%d outside the project and its known library roots left out)", dropped)
	}
	return Result{Content: b.String(), Summary: fmt.Sprintf("%s: %d", tool, len(out))}, nil
}

// place names path for the model: relative to p, or "[other] rel" in
// another project of the workspace (in is the project to read it in), or
// relative to a known library root (never read: in is nil). ok is false
// for any other path.
func (e *Env) place(p *workspace.Project, path string, outside []outsideRoot) (name string, in *workspace.Project, ok bool) {
	if path == "" || !filepath.IsAbs(path) {
		return "", nil, false
	}
	if q, found := e.Workspace.ProjectFor(path); found {
		if _, err := q.Resolve(path); err == nil {
			if q == p {
				return q.Rel(path), q, true
			}
			return "[" + q.Name() + "] " + q.Rel(path), q, true
		}
	}
	for _, r := range outside {
		if rel, ok := r.name(path); ok {
			return rel, nil, true
		}
	}
	return "", nil, false
}

// outsideRoot is a library root locations outside the projects are named
// relative to: GOROOT, the Go module cache, or a folder name such as
// node_modules.
type outsideRoot struct {
	label string // e.g. "GOROOT"
	dir   string // an absolute folder; "" for a folder name
	base  string // a folder name, any level: node_modules, site-packages
}

func (r outsideRoot) name(path string) (string, bool) {
	if r.dir != "" {
		rel, err := filepath.Rel(r.dir, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		if r.label == "" {
			return filepath.ToSlash(rel), true
		}
		return r.label + "/" + filepath.ToSlash(rel), true
	}
	sep := string(filepath.Separator)
	i := strings.LastIndex(path, sep+r.base+sep)
	if i < 0 {
		return "", false
	}
	return filepath.ToSlash(path[i+1:]), true
}

// outsideNames are the library roots of this environment: GOROOT and the
// module cache (module@version/…), node_modules, site-packages, and cargo's
// registry.
func (e *Env) outsideNames() []outsideRoot {
	env := e.commandEnv()
	get := func(name string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v
			}
		}
		return ""
	}
	var out []outsideRoot
	goroot := get("GOROOT")
	if goroot == "" {
		if gobin := lookPath("go", env); filepath.IsAbs(gobin) {
			if real, err := filepath.EvalSymlinks(gobin); err == nil {
				goroot = filepath.Dir(filepath.Dir(real))
			}
		}
	}
	if goroot != "" {
		out = append(out, outsideRoot{label: "GOROOT", dir: goroot})
	}
	modcache := get("GOMODCACHE")
	if modcache == "" {
		gopath := strings.Split(get("GOPATH"), string(os.PathListSeparator))[0]
		if gopath == "" && get("HOME") != "" {
			gopath = filepath.Join(get("HOME"), "go")
		}
		if gopath != "" {
			modcache = filepath.Join(gopath, "pkg", "mod")
		}
	}
	if modcache != "" {
		out = append(out, outsideRoot{dir: modcache})
	}
	return append(out, outsideRoot{base: "node_modules"}, outsideRoot{base: "site-packages"}, outsideRoot{base: "registry/src"})
}

// hoverResult renders a hover's contents: a string, MarkedString(s) or
// MarkupContent.
func hoverResult(at string, raw json.RawMessage) (Result, error) {
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(raw, &h) != nil || len(h.Contents) == 0 || string(h.Contents) == "null" {
		return Result{Content: "hover: nothing for " + at, Summary: "hover"}, nil
	}
	text := markedText(h.Contents)
	if strings.TrimSpace(text) == "" {
		return Result{Content: "hover: nothing for " + at, Summary: "hover"}, nil
	}
	return Result{Content: fmt.Sprintf("hover of %s (%s):\n%s", at, dataLabel, Cut(text, maxHover)), Summary: "hover"}, nil
}

func markedText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m struct {
		Value    string `json:"value"`
		Language string `json:"language"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Value != "" {
		if m.Language != "" {
			return "```" + m.Language + "\n" + m.Value + "\n```"
		}
		return m.Value
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var parts []string
		for _, r := range list {
			parts = append(parts, markedText(r))
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
