// Package custom loads what users and repositories customize agent-lsp with:
// slash commands and subagent definitions, Markdown files whose YAML front
// matter describes them and whose body is their text. Nothing in a file is
// executed: a command's body becomes a prompt, an agent's body a system
// prompt.
//
// A project's files are read through an os.Root of the project, so neither
// .. nor a symlink leads out of it, and only regular files are read; every
// size is bounded (MaxFileSize, MaxFrontMatter, MaxFiles). A file that cannot
// be read or parsed is kept with its error, so that a listing shows it and
// running it says what is wrong.
package custom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// Source says where a command or an agent comes from.
type Source string

// The sources, in the order a listing gives them. A name defined by more
// than one is the first's: a built-in is never replaced, and a user's own
// file wins over a repository's of the same name.
const (
	Builtin Source = "builtin"
	User    Source = "user"
	Project Source = "project"
)

// Bounds on what is read.
const (
	// MaxFileSize bounds one command or agent file.
	MaxFileSize = 64 << 10
	// MaxFrontMatter bounds a file's front matter.
	MaxFrontMatter = 8 << 10
	// MaxFiles bounds the files read from one folder (and its subfolders).
	MaxFiles = 200
	// maxDepth bounds the subfolders of a commands folder.
	maxDepth = 3
	// maxNames bounds a list of tools in front matter.
	maxNames = 64
)

// Folders of a project, and of the user's configuration folder, holding
// command and agent files.
var (
	// ProjectCommandDirs are read in order; the first definition of a name wins.
	ProjectCommandDirs = []string{".agents/commands", ".claude/commands", ".github/prompts"}
	ProjectAgentDirs   = []string{".agents/agents", ".claude/agents"}
	UserCommandDir     = "commands"
	UserAgentDir       = "agents"
)

// Command is a slash command defined by a file.
type Command struct {
	Name         string   // without the slash; subfolders join with ":" (frontend:test)
	Description  string   // front matter description, else the body's first line
	ArgumentHint string   // front matter argument-hint
	Model        string   // front matter model
	Mode         string   // front matter mode (Copilot's ask, edit, agent; or review)
	AllowedTools []string // front matter allowed-tools (or tools): names or groups
	Body         string   // the prompt
	Source       Source
	// Path is the file: relative to the project's root (slashes) for a
	// project's, absolute for the user's.
	Path string
	// Err is why the file could not be used; the command refuses to run.
	Err error
}

// Agent is a subagent defined by a file.
type Agent struct {
	Name        string
	Description string
	// Tools are the names or groups it may use; nil when the file does not
	// say (then it gets the generic subagent's tools).
	Tools    []string
	Model    string
	MaxLoops int
	// Isolation is "worktree" when the agent works in a git worktree of its
	// own (docs/worktrees.md), "" otherwise.
	Isolation string
	Prompt    string // its system prompt
	Source    Source
	Path      string // as Command.Path
	Err       error
}

// frontMatter is what a file's front matter may say. Unknown keys are
// ignored (other tools' files carry their own).
type frontMatter struct {
	Name         string `yaml:"name"`
	Description  string `yaml:"description"`
	ArgumentHint hint   `yaml:"argument-hint"`
	Model        string `yaml:"model"`
	Mode         string `yaml:"mode"`
	AllowedTools names  `yaml:"allowed-tools"`
	Tools        names  `yaml:"tools"`
	MaxLoops     int    `yaml:"max_loops"`
	Isolation    string `yaml:"isolation"`
}

// hint is an argument hint: a string, or the flow list YAML makes of
// "[issue]", shown as written.
type hint string

func (h *hint) UnmarshalYAML(v *yaml.Node) error {
	switch v.Kind {
	case yaml.ScalarNode:
		*h = hint(v.Value)
	case yaml.SequenceNode:
		var parts []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: an argument hint must be text", c.Line)
			}
			parts = append(parts, "["+c.Value+"]")
		}
		*h = hint(strings.Join(parts, " "))
	default:
		return fmt.Errorf("line %d: an argument hint must be text", v.Line)
	}
	return nil
}

// names is a list of names written as a YAML list or as one string of
// names separated by commas or spaces (Claude Code writes "Read, Grep").
type names []string

func (n *names) UnmarshalYAML(v *yaml.Node) error {
	var list []string
	switch v.Kind {
	case yaml.ScalarNode:
		list = strings.FieldsFunc(v.Value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	case yaml.SequenceNode:
		if len(v.Content) > maxNames {
			return fmt.Errorf("line %d: more than %d names", v.Line, maxNames)
		}
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a name must be a string", c.Line)
			}
			list = append(list, c.Value)
		}
	default:
		return fmt.Errorf("line %d: must be a list of names or a string", v.Line)
	}
	if len(list) > maxNames {
		return fmt.Errorf("line %d: more than %d names", v.Line, maxNames)
	}
	*n = list
	return nil
}

// split parses a file into its front matter and its body. A file that does
// not start with a line "---" has no front matter.
func split(data []byte) (frontMatter, string, error) {
	var fm frontMatter
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a byte order mark
	first, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return fm, string(data), nil
	}
	end := -1
	for off := 0; off < len(rest); {
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		if t := string(bytes.TrimRight(line, " \t\r")); t == "---" || t == "..." {
			end = off
			break
		}
		off += len(line) + 1
		if off > MaxFrontMatter {
			return fm, "", fmt.Errorf("front matter is over %d bytes (or its closing --- is missing)", MaxFrontMatter)
		}
	}
	if end < 0 {
		return fm, "", errors.New("front matter has no closing --- line")
	}
	yml := rest[:end]
	body := rest[end:]
	_, body, _ = bytes.Cut(body, []byte("\n"))
	if len(bytes.TrimSpace(yml)) > 0 {
		if err := yaml.Unmarshal(yml, &fm); err != nil {
			var te *yaml.TypeError
			plain, ok := plainFrontMatter(yml)
			if errors.As(err, &te) || !ok {
				return frontMatter{}, "", fmt.Errorf("front matter: %w", err)
			}
			fm = plain
		}
	}
	return fm, string(body), nil
}

// plainFrontMatter reads front matter that is not valid YAML but is plain
// "key: value" lines, as other tools accept it (Claude Code's
// "argument-hint: [pr] [priority]"): ok only when every line is such a
// line of a key this package reads, or a comment.
func plainFrontMatter(yml []byte) (frontMatter, bool) {
	var fm frontMatter
	for _, line := range strings.Split(string(yml), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		if !ok || strings.ContainsAny(value, "&*") && strings.ContainsAny(value, "[{") {
			return frontMatter{}, false // anchors and aliases are YAML's, never plain
		}
		switch key {
		case "name":
			fm.Name = value
		case "description":
			fm.Description = value
		case "argument-hint":
			fm.ArgumentHint = hint(value)
		case "model":
			fm.Model = value
		case "mode":
			fm.Mode = value
		default:
			return frontMatter{}, false
		}
	}
	return fm, true
}

// ParseCommand parses a command file's content.
func ParseCommand(name string, data []byte) Command {
	c := Command{Name: name}
	fm, body, err := split(data)
	if err != nil {
		c.Err = err
		return c
	}
	c.Description, c.ArgumentHint, c.Model, c.Mode = oneLine(fm.Description), oneLine(string(fm.ArgumentHint)), strings.TrimSpace(fm.Model), strings.TrimSpace(fm.Mode)
	c.AllowedTools = fm.AllowedTools
	if c.AllowedTools == nil {
		c.AllowedTools = fm.Tools // Copilot's prompt files say tools
	}
	c.Body = strings.TrimSpace(body)
	if c.Description == "" {
		c.Description = firstLine(c.Body)
	}
	if c.Body == "" {
		c.Err = errors.New("the file has no prompt (its body is empty)")
	}
	return c
}

// ParseAgent parses an agent file's content; name is the file's, which the
// front matter's name replaces.
func ParseAgent(name string, data []byte) Agent {
	a := Agent{Name: name}
	fm, body, err := split(data)
	if err != nil {
		a.Err = err
		return a
	}
	if n := strings.TrimSpace(fm.Name); n != "" {
		if !validName(n) {
			a.Err = fmt.Errorf("name %q: use letters, digits, -, _ and . (at most 64)", oneLine(n))
			return a
		}
		a.Name = n
	}
	a.Description, a.Model, a.MaxLoops = oneLine(fm.Description), strings.TrimSpace(fm.Model), fm.MaxLoops
	a.Tools = fm.Tools
	a.Prompt = strings.TrimSpace(body)
	a.Isolation = strings.TrimSpace(fm.Isolation)
	if a.Isolation == "none" {
		a.Isolation = ""
	}
	switch {
	case a.Isolation != "" && a.Isolation != "worktree":
		a.Err = fmt.Errorf("isolation is %q: give worktree or none", oneLine(a.Isolation))
	case a.Prompt == "":
		a.Err = errors.New("the file has no system prompt (its body is empty)")
	case fm.MaxLoops < 0:
		a.Err = fmt.Errorf("max_loops is %d: give a positive number", fm.MaxLoops)
	}
	return a
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$`)

func validName(n string) bool { return nameRE.MatchString(n) }

// oneLine keeps a front matter value on one line, at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#")); l != "" {
			return oneLine(l)
		}
	}
	return ""
}

// file is a Markdown file found in a folder: its name (the command's or
// agent's, from its path) and where it is.
type file struct {
	name string
	rel  string // relative to the root the folder was opened in, slashes
}

// list finds the files of dir under root whose names end in suffix: in
// subfolders too (their names joined with ":") when deep, at most MaxFiles.
// A folder that does not exist is no error.
func list(root *os.Root, dir, suffix string, deep bool) ([]file, error) {
	var out []file
	var walk func(rel, prefix string, depth int) error
	walk = func(rel, prefix string, depth int) error {
		f, err := root.Open(rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			return err
		}
		entries, err := f.ReadDir(MaxFiles + 1)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			n := e.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			if e.IsDir() {
				if deep && depth < maxDepth {
					if err := walk(path.Join(rel, n), prefix+n+":", depth+1); err != nil {
						return err
					}
				}
				continue
			}
			base, ok := strings.CutSuffix(n, suffix)
			if !ok || base == "" {
				continue
			}
			if len(out) >= MaxFiles {
				return fmt.Errorf("%s holds more than %d files: the rest are left out", dir, MaxFiles)
			}
			out = append(out, file{name: prefix + base, rel: path.Join(rel, n)})
		}
		return nil
	}
	err := walk(dir, "", 0)
	return out, err
}

// read returns a regular file's content, at most MaxFileSize bytes. A
// named pipe or device is refused without blocking on it.
func read(root *os.Root, rel string) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit", rel, fi.Size(), MaxFileSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is over the %d-byte limit", rel, MaxFileSize)
	}
	return b, nil
}

// Problem is a folder that could not be read whole.
type Problem struct {
	Source Source
	Dir    string
	Err    error
}

func (p Problem) Error() string { return fmt.Sprintf("%s %s: %v", p.Source, p.Dir, p.Err) }

// Folders are where customization files are found: a project's root and
// the user's configuration folder (either may be "").
type Folders struct {
	Project string
	User    string // e.g. $XDG_CONFIG_HOME/agent-lsp
}

// Commands loads the commands of the user's folder and the project's, the
// user's first; a name defined twice is the first definition's. Problems
// are the folders that could not be read whole.
func (f Folders) Commands() ([]Command, []Problem) {
	var out []Command
	var problems []Problem
	seen := map[string]bool{}
	each := func(src Source, base string, dirs []string) {
		root, err := openRoot(base)
		if root == nil {
			if err != nil {
				problems = append(problems, Problem{src, base, err})
			}
			return
		}
		defer root.Close()
		for _, dir := range dirs {
			suffix, deep := ".md", true
			if dir == ".github/prompts" {
				suffix, deep = ".prompt.md", false
			}
			files, err := list(root, dir, suffix, deep)
			if err != nil {
				problems = append(problems, Problem{src, dir, err})
			}
			for _, fl := range files {
				if !validName(fl.name) || seen[fl.name] {
					continue
				}
				seen[fl.name] = true
				var c Command
				if data, err := read(root, fl.rel); err != nil {
					c = Command{Name: fl.name, Err: err}
				} else {
					c = ParseCommand(fl.name, data)
				}
				c.Source, c.Path = src, where(src, base, fl.rel)
				out = append(out, c)
			}
		}
	}
	each(User, f.User, []string{UserCommandDir})
	each(Project, f.Project, ProjectCommandDirs)
	return out, problems
}

// Agents loads the agents of the user's folder and the project's, as
// Commands does.
func (f Folders) Agents() ([]Agent, []Problem) {
	var out []Agent
	var problems []Problem
	seen := map[string]bool{}
	each := func(src Source, base string, dirs []string) {
		root, err := openRoot(base)
		if root == nil {
			if err != nil {
				problems = append(problems, Problem{src, base, err})
			}
			return
		}
		defer root.Close()
		for _, dir := range dirs {
			files, err := list(root, dir, ".md", false)
			if err != nil {
				problems = append(problems, Problem{src, dir, err})
			}
			for _, fl := range files {
				var a Agent
				if data, err := read(root, fl.rel); err != nil {
					a = Agent{Name: fl.name, Err: err}
				} else {
					a = ParseAgent(fl.name, data)
				}
				if !validName(a.Name) || seen[a.Name] {
					continue
				}
				seen[a.Name] = true
				a.Source, a.Path = src, where(src, base, fl.rel)
				out = append(out, a)
			}
		}
	}
	each(User, f.User, []string{UserAgentDir})
	each(Project, f.Project, ProjectAgentDirs)
	return out, problems
}

// openRoot opens base as a root; nil without an error when base is "" or
// does not exist.
func openRoot(base string) (*os.Root, error) {
	if base == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return root, err
}

// where names a file found under base at rel (a slash path): a project's
// by rel, as the repository spells it; another's by its path on this
// system (on Windows with backslashes throughout, not `C:\u\x/commands/y.md`).
func where(src Source, base, rel string) string {
	if src == Project {
		return rel
	}
	return filepath.Join(base, filepath.FromSlash(rel))
}
