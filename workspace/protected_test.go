package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// protectedExamples are paths each rule of ProtectedPaths must protect (the
// first rule to match is the one named), and paths no rule may: a rule
// without an example fails the test, so every entry of the table is covered.
var protectedExamples = map[string][]string{
	".git/**":                         {".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".GIT/config", "./.git/config", ".git/commondir"},
	".git":                            {".git", "vendor/lib/.git"},
	".gitmodules":                     {".gitmodules"},
	".gitattributes":                  {".gitattributes", "docs/.gitattributes"},
	".vscode/**":                      {".vscode/settings.json", ".vscode/tasks.json", "web/.vscode/launch.json"},
	"*.code-workspace":                {"project.code-workspace", "tools/Team.CODE-WORKSPACE"},
	".idea/**":                        {".idea/workspace.xml"},
	".zed/**":                         {".zed/settings.json", ".zed/tasks.json"},
	".helix/**":                       {".helix/languages.toml", ".helix/config.toml"},
	".nvim.lua":                       {".nvim.lua"},
	".nvimrc":                         {".nvimrc"},
	".exrc":                           {".exrc"},
	".envrc":                          {".envrc"},
	".env":                            {".env"},
	".env.*":                          {".env.local", "config/.env.production"},
	"mise.toml":                       {"mise.toml", ".config/mise.toml"},
	".mise.toml":                      {".mise.toml"},
	"mise.*.toml":                     {"mise.local.toml", "mise.production.toml", ".config/mise.local.toml"},
	".mise.*.toml":                    {".mise.local.toml"},
	"mise/config*.toml":               {"mise/config.toml", "mise/config.local.toml", ".config/mise/config.toml"},
	".mise/**":                        {".mise/config.toml", ".mise/tasks/build"},
	".config/mise/**":                 {".config/mise/conf.d/a.toml", ".config/mise/tasks/build"},
	".github/workflows/**":            {".github/workflows/ci.yml", "sub/.github/workflows/x.yml"},
	".github/actions/**":              {".github/actions/setup/action.yml"},
	".gitea/workflows/**":             {".gitea/workflows/ci.yaml"},
	".forgejo/workflows/**":           {".forgejo/workflows/ci.yml"},
	".gitlab-ci.yml":                  {".gitlab-ci.yml"},
	".circleci/**":                    {".circleci/config.yml"},
	".buildkite/**":                   {".buildkite/pipeline.yml"},
	"azure-pipelines.yml":             {"azure-pipelines.yml"},
	".travis.yml":                     {".travis.yml"},
	"bitbucket-pipelines.yml":         {"bitbucket-pipelines.yml"},
	"Jenkinsfile":                     {"Jenkinsfile"},
	".devcontainer/**":                {".devcontainer/devcontainer.json"},
	".husky/**":                       {".husky/pre-commit"},
	".pre-commit-config.yaml":         {".pre-commit-config.yaml"},
	"lefthook.*":                      {"lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.toml"},
	".lefthook.*":                     {".lefthook.yml", ".lefthook.yaml"},
	"lefthook-local.*":                {"lefthook-local.yml"},
	".lefthook-local.*":               {".lefthook-local.yaml"},
	".lefthook/**":                    {".lefthook/pre-commit/lint.sh"},
	".lefthook-local/**":              {".lefthook-local/pre-push/x.sh"},
	"AGENTS.md":                       {"AGENTS.md", "sub/AGENTS.md"},
	"CLAUDE.md":                       {"CLAUDE.md", "docs/CLAUDE.md"},
	".agents/**":                      {".agents/skills/deploy/SKILL.md", ".agents/commands/x.md"},
	".github/copilot-instructions.md": {".github/copilot-instructions.md"},
	".github/prompts/**":              {".github/prompts/review.prompt.md"},
	".mcp.json":                       {".mcp.json"},
	".agent-lsp/**":                   {".agent-lsp/settings.json"},
	".claude/**":                      {".claude/settings.json"},
	".cursor/**":                      {".cursor/rules/x.mdc"},
}

var unprotectedExamples = []string{
	".gitignore", ".vscode", ".github/CODEOWNERS", ".github/dependabot.yml", "environment.go", "README.md",
	"src/main.go", "workspace.go", "code-workspace.md", "mise.go", "docs/mise.md", ".zed", ".agents", "agents/x.md",
	".github/copilot.md", "prompts/x.md", "actions/x.yml",
}

func TestProtectedPaths(t *testing.T) {
	for _, r := range ProtectedPaths {
		paths, ok := protectedExamples[r.Pattern]
		if !ok || len(paths) == 0 {
			t.Errorf("rule %q has no example in protectedExamples", r.Pattern)
		}
		if r.Why == "" {
			t.Errorf("rule %q does not say why", r.Pattern)
		}
	}
	for pattern, paths := range protectedExamples {
		for _, rel := range paths {
			if got, ok := Match(ProtectedPaths, rel); !ok || got.Pattern != pattern {
				t.Errorf("%s: matched %q (%v), want %q", rel, got.Pattern, ok, pattern)
			}
		}
	}
	for _, rel := range unprotectedExamples {
		if got, ok := Match(ProtectedPaths, rel); ok {
			t.Errorf("%s: protected by %q, want unprotected", rel, got.Pattern)
		}
	}
	for _, tt := range []struct {
		rel   string
		build bool
	}{
		{"package.json", true}, {"web/package.json", true}, {"Makefile", true}, {"go.mod", true},
		{".cargo/config.toml", true}, {"conftest.py", true}, {"main.go", false}, {"package-lock.json", false},
	} {
		if _, got := Match(CommandFiles, tt.rel); got != tt.build {
			t.Errorf("%s: defines commands %v, want %v", tt.rel, got, tt.build)
		}
	}
}

// decideFixture is a hostile repository: names that lead into protected
// files through symlinked folders, file links, dangling links, a link loop
// and a hard link.
func decideFixture(t testing.TB) (*Project, string) {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".git", "config"), "[core]\n")
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	writeFile(t, filepath.Join(root, ".vscode", "settings.json"), "{}\n")
	writeFile(t, filepath.Join(root, "docs", "readme.md"), "docs\n")
	writeFile(t, filepath.Join(root, "package.json"), "{}\n")
	for name, target := range map[string]string{
		"docs/meta":    "../.git",
		"docs/editor":  "../.vscode",
		"notes.txt":    ".git/config",
		"docs/hook":    "../.git/hooks/pre-commit", // dangling: writing through it creates the hook
		"docs/nowhere": "../missing/dir",
		"loop":         "loop",
		"pkg":          "package.json",
		".env":         "docs/readme.md", // a protected name leading to an ordinary file
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, ".git", "config"), filepath.Join(root, "hardlinked.txt")); err != nil {
		t.Fatal(err)
	}
	p, err := New(UTF16).Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	return p, root
}

func TestDecide(t *testing.T) {
	p, root := decideFixture(t)
	for _, tt := range []struct {
		path    string
		realRel string // "" when refused
		review  string // what Review(nil) must say ("" for nothing)
		links   int
	}{
		{"docs/readme.md", "docs/readme.md", "", 1},
		{"docs/new.md", "docs/new.md", "", 0},
		{".git/config", ".git/config", "protected file: git's own files", 2},
		{"docs/meta/commondir", ".git/commondir", "docs/meta/commondir is .git/commondir through a symlink: git's own files", 0},
		{"docs/meta/config", ".git/config", "docs/meta/config is .git/config through a symlink", 2},
		{"docs/meta/hooks/post-checkout", ".git/hooks/post-checkout", "through a symlink", 0},
		{"docs/editor/tasks.json", ".vscode/tasks.json", "docs/editor/tasks.json is .vscode/tasks.json through a symlink: VS Code", 0},
		{"docs/editor/settings.json", ".vscode/settings.json", "is .vscode/settings.json through a symlink", 1},
		{"notes.txt", ".git/config", "notes.txt is .git/config through a symlink", 2},
		{"hardlinked.txt", "hardlinked.txt", "hardlinked.txt has 2 hard links", 2},
		{"pkg", "package.json", "", 1},
		{".env", "docs/readme.md", "protected file: environment files hold secrets", 1},
		{filepath.Join(root, "docs", "meta", "x"), ".git/x", "through a symlink", 0},
		{"docs/hook", "", "", 0},
		{"docs/nowhere/x", "", "", 0},
		{"loop", "", "", 0},
		{"loop/x", "", "", 0},
		{"../x", "", "", 0},
	} {
		d, err := p.Decide(tt.path)
		if tt.realRel == "" {
			var be *BoundaryError
			if !errors.As(err, &be) {
				t.Errorf("Decide(%q) = %+v, %v; want it refused", tt.path, d, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decide(%q): %v", tt.path, err)
			continue
		}
		if d.RealRel != tt.realRel || d.Links != tt.links {
			t.Errorf("Decide(%q) leads to %s with %d links, want %s with %d", tt.path, d.RealRel, d.Links, tt.realRel, tt.links)
		}
		review := d.Review(nil)
		if (tt.review == "") != (review == "") || !strings.Contains(review, tt.review) {
			t.Errorf("Decide(%q).Review = %q, want %q", tt.path, review, tt.review)
		}
	}
	// The dangling link says why it is refused.
	if _, err := p.Decide("docs/hook"); err == nil || !strings.Contains(err.Error(), "dangling") {
		t.Errorf("a dangling link into .git/hooks: %v", err)
	}
	// The command-file check sees through links.
	if d, _ := p.Decide("pkg"); !func() bool { _, ok := d.Match(CommandFiles); return ok }() {
		t.Error("a link to package.json is not a command file")
	}
}

// allowEdit lifts the protection of the names it matches, by the path the
// file really has; it never lifts hard links.
func TestDecisionReviewAllow(t *testing.T) {
	p, _ := decideFixture(t)
	allow := func(patterns ...string) []Rule {
		var out []Rule
		for _, s := range patterns {
			out = append(out, Rule{Pattern: s})
		}
		return out
	}
	for _, tt := range []struct {
		path  string
		allow []Rule
		asks  bool
	}{
		{"docs/editor/settings.json", allow(".vscode/settings.json"), false},
		{"docs/editor/settings.json", allow("docs/editor/settings.json"), true}, // the name given is not the file
		{".vscode/settings.json", allow(".vscode/settings.json"), false},
		{"notes.txt", allow("**"), true}, // a hard link: never lifted
		{"hardlinked.txt", allow("hardlinked.txt", ".git/**"), true},
		{".env", allow(".env"), false},
	} {
		d, err := p.Decide(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Review(tt.allow) != ""; got != tt.asks {
			t.Errorf("%s with allowEdit %v: asks %v (%q), want %v", tt.path, tt.allow, got, d.Review(tt.allow), tt.asks)
		}
	}
}

// A symlinked root: names below it are decided against its real folder.
func TestDecideSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	writeFile(t, filepath.Join(real, ".git", "config"), "[core]\n")
	os.Symlink(".git", filepath.Join(real, "meta"))
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(real, link)
	p, err := New(UTF16).Add("p", link)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"meta/hooks/pre-commit", filepath.Join(link, "meta", "x"), filepath.Join(p.realRoot, "meta", "x"), ".git/x"} {
		d, err := p.Decide(path)
		if err != nil || !strings.HasPrefix(d.RealRel, ".git/") || d.Review(nil) == "" {
			t.Errorf("Decide(%q) = %+v, %v: want it under .git and protected", path, d, err)
		}
	}
	if d, err := p.Decide(filepath.Join(p.realRoot, "a.go")); err != nil || d.Rel != "a.go" || d.RealRel != "a.go" {
		t.Errorf("a path under the real root: %+v %v", d, err)
	}
}

// FuzzDecide checks, for any path, that Decide agrees with Resolve, that
// Real is where the kernel goes (the deepest existing ancestor's links
// resolved), and that a path reaching a protected file by any name needs
// review.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"docs/meta/commondir", "docs/meta/../meta/config", "docs/editor/x", "notes.txt", "hardlinked.txt",
		"docs/hook", "loop/x", ".env", "pkg", "docs//meta/hooks/x", "./docs/meta", "docs/meta/..", "a/b/c"} {
		f.Add(s)
	}
	p, _ := decideFixture(f)
	f.Fuzz(func(t *testing.T, path string) {
		d, err := p.Decide(path)
		abs, rerr := p.Resolve(path)
		if (err == nil) != (rerr == nil) || (err == nil && d.Abs != abs) {
			t.Fatalf("Decide(%q) = %q, %v; Resolve = %q, %v", path, d.Abs, err, abs, rerr)
		}
		if err != nil {
			return
		}
		existing, rest := d.Abs, ""
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			rest = filepath.Join(filepath.Base(existing), rest)
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil || filepath.Join(real, rest) != d.Real {
			t.Fatalf("Decide(%q).Real = %q; the kernel goes to %q (%v)", path, d.Real, filepath.Join(real, rest), err)
		}
		rel, _ := filepath.Rel(p.realRoot, d.Real)
		if _, ok := Match(ProtectedPaths, rel); ok && d.Review(nil) == "" {
			t.Fatalf("Decide(%q) reaches protected %s without review", path, rel)
		}
	})
}
