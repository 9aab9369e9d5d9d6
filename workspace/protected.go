package workspace

import (
	"path"
	"path/filepath"
	"strings"
)

// Rule is one entry of a table of paths: a pattern over a project-relative,
// slash-separated path, and why the path is in the table.
//
// A pattern is matched against consecutive components of the path, at any
// depth: "CLAUDE.md" matches docs/CLAUDE.md, ".github/workflows/**" matches
// .github/workflows/ci.yml and sub/.github/workflows/x.yml. Components match
// as path.Match patterns; a final "**" matches one or more components.
type Rule struct {
	Pattern string
	Why     string
}

// ProtectedPaths are files the agent never changes silently: they run
// programs, hold secrets, or become instructions and settings the agent
// itself follows. An edit of one needs the user's confirmation (in headless
// runs, an --allow-edit rule). Later features add their files here.
var ProtectedPaths = []Rule{
	{".git/**", "git's own files: its config and hooks run programs"},
	{".git", "a .git file points git at another repository"},
	{".gitmodules", "submodule URLs are fetched and checked out by git"},
	{".vscode/**", "VS Code settings and tasks can run programs and set the agent's permissions"},
	{".idea/**", "JetBrains settings can run programs"},
	{".nvim.lua", "Neovim runs it with 'exrc'"},
	{".nvimrc", "Neovim runs it with 'exrc'"},
	{".exrc", "Vim and Neovim run it with 'exrc'"},
	{".envrc", "direnv runs it when the folder is entered"},
	{".env", "environment files hold secrets"},
	{".env.*", "environment files hold secrets"},
	{".github/workflows/**", "CI workflows run with the repository's secrets"},
	{".gitlab-ci.yml", "CI configuration runs with the repository's secrets"},
	{".circleci/**", "CI configuration runs with the repository's secrets"},
	{".buildkite/**", "CI configuration runs with the repository's secrets"},
	{"azure-pipelines.yml", "CI configuration runs with the repository's secrets"},
	{".travis.yml", "CI configuration runs with the repository's secrets"},
	{"bitbucket-pipelines.yml", "CI configuration runs with the repository's secrets"},
	{"Jenkinsfile", "CI configuration runs with the repository's secrets"},
	{".devcontainer/**", "dev containers run their commands when the folder is opened"},
	{".husky/**", "git hook managers run these on commit"},
	{".pre-commit-config.yaml", "pre-commit runs these hooks on commit"},
	{"lefthook.yml", "lefthook runs these hooks on commit"},
	{"AGENTS.md", "coding agents follow it as standing instructions"},
	{"CLAUDE.md", "coding agents follow it as standing instructions"},
	{".mcp.json", "it starts Model Context Protocol servers (programs)"},
	{".agent-lsp/**", "agent-lsp's own project settings"},
	{".claude/**", "another agent's settings and permissions"},
	{".cursor/**", "another agent's settings and rules"},
}

// CommandFiles define a project's build and test commands, or how they run.
// Once the agent changed one in a session, the project's own build and test
// lose their "run without asking" status for that session.
var CommandFiles = []Rule{
	{"package.json", "npm, yarn, pnpm and bun scripts"},
	{".npmrc", "npm settings such as script-shell"},
	{".yarnrc", "yarn settings"},
	{".yarnrc.yml", "yarn settings"},
	{"pnpm-workspace.yaml", "pnpm workspace"},
	{"bunfig.toml", "bun settings"},
	{"deno.json", "deno tasks"},
	{"deno.jsonc", "deno tasks"},
	{"Makefile", "make"},
	{"makefile", "make"},
	{"GNUmakefile", "make"},
	{"justfile", "just"},
	{"Justfile", "just"},
	{".justfile", "just"},
	{"Taskfile.yml", "task"},
	{"Taskfile.yaml", "task"},
	{"go.mod", "the Go toolchain and modules go build and go test use"},
	{"go.work", "the Go workspace"},
	{"Cargo.toml", "cargo"},
	{"build.rs", "cargo runs it before building"},
	{".cargo/config.toml", "cargo aliases and runners"},
	{".cargo/config", "cargo aliases and runners"},
	{"pyproject.toml", "Python build and test configuration"},
	{"setup.py", "Python build"},
	{"setup.cfg", "Python build and test configuration"},
	{"tox.ini", "tox"},
	{"noxfile.py", "nox"},
	{"pytest.ini", "pytest"},
	{"conftest.py", "pytest runs it before the tests"},
	{"mix.exs", "mix"},
	{"build.gradle", "gradle"},
	{"build.gradle.kts", "gradle"},
	{"settings.gradle", "gradle"},
	{"settings.gradle.kts", "gradle"},
	{"pom.xml", "maven"},
	{"CMakeLists.txt", "cmake"},
	{"meson.build", "meson"},
	{"Rakefile", "rake"},
}

// Match returns the first rule of table that matches rel (a project-relative
// path, either separator), and whether one did. Case is ignored, as on the
// file systems of macOS and Windows, where .GIT/config is .git/config.
func Match(table []Rule, rel string) (Rule, bool) {
	parts := strings.Split(strings.ToLower(path.Clean(strings.ReplaceAll(rel, "\\", "/"))), "/")
	for _, r := range table {
		if matchComponents(strings.Split(strings.ToLower(r.Pattern), "/"), parts) {
			return r, true
		}
	}
	return Rule{}, false
}

// MatchFile is Match for a file of the project, by the path given and by the
// path its symlinks resolve to: a link named notes.txt that points at
// .git/config is .git/config.
func (p *Project) MatchFile(table []Rule, abs string) (Rule, bool) {
	if r, ok := Match(table, p.Rel(abs)); ok {
		return r, true
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Rule{}, false
	}
	if rel, err := filepath.Rel(p.realRoot, real); err == nil {
		return Match(table, rel)
	}
	return Rule{}, false
}

// matchComponents reports whether pat matches consecutive components of parts
// ending at the last one (or, with a final "**", anything below).
func matchComponents(pat, parts []string) bool {
	for start := 0; start < len(parts); start++ {
		if matchAt(pat, parts[start:]) {
			return true
		}
	}
	return false
}

func matchAt(pat, parts []string) bool {
	for i, p := range pat {
		if p == "**" && i == len(pat)-1 {
			return len(parts) > i
		}
		if i >= len(parts) {
			return false
		}
		if ok, _ := path.Match(p, parts[i]); !ok {
			return false
		}
	}
	return len(parts) == len(pat)
}
