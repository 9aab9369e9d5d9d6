package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/stream"

	"github.com/agent-lsp/agent-lsp/workspace"
)

const (
	maxListed  = 500 // paths list_files shows
	maxMatches = 100 // lines search shows
	maxLineLen = 300 // bytes of a matching line search shows
)

var errEnough = errors.New("enough")

var listFiles = Tool{
	Name:        "list_files",
	Description: "List files of the project matching a glob (e.g. \"**/*.go\", \"src/*.ts\"; default all files). Leaves out what .gitignore and .ignore files exclude, and .git. At most 500 paths.",
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
		}
		re, err := pathGlob(pattern)
		if err != nil {
			return errorf("bad pattern %q: %v", a.Pattern, err)
		}
		var files []string
		more := false
		err = p.Walk(ctx, dir, func(_, rel string, _ fs.DirEntry) error {
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
		return Result{Content: out, Summary: fmt.Sprintf("listed %s", plural(len(files), "file"))}, nil
	},
}

var search = Tool{
	Name:        "search",
	Description: "Search the project's text files for a regular expression (RE2 syntax), like ripgrep: files that .gitignore or .ignore exclude, .git and binary files are left out. Returns up to 100 matching lines as file:line: text. Sees unsaved editor changes.",
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
		q := searchQuery{limit: maxMatches}
		if q.m, err = newLineMatcher(a.Pattern, a.CaseInsensitive); err != nil {
			return errorf("bad regular expression: %v", err)
		}
		if a.Glob != "" {
			if q.filter, err = pathGlob(a.Glob); err != nil {
				return errorf("bad glob: %v", err)
			}
		}
		found, err := q.run(ctx, env.Workspace, p)
		if err != nil {
			return Result{}, err
		}
		return found.result(a.Pattern), nil
	},
}

// searchQuery is one search over a project's files.
type searchQuery struct {
	m      *lineMatcher
	filter *regexp.Regexp // paths to search; nil: all
	limit  int            // matching lines to report; more stops the search
}

// searchFound is what a search found: the first matching lines in walk
// order, and the files it did not search for their size.
type searchFound struct {
	lines []string // "rel:line: text"
	more  bool     // lines beyond the limit exist
	big   []string // files over workspace.MaxSearchSize, named so "no matches" is not taken as "not there"
}

// run searches the project's files in parallel. The files are visited in the
// walk's order and their results gathered in that order (conc's stream runs
// each callback in the order its task was started), so the lines reported
// are always the first ones in walk order, whichever file is read first. The
// walk opens each file (one open, relative to the folder it holds open) and
// the tasks read and match them; it stops as soon as the lines found exceed
// the limit.
func (q *searchQuery) run(ctx context.Context, ws *workspace.Workspace, p *workspace.Project) (searchFound, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var found searchFound
	var full atomic.Bool // set by the callbacks, read by the walk
	s := stream.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	err := p.Files(ctx, p.Root(), func(e workspace.Entry) error {
		if full.Load() {
			return errEnough
		}
		if !e.Type().IsRegular() || q.filter != nil && !q.filter.MatchString(e.Rel) {
			return nil // links are not followed, as by ripgrep
		}
		src := openSource(ws, e)
		if src.big {
			s.Go(func() stream.Callback { return func() { found.big = append(found.big, e.Rel) } })
			return nil
		}
		if src.f == nil && src.text == nil {
			return nil // unreadable
		}
		s.Go(func() stream.Callback {
			lines, big := q.file(ctx, src, e.Rel)
			return func() {
				if big {
					found.big = append(found.big, e.Rel)
				}
				if found.more {
					return
				}
				for _, l := range lines {
					if len(found.lines) == q.limit {
						found.more = true
						full.Store(true)
						cancel()
						return
					}
					found.lines = append(found.lines, l)
				}
			}
		})
		return nil
	})
	s.Wait()
	if err != nil && !errors.Is(err, errEnough) && !(found.more && errors.Is(err, context.Canceled)) {
		return found, err
	}
	return found, nil
}

// source is a file to search: the editor's unsaved text, or the open file;
// big when it is over workspace.MaxSearchSize.
type source struct {
	text []byte
	f    *workspace.OpenedFile
	big  bool
}

// openSource opens the walked file e as search reads it: the unsaved
// buffer when the editor has it open, else the file (inside the root,
// regular, never blocking: a link out of the project, a FIFO or /dev/zero
// is never read); nothing when it cannot be opened.
func openSource(ws *workspace.Workspace, e workspace.Entry) source {
	if d, ok := ws.Document(e.Abs); ok {
		if len(d.Text) > workspace.MaxSearchSize {
			return source{big: true}
		}
		return source{text: []byte(d.Text)}
	}
	f, err := e.Open()
	if err != nil {
		return source{}
	}
	if f.Size() > workspace.MaxSearchSize {
		f.Close()
		return source{big: true}
	}
	return source{f: f}
}

// buffers are the read buffers of search tasks, reused: a search reads
// thousands of files, each into a buffer of its size otherwise.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// file searches one file, closing it: its matching lines, at most limit+1
// of them, and whether it grew too large to search since it was opened.
func (q *searchQuery) file(ctx context.Context, src source, rel string) ([]string, bool) {
	b := src.text
	if src.f != nil {
		if ctx.Err() != nil {
			src.f.Close()
			return nil, false
		}
		buf := buffers.Get().(*[]byte)
		defer buffers.Put(buf)
		var err error
		if b, err = src.f.ReadAll(rel, workspace.MaxSearchSize, *buf); err != nil {
			var tooLarge *workspace.FileTooLargeError
			return nil, errors.As(err, &tooLarge) // unreadable, or grown over the limit
		}
		if cap(b) > cap(*buf) {
			*buf = b
		}
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, false // binary
	}
	var lines []string
	q.m.each(b, func(n int, line []byte) bool {
		lines = append(lines, fmt.Sprintf("%s:%d: %s", rel, n, Clip(string(bytes.TrimRight(line, "\r")), maxLineLen)))
		return len(lines) <= q.limit
	})
	return lines, false
}

// result is the tool's answer for what a search of pattern found.
func (f searchFound) result(pattern string) Result {
	var out strings.Builder
	for _, l := range f.lines {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	if f.more {
		fmt.Fprintf(&out, "[stopped at %d matches; narrow the pattern or glob]\n", len(f.lines))
	}
	if len(f.big) > 0 {
		fmt.Fprintf(&out, "[not searched, over %d bytes: %s; read them by line range]\n", workspace.MaxSearchSize, Clip(strings.Join(f.big, ", "), 500))
	}
	if len(f.lines) == 0 {
		return Result{Content: "no matches for " + pattern + "\n" + out.String(), Summary: "searched " + pattern}
	}
	return Result{Content: out.String(), Summary: fmt.Sprintf("%s for %s", plural(len(f.lines), "match"), pattern)}
}

// lineMatcher finds the lines of a text that a regular expression matches,
// as grep and ripgrep do (a match never spans lines; ^ and $ are a line's
// ends), without splitting the text into lines: it looks for candidates in
// the whole text, with bytes.Index when every match must contain a literal
// (fast: most files hold none), else with the expression in multi-line
// mode, and checks each candidate's line with the expression itself.
type lineMatcher struct {
	line    *regexp.Regexp // the expression, matched against one line
	text    *regexp.Regexp // the expression with ^ and $ at line ends, over the whole text; nil when line alone decides
	literal []byte         // a literal every match contains; nil if none is known
}

// newLineMatcher compiles pattern (RE2 syntax).
func newLineMatcher(pattern string, caseInsensitive bool) (*lineMatcher, error) {
	flags := ""
	if caseInsensitive {
		flags = "(?i)"
	}
	line, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, err
	}
	m := &lineMatcher{line: line}
	tree, err := syntax.Parse("(?m)"+flags+pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if usesTextEnds(tree) {
		return m, nil // \A and \z mean a line's ends here, the text's there: check every line
	}
	m.text = regexp.MustCompile("(?m)" + flags + pattern)
	m.literal = []byte(requiredLiteral(tree.Simplify()))
	if len(m.literal) < 2 {
		m.literal = nil
	}
	return m, nil
}

// each calls fn with the number (from 1) and text of each line of b the
// expression matches, in order, until fn returns false.
func (m *lineMatcher) each(b []byte, fn func(n int, line []byte) bool) {
	b = bytes.TrimSuffix(b, []byte{'\n'}) // no line after the last newline
	if m.text == nil {
		if len(b) == 0 {
			return
		}
		for n, line := range bytes.Split(b, []byte{'\n'}) {
			if m.line.Match(line) && !fn(n+1, line) {
				return
			}
		}
		return
	}
	if len(b) == 0 {
		return
	}
	n, counted := 1, 0 // the line number at offset counted
	// from == len(b) is the start of an empty last line (b ended "\n\n").
	for from := 0; from <= len(b); {
		at := m.next(b[from:])
		if at < 0 {
			return
		}
		at += from
		start := bytes.LastIndexByte(b[:at], '\n') + 1
		end := len(b)
		if i := bytes.IndexByte(b[at:], '\n'); i >= 0 {
			end = at + i
		}
		n += bytes.Count(b[counted:start], []byte{'\n'})
		counted = start
		if m.line.Match(b[start:end]) && !fn(n, b[start:end]) {
			return
		}
		from = end + 1
	}
}

// next is the offset in b of the next candidate, -1 if none.
func (m *lineMatcher) next(b []byte) int {
	if m.literal != nil {
		return bytes.Index(b, m.literal)
	}
	loc := m.text.FindIndex(b)
	if loc == nil {
		return -1
	}
	return loc[0]
}

// usesTextEnds says whether re holds \A or \z (in multi-line mode, ^ and $
// parse as line ends: what is left is the text's).
func usesTextEnds(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, sub := range re.Sub {
		if usesTextEnds(sub) {
			return true
		}
	}
	return false
}

// requiredLiteral is the longest case-sensitive literal every match of re
// contains, "" when there is none.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// pathGlob turns a glob with ** into a regular expression over slash paths;
// a glob without / matches names at any depth.
func pathGlob(glob string) (*regexp.Regexp, error) {
	if !strings.Contains(glob, "/") && glob != "**" {
		glob = "**/" + glob
	}
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

// plural is n and noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
