package workspace

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Type is a project's principal language.
type Type string

// Project types.
const (
	Go         Type = "go"
	Rust       Type = "rust"
	Python     Type = "python"
	JavaScript Type = "javascript"
	TypeScript Type = "typescript"
	Elixir     Type = "elixir"
	Unknown    Type = "unknown"
)

// TechStack describes how a project is built.
type TechStack struct {
	Language        string   `json:"language"`
	LanguageVersion string   `json:"languageVersion,omitempty"`
	PackageManager  string   `json:"packageManager,omitempty"`
	BuildCommand    string   `json:"buildCommand,omitempty"`
	TestCommand     string   `json:"testCommand,omitempty"`
	Manifests       []string `json:"manifests,omitempty"`
	// Others lists the types of further manifests found beside the principal one.
	Others []Type `json:"others,omitempty"`
}

// Info is what detection learned about a project folder.
type Info struct {
	Type      Type      `json:"type"`
	TechStack TechStack `json:"techStack"`
	GitBranch string    `json:"gitBranch,omitempty"`
}

// Detect reads a folder's manifests (never walking the tree, never running a
// program) and its git HEAD. Manifests are repository content: they are read
// only inside root, only as regular files of bounded size, and every value
// taken from them must fit its field's grammar (clean), else it is dropped.
func Detect(root string) Info {
	r, _ := os.OpenRoot(root)
	if r != nil {
		defer r.Close()
	}
	var found []Type
	var manifests []string
	has := func(name string) bool {
		ok := exists(r, name)
		if ok {
			manifests = append(manifests, name)
		}
		return ok
	}
	// Order is priority: the first type found is the principal one.
	if has("go.mod") {
		found = append(found, Go)
	}
	if has("Cargo.toml") {
		found = append(found, Rust)
	}
	if has("mix.exs") {
		found = append(found, Elixir)
	}
	py := false
	for _, m := range []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"} {
		if has(m) {
			py = true
		}
	}
	if py {
		found = append(found, Python)
	}
	var pkg packageJSON
	if has("package.json") {
		pkg = readPackageJSON(r)
		if exists(r, "tsconfig.json") || pkg.dependsOn("typescript") {
			found = append(found, TypeScript)
		} else {
			found = append(found, JavaScript)
		}
	}
	info := Info{Type: Unknown, GitBranch: GitBranch(root)}
	if len(found) == 0 {
		info.TechStack.Language = "unknown"
		return info
	}
	info.Type = found[0]
	info.TechStack = stackFor(r, info.Type, pkg)
	info.TechStack.Manifests = manifests
	if len(found) > 1 {
		info.TechStack.Others = found[1:]
	}
	return info
}

// exists reports whether name is a regular file inside r (a symlink that
// leaves the root does not count).
func exists(r *os.Root, name string) bool {
	if r == nil {
		return false
	}
	fi, err := r.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

var (
	goLine      = regexp.MustCompile(`(?m)^go\s+(\S+)`)
	tomlChannel = regexp.MustCompile(`(?m)^\s*channel\s*=\s*"([^"]+)"`)
)

func stackFor(r *os.Root, t Type, pkg packageJSON) TechStack {
	s := TechStack{Language: string(t)}
	switch t {
	case Go:
		if m := goLine.FindStringSubmatch(readManifest(r, "go.mod")); m != nil {
			s.LanguageVersion = m[1]
		}
		s.PackageManager, s.BuildCommand, s.TestCommand = "go modules", "go build ./...", "go test ./..."
	case Rust:
		if m := tomlChannel.FindStringSubmatch(readManifest(r, "rust-toolchain.toml")); m != nil {
			s.LanguageVersion = m[1]
		} else if v := strings.TrimSpace(readManifest(r, "rust-toolchain")); v != "" {
			s.LanguageVersion = firstLine(v)
		}
		s.PackageManager, s.BuildCommand, s.TestCommand = "cargo", "cargo build", "cargo test"
	case Python:
		s.LanguageVersion = firstLine(strings.TrimSpace(readManifest(r, ".python-version")))
		s.PackageManager = "pip"
		run := ""
		for _, lock := range []struct{ file, pm, run string }{
			{"uv.lock", "uv", "uv run "}, {"poetry.lock", "poetry", "poetry run "},
			{"Pipfile.lock", "pipenv", "pipenv run "}, {"pdm.lock", "pdm", "pdm run "},
		} {
			if exists(r, lock.file) {
				s.PackageManager, run = lock.pm, lock.run
				break
			}
		}
		s.BuildCommand, s.TestCommand = run+"python -m compileall -q .", run+"python -m pytest"
	case JavaScript, TypeScript:
		s.LanguageVersion = pkg.Engines["node"]
		s.PackageManager = "npm"
		for _, lock := range []struct{ file, pm string }{
			{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}, {"bun.lockb", "bun"}, {"bun.lock", "bun"}, {"package-lock.json", "npm"},
		} {
			if exists(r, lock.file) {
				s.PackageManager = lock.pm
				break
			}
		}
		if _, ok := pkg.Scripts["build"]; ok {
			s.BuildCommand = s.PackageManager + " run build"
		} else if t == TypeScript {
			s.BuildCommand = "npx tsc --noEmit"
		}
		if _, ok := pkg.Scripts["test"]; ok {
			s.TestCommand = s.PackageManager + " test"
		}
	case Elixir:
		s.PackageManager, s.BuildCommand, s.TestCommand = "mix", "mix compile", "mix test"
		sc := bufio.NewScanner(strings.NewReader(readManifest(r, ".tool-versions")))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "elixir" {
				s.LanguageVersion = f[1]
			}
		}
	}
	s.LanguageVersion = clean(versionGrammar(t), s.LanguageVersion)
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	Engines         map[string]string `json:"engines"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
}

func readPackageJSON(r *os.Root) packageJSON {
	var p packageJSON
	json.Unmarshal([]byte(readManifest(r, "package.json")), &p)
	return p
}

func (p packageJSON) dependsOn(name string) bool {
	_, a := p.Dependencies[name]
	_, b := p.DevDependencies[name]
	return a || b
}

// GitBranch returns the branch checked out in the git repository holding dir:
// the branch name, a short commit id for a detached HEAD, or "" outside git.
// It follows a worktree's .git file to its gitdir and walks up to the
// repository's root, reading only regular files (HEAD, the .git file),
// never through a symlink; a value that is not a ref name is dropped.
func GitBranch(dir string) string {
	for d := dir; ; {
		gitPath := filepath.Join(d, ".git")
		if fi, err := os.Lstat(gitPath); err == nil {
			gitDir := gitPath
			if fi.Mode().IsRegular() {
				line := strings.TrimSpace(firstLine(readGitFile(gitPath)))
				rest, ok := strings.CutPrefix(line, "gitdir:")
				if !ok {
					return ""
				}
				gitDir = strings.TrimSpace(rest)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			} else if !fi.IsDir() {
				return ""
			}
			head := strings.TrimSpace(firstLine(readGitFile(filepath.Join(gitDir, "HEAD"))))
			if ref, ok := strings.CutPrefix(head, "ref:"); ok {
				return clean(refName, strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/"))
			}
			if len(head) >= 7 {
				return clean(commitID, head[:7])
			}
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// Grammars of detected values: repository text reaches the system prompt and
// agent.projects only in these shapes.
var (
	// dottedVersion is 1.22, 1.22.3, 3.12.0rc1, 1.22.3-beta.
	dottedVersion = regexp.MustCompile(`^v?\d+(\.\d+){0,3}([.-]?[0-9A-Za-z]+){0,3}$`)
	// rustToolchain is stable, beta, nightly[-date] or a version.
	rustToolchain = regexp.MustCompile(`^(stable|beta|nightly)(-\d{4}-\d\d-\d\d)?$|^\d+\.\d+(\.\d+)?$`)
	// semverRange is an npm engines range such as ">=18 <21" or "^20.x || 22".
	semverRange = regexp.MustCompile(`^[0-9xX*^~<>=.|\- ]+$`)
	// pythonVersion is 3.12, 3.12.1, pypy3.10, 3.13t.
	pythonVersion = regexp.MustCompile(`^(pypy|cpython-|graalpy)?\d+(\.\d+){0,2}[a-z0-9]*$`)
	refName       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/+-]*$`)
	commitID      = regexp.MustCompile(`^[0-9a-f]{7}$`)
)

// maxDetected bounds a detected value's length.
const maxDetected = 100

func versionGrammar(t Type) *regexp.Regexp {
	switch t {
	case Rust:
		return rustToolchain
	case JavaScript, TypeScript:
		return semverRange
	case Python:
		return pythonVersion
	}
	return dottedVersion
}

// clean returns v when it fits grammar and maxDetected, else "".
func clean(grammar *regexp.Regexp, v string) string {
	if len(v) > maxDetected || !grammar.MatchString(v) {
		return ""
	}
	return v
}
