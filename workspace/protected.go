package workspace

import (
	"path"
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
// runs, an --allow-edit rule). It is the one table of them: the sandbox keeps
// them from commands, docs/security.md lists it (a test keeps the two
// equal), and later features add their files here.
var ProtectedPaths = []Rule{
	{".git/**", "git's own files: its config and hooks run programs"},
	{".git", "a .git file points git at another repository"},
	{".gitmodules", "submodule URLs are fetched and checked out by git"},
	{".gitattributes", "it assigns git's filters and diff drivers, which run programs"},
	{".vscode/**", "VS Code settings and tasks can run programs and set the agent's permissions"},
	{"*.code-workspace", "a VS Code workspace file holds settings and tasks that can run programs"},
	{".idea/**", "JetBrains settings can run programs"},
	{".zed/**", "Zed's project settings and tasks can run programs"},
	{".helix/**", "Helix's project settings choose the language servers it runs"},
	{".nvim.lua", "Neovim runs it with 'exrc'"},
	{".nvimrc", "Neovim runs it with 'exrc'"},
	{".exrc", "Vim and Neovim run it with 'exrc'"},
	{".envrc", "direnv runs it when the folder is entered"},
	{".env", "environment files hold secrets"},
	{".env.*", "environment files hold secrets"},
	{"mise.toml", "mise runs its tasks and hooks and sets the environment when the folder is entered"},
	{".mise.toml", "mise runs its tasks and hooks and sets the environment when the folder is entered"},
	{"mise.*.toml", "mise's local and per-environment settings: tasks, hooks and the environment"},
	{".mise.*.toml", "mise's local and per-environment settings: tasks, hooks and the environment"},
	{"mise/config*.toml", "mise's settings: tasks, hooks and the environment"},
	{".mise/**", "mise's settings and task scripts"},
	{".config/mise/**", "mise's settings and task scripts"},
	{".github/workflows/**", "CI workflows run with the repository's secrets"},
	{".github/actions/**", "actions the CI workflows run, with the repository's secrets"},
	{".gitea/workflows/**", "Gitea Actions workflows run with the repository's secrets"},
	{".forgejo/workflows/**", "Forgejo Actions workflows run with the repository's secrets"},
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
	{"lefthook.*", "lefthook runs these hooks on commit (.yml, .yaml, .json, .toml)"},
	{".lefthook.*", "lefthook runs these hooks on commit (.yml, .yaml, .json, .toml)"},
	{"lefthook-local.*", "lefthook runs these hooks on commit, over its main file"},
	{".lefthook-local.*", "lefthook runs these hooks on commit, over its main file"},
	{".lefthook/**", "lefthook's hook scripts, run on commit"},
	{".lefthook-local/**", "lefthook's hook scripts, run on commit"},
	{"AGENTS.md", "coding agents follow it as standing instructions"},
	{"CLAUDE.md", "coding agents follow it as standing instructions"},
	{".agents/**", "coding agents' shared instructions, skills and commands"},
	{".github/copilot-instructions.md", "GitHub Copilot follows it as standing instructions"},
	{".github/prompts/**", "prompt files coding agents run as commands"},
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
