package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// skipDirs are folders list_files and search never enter.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "vendor": true, "target": true,
	"dist": true, "build": true, "__pycache__": true, ".venv": true, "venv": true, ".idea": true,
	".vscode-test": true, "_build": true, "deps": true, ".next": true, ".cache": true,
}

const projectArg = `"project": {"type": "string", "description": "Name of another project to work in (cross-project work); default: the current project."}`

func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// resolve finds the project and resolves path inside it.
func (e *Env) resolve(projectName, path string) (*workspace.Project, string, error) {
	p, err := e.project(projectName)
	if err != nil {
		return nil, "", err
	}
	abs, err := p.Resolve(path)
	if err != nil {
		return nil, "", err
	}
	return p, abs, nil
}

var readFile = Tool{
	Name:        "read_file",
	Description: "Read a text file of the project, as the editor sees it (unsaved changes included). Lines are numbered from 1; give start_line/end_line to read part of a long file.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "File path relative to the project root."},
		"start_line": {"type": "integer", "description": "First line to read (1-based, default 1)."},
		"end_line": {"type": "integer", "description": "Last line to read (inclusive, default: end of file)."},
		` + projectArg + `}, "required": ["path"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Path      string
			StartLine int `json:"start_line"`
			EndLine   int `json:"end_line"`
			Project   string
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, abs, err := env.resolve(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			if _, open := env.Workspace.Document(abs); !open {
				return errorf("%s is a folder; use list_files", a.Path)
			}
		}
		b, err := env.Workspace.ReadFile(abs)
		if err != nil {
			return errorf("read %s: %v", a.Path, cleanErr(err, p.Root()))
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return errorf("%s is a binary file (%d bytes)", a.Path, len(b))
		}
		lines := strings.SplitAfter(string(b), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		start, end := max(a.StartLine, 1), a.EndLine
		if end <= 0 || end > len(lines) {
			end = len(lines)
		}
		var out strings.Builder
		fmt.Fprintf(&out, "%s (%d lines)\n", p.Rel(abs), len(lines))
		for i := start; i <= end; i++ {
			fmt.Fprintf(&out, "%5d| %s", i, strings.TrimRight(lines[i-1], "\r\n")+"\n")
		}
		return Result{Content: out.String(), Summary: "read " + p.Rel(abs)}, nil
	},
}

// cleanErr removes the project root from an error text.
func cleanErr(err error, root string) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	return strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
}

// globRegexp turns a glob with ** into a regular expression over slash paths.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			re.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			re.WriteString(".*")
			i++
		case c == '*':
			re.WriteString("[^/]*")
		case c == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return regexp.Compile(re.String())
}

// walk visits the project's files below dir, skipping dependency and VCS folders.
func walk(ctx context.Context, root, dir string, fn func(path, rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != dir && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") && d.Name() != ".github") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		return fn(path, filepath.ToSlash(rel), d)
	})
}

const maxListed = 500

var errEnough = errors.New("enough")

var listFiles = Tool{
	Name:        "list_files",
	Description: "List files of the project matching a glob (e.g. \"**/*.go\", \"src/*.ts\"; default all files). Skips .git, node_modules, vendor, target and similar folders. At most 500 paths.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"pattern": {"type": "string", "description": "Glob over paths relative to the project root; ** matches any folders. A pattern without / matches file names anywhere."},
		"path": {"type": "string", "description": "Folder to list below (default: the project root)."},
		` + projectArg + `}}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Pattern, Path, Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		if a.Path == "" {
			a.Path = "."
		}
		p, dir, err := env.resolve(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		pattern := a.Pattern
		if pattern == "" {
			pattern = "**"
		} else if !strings.Contains(pattern, "/") {
			pattern = "**/" + pattern
		}
		re, err := globRegexp(pattern)
		if err != nil {
			return errorf("bad pattern %q: %v", a.Pattern, err)
		}
		var files []string
		more := false
		err = walk(ctx, p.Root(), dir, func(path, rel string, d fs.DirEntry) error {
			if re.MatchString(rel) {
				if len(files) == maxListed {
					more = true
					return errEnough
				}
				files = append(files, rel)
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return Result{}, err
		}
		sort.Strings(files)
		out := strings.Join(files, "\n")
		if len(files) == 0 {
			out = "no files match " + pattern
		}
		if more {
			out += fmt.Sprintf("\n[more than %d files; narrow the pattern]", maxListed)
		}
		return Result{Content: out, Summary: fmt.Sprintf("listed %d files", len(files))}, nil
	},
}

const maxMatches = 100

var search = Tool{
	Name:        "search",
	Description: "Search the project's text files for a regular expression (RE2 syntax). Returns up to 100 matches as file:line: text. Sees unsaved editor changes.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"pattern": {"type": "string", "description": "Regular expression, e.g. \"func \\\\w+Handler\"."},
		"glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. \"**/*.go\"."},
		"case_insensitive": {"type": "boolean"},
		` + projectArg + `}, "required": ["pattern"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Pattern, Glob, Project string
			CaseInsensitive        bool `json:"case_insensitive"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		expr := a.Pattern
		if a.CaseInsensitive {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return errorf("bad regular expression: %v", err)
		}
		var filter *regexp.Regexp
		if a.Glob != "" {
			g := a.Glob
			if !strings.Contains(g, "/") {
				g = "**/" + g
			}
			if filter, err = globRegexp(g); err != nil {
				return errorf("bad glob: %v", err)
			}
		}
		var out strings.Builder
		n := 0
		err = walk(ctx, p.Root(), p.Root(), func(path, rel string, d fs.DirEntry) error {
			if filter != nil && !filter.MatchString(rel) {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > 2<<20 {
				return nil
			}
			b, err := env.Workspace.ReadFile(path)
			if err != nil || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
				return nil
			}
			for i, line := range strings.Split(string(b), "\n") {
				if re.MatchString(line) {
					if n == maxMatches {
						return errEnough
					}
					n++
					fmt.Fprintf(&out, "%s:%d: %s\n", rel, i+1, clip(strings.TrimRight(line, "\r"), 300))
				}
			}
			return nil
		})
		if errors.Is(err, errEnough) {
			fmt.Fprintf(&out, "[stopped at %d matches; narrow the pattern or glob]\n", maxMatches)
		} else if err != nil {
			return Result{}, err
		}
		if n == 0 {
			return Result{Content: "no matches for " + a.Pattern, Summary: "searched " + a.Pattern}, nil
		}
		return Result{Content: out.String(), Summary: fmt.Sprintf("%d matches for %s", n, a.Pattern)}, nil
	},
}
