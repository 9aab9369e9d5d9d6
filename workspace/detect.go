package workspace

import (
	"bufio"
	"bytes"
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
// program) and its git HEAD.
func Detect(root string) Info {
	var found []Type
	var manifests []string
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, name))
		if err == nil {
			manifests = append(manifests, name)
		}
		return err == nil
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
		pkg = readPackageJSON(filepath.Join(root, "package.json"))
		if exists(root, "tsconfig.json") || pkg.dependsOn("typescript") {
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
	info.TechStack = stackFor(root, info.Type, pkg)
	info.TechStack.Manifests = manifests
	if len(found) > 1 {
		info.TechStack.Others = found[1:]
	}
	return info
}

func exists(root, name string) bool {
	_, err := os.Stat(filepath.Join(root, name))
	return err == nil
}

func readSmall(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, _ := f.Read(b)
	return string(b[:n])
}

var (
	goLine      = regexp.MustCompile(`(?m)^go\s+(\S+)`)
	tomlChannel = regexp.MustCompile(`(?m)^\s*channel\s*=\s*"([^"]+)"`)
)

func stackFor(root string, t Type, pkg packageJSON) TechStack {
	s := TechStack{Language: string(t)}
	switch t {
	case Go:
		if m := goLine.FindStringSubmatch(readSmall(filepath.Join(root, "go.mod"))); m != nil {
			s.LanguageVersion = m[1]
		}
		s.PackageManager, s.BuildCommand, s.TestCommand = "go modules", "go build ./...", "go test ./..."
	case Rust:
		if m := tomlChannel.FindStringSubmatch(readSmall(filepath.Join(root, "rust-toolchain.toml"))); m != nil {
			s.LanguageVersion = m[1]
		} else if v := strings.TrimSpace(readSmall(filepath.Join(root, "rust-toolchain"))); v != "" {
			s.LanguageVersion = firstLine(v)
		}
		s.PackageManager, s.BuildCommand, s.TestCommand = "cargo", "cargo build", "cargo test"
	case Python:
		s.LanguageVersion = firstLine(strings.TrimSpace(readSmall(filepath.Join(root, ".python-version"))))
		s.PackageManager = "pip"
		run := ""
		for _, lock := range []struct{ file, pm, run string }{
			{"uv.lock", "uv", "uv run "}, {"poetry.lock", "poetry", "poetry run "},
			{"Pipfile.lock", "pipenv", "pipenv run "}, {"pdm.lock", "pdm", "pdm run "},
		} {
			if exists(root, lock.file) {
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
			if exists(root, lock.file) {
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
		sc := bufio.NewScanner(strings.NewReader(readSmall(filepath.Join(root, ".tool-versions"))))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "elixir" {
				s.LanguageVersion = f[1]
			}
		}
	}
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

func readPackageJSON(path string) packageJSON {
	var p packageJSON
	json.Unmarshal([]byte(readSmall(path)), &p)
	return p
}

func (p packageJSON) dependsOn(name string) bool {
	_, a := p.Dependencies[name]
	_, b := p.DevDependencies[name]
	return a || b
}

// GitBranch returns the branch checked out in the git repository holding dir:
// the branch name, a short commit id for a detached HEAD, or "" outside git.
// It follows a worktree's .git file to its gitdir.
func GitBranch(dir string) string {
	for d := dir; ; {
		gitPath := filepath.Join(d, ".git")
		if fi, err := os.Stat(gitPath); err == nil {
			gitDir := gitPath
			if !fi.IsDir() {
				line := strings.TrimSpace(readSmall(gitPath))
				rest, ok := strings.CutPrefix(line, "gitdir:")
				if !ok {
					return ""
				}
				gitDir = strings.TrimSpace(rest)
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			head := bytes.TrimSpace([]byte(readSmall(filepath.Join(gitDir, "HEAD"))))
			if ref, ok := bytes.CutPrefix(head, []byte("ref:")); ok {
				return strings.TrimPrefix(strings.TrimSpace(string(ref)), "refs/heads/")
			}
			if len(head) >= 7 {
				return string(head[:7])
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
