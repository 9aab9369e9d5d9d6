package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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

// decide finds the project and decides path inside it, for a change of the
// file there (workspace.Project.Decide).
func (e *Env) decide(projectName, path string) (*workspace.Project, workspace.Decision, error) {
	p, err := e.project(projectName)
	if err != nil {
		return nil, workspace.Decision{}, err
	}
	d, err := p.Decide(path)
	if err != nil {
		return nil, workspace.Decision{}, err
	}
	return p, d, nil
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
		rel := p.Rel(abs)
		b, err := env.readFile(ctx, p, abs, workspace.MaxReadSize)
		var big *workspace.FileTooLargeError
		switch {
		case errors.As(err, &big) && (a.StartLine > 0 || a.EndLine > 0):
			return readLineRange(p, abs, rel, big.Size, a.StartLine, a.EndLine)
		case errors.As(err, &big):
			return errorf("%s is %d bytes, over the %d-byte limit for reading a whole file; read it in parts with start_line and end_line", rel, big.Size, big.Max)
		case err != nil:
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
		size := len(rel) + 20
		for _, l := range lines[min(start, end+1)-1 : end] {
			size += len(l) + 8
		}
		out.Grow(size)
		fmt.Fprintf(&out, "%s (%d lines)\n", rel, len(lines))
		for i := start; i <= end; i++ {
			writeNumbered(&out, i, strings.TrimRight(lines[i-1], "\r\n"))
		}
		return Result{Content: out.String(), Summary: "read " + rel}, nil
	},
}

// maxLineLength bounds one line read_file shows; the rest of it is cut.
const maxLineLength = 64 << 10

// writeNumbered writes line n as read_file shows it: the number right-aligned
// in five columns (as %5d), "| ", the line and a newline.
func writeNumbered(out *strings.Builder, n int, line string) {
	var num [20]byte
	d := strconv.AppendInt(num[:0], int64(n), 10)
	for range 5 - len(d) {
		out.WriteByte(' ')
	}
	out.Write(d)
	out.WriteString("| ")
	out.WriteString(line)
	out.WriteByte('\n')
}

// readLineRange streams lines start..end of a file too big to read whole,
// holding at most one line (cut at maxLineLength) in memory.
func readLineRange(p *workspace.Project, abs, rel string, size int64, start, end int) (Result, error) {
	f, _, err := p.OpenFile(abs)
	if err != nil {
		return errorf("read %s: %v", rel, err)
	}
	defer f.Close()
	start = max(start, 1)
	if end < start {
		end = start + 200
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var out strings.Builder
	fmt.Fprintf(&out, "%s (%d bytes; lines %d-%d)\n", rel, size, start, end)
	for n := 1; n <= end; n++ {
		line, cut, err := readLine(r, maxLineLength)
		if n == 1 && bytes.IndexByte(line[:min(len(line), 8000)], 0) >= 0 {
			return errorf("%s is a binary file (%d bytes)", rel, size)
		}
		if n >= start && (len(line) > 0 || err == nil) {
			fmt.Fprintf(&out, "%5d| %s", n, strings.TrimRight(string(line), "\r\n"))
			if cut > 0 {
				fmt.Fprintf(&out, " [... %d more bytes of this line]", cut)
			}
			out.WriteByte('\n')
		}
		if err != nil {
			break // the end of the file
		}
	}
	return Result{Content: out.String(), Summary: "read " + rel}, nil
}

// readLine reads one line, keeping at most max bytes of it; cut counts the
// bytes dropped. err is io.EOF after the last line.
func readLine(r *bufio.Reader, max int) (line []byte, cut int64, err error) {
	for {
		chunk, isPrefix, rerr := r.ReadLine()
		if keep := max - len(line); keep > 0 {
			line = append(line, chunk[:min(len(chunk), keep)]...)
			cut += int64(len(chunk) - min(len(chunk), keep))
		} else {
			cut += int64(len(chunk))
		}
		if rerr != nil {
			return line, cut, rerr
		}
		if !isPrefix {
			return line, cut, nil
		}
	}
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

// walk visits the project's files below dir (a path inside the project),
// skipping dependency and VCS folders. It walks the root with its symlinks
// resolved, so a root that is a symlink lists its target's files; rel is
// relative to the root. Symlinks inside are visited as entries, not followed.
func walk(ctx context.Context, p *workspace.Project, dir string, fn func(path, rel string, d fs.DirEntry) error) error {
	root := p.WalkRoot()
	start := filepath.Join(root, p.Rel(dir))
	return filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != start && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") && d.Name() != ".github") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		return fn(filepath.Join(p.Root(), rel), filepath.ToSlash(rel), d)
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
		err = walk(ctx, p, dir, func(path, rel string, d fs.DirEntry) error {
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
		var big []string // files over MaxSearchSize: named, so "no matches" is not taken as "not there"
		n := 0
		err = walk(ctx, p, p.Root(), func(path, rel string, d fs.DirEntry) error {
			if filter != nil && !filter.MatchString(rel) {
				return nil
			}
			// Inside the root, regular, at most MaxSearchSize: a link out of
			// the project, a FIFO or /dev/zero is skipped, never read.
			b, err := env.Workspace.ReadFile(p, path, workspace.MaxSearchSize)
			var tooLarge *workspace.FileTooLargeError
			if errors.As(err, &tooLarge) {
				big = append(big, rel)
			}
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
		skipped := ""
		if len(big) > 0 {
			skipped = fmt.Sprintf("[not searched, over %d bytes: %s; read them by line range]\n", workspace.MaxSearchSize, clip(strings.Join(big, ", "), 500))
		}
		if n == 0 {
			return Result{Content: "no matches for " + a.Pattern + "\n" + skipped, Summary: "searched " + a.Pattern}, nil
		}
		return Result{Content: out.String() + skipped, Summary: fmt.Sprintf("%d matches for %s", n, a.Pattern)}, nil
	},
}
