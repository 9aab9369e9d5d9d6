package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// fixture copies testdata/workspaces/name into a temp dir (outside any git
// repository) and returns its path.
func fixture(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join("..", "testdata", "workspaces", name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		fixture string
		git     func(t *testing.T, dir string) // makes a .git for the case, if any
		want    Info
	}{
		{"go", nil, Info{Type: Go, TechStack: TechStack{Language: "go", LanguageVersion: "1.22", PackageManager: "go modules", BuildCommand: "go build ./...", TestCommand: "go test ./...", Manifests: []string{"go.mod"}}}},
		{"rust", nil, Info{Type: Rust, TechStack: TechStack{Language: "rust", LanguageVersion: "1.79", PackageManager: "cargo", BuildCommand: "cargo build", TestCommand: "cargo test", Manifests: []string{"Cargo.toml"}}}},
		{"python", nil, Info{Type: Python, TechStack: TechStack{Language: "python", LanguageVersion: "3.12.1", PackageManager: "pip", BuildCommand: "python -m compileall -q .", TestCommand: "python -m pytest", Manifests: []string{"pyproject.toml"}}}},
		{"python-uv", nil, Info{Type: Python, TechStack: TechStack{Language: "python", PackageManager: "uv", BuildCommand: "uv run python -m compileall -q .", TestCommand: "uv run python -m pytest", Manifests: []string{"requirements.txt"}}}},
		{"javascript", nil, Info{Type: JavaScript, TechStack: TechStack{Language: "javascript", LanguageVersion: ">=20", PackageManager: "npm", TestCommand: "npm test", Manifests: []string{"package.json"}}}},
		{"typescript", nil, Info{Type: TypeScript, TechStack: TechStack{Language: "typescript", PackageManager: "pnpm", BuildCommand: "pnpm run build", TestCommand: "pnpm test", Manifests: []string{"package.json"}}}},
		{"typescript-dep", nil, Info{Type: TypeScript, TechStack: TechStack{Language: "typescript", PackageManager: "yarn", BuildCommand: "npx tsc --noEmit", Manifests: []string{"package.json"}}}},
		{"elixir", nil, Info{Type: Elixir, TechStack: TechStack{Language: "elixir", LanguageVersion: "1.16.2", PackageManager: "mix", BuildCommand: "mix compile", TestCommand: "mix test", Manifests: []string{"mix.exs"}}}},
		{"multi", nil, Info{Type: Go, TechStack: TechStack{Language: "go", LanguageVersion: "1.26", PackageManager: "go modules", BuildCommand: "go build ./...", TestCommand: "go test ./...", Manifests: []string{"go.mod", "package.json"}, Others: []Type{JavaScript}}}},
		{"unknown", nil, Info{Type: Unknown, TechStack: TechStack{Language: "unknown"}}},
		{"go", gitBranch("feature/x"), Info{Type: Go, GitBranch: "feature/x"}},
		{"go", gitDetached("0123456789abcdef0123456789abcdef01234567"), Info{Type: Go, GitBranch: "0123456"}},
		{"go", gitWorktree("wt-branch"), Info{Type: Go, GitBranch: "wt-branch"}},
	}
	for _, tt := range tests {
		name := tt.fixture
		if tt.git != nil {
			name += "/git"
		}
		t.Run(name, func(t *testing.T) {
			dir := fixture(t, tt.fixture)
			if tt.git != nil {
				tt.git(t, dir)
			}
			got := Detect(dir)
			if tt.git != nil { // these cases check the branch only
				if got.Type != tt.want.Type || got.GitBranch != tt.want.GitBranch {
					t.Fatalf("got %s on %q, want %s on %q", got.Type, got.GitBranch, tt.want.Type, tt.want.GitBranch)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func gitBranch(branch string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/"+branch+"\n")
	}
}

func gitDetached(sha string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, ".git", "HEAD"), sha+"\n") }
}

// gitWorktree makes dir a linked worktree: .git is a file naming a gitdir elsewhere.
func gitWorktree(branch string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		gitdir := filepath.Join(t.TempDir(), "main", ".git", "worktrees", "wt")
		writeFile(t, filepath.Join(gitdir, "HEAD"), "ref: refs/heads/"+branch+"\n")
		writeFile(t, filepath.Join(dir, ".git"), "gitdir: "+gitdir+"\n")
	}
}

func TestDetectRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := fixture(t, "go")
	for _, args := range [][]string{{"init", "-q", "-b", "trunk"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}, {"worktree", "add", "-q", "-b", "side", filepath.Join(dir, "..", "wt")}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if b := Detect(dir).GitBranch; b != "trunk" {
		t.Errorf("main checkout: %q", b)
	}
	if b := Detect(filepath.Join(dir, "..", "wt")).GitBranch; b != "side" {
		t.Errorf("worktree: %q", b)
	}
	if b := Detect(t.TempDir()).GitBranch; b != "" {
		t.Errorf("outside git: %q", b)
	}
}

func TestRegistry(t *testing.T) {
	w := New(UTF16)
	outer := fixture(t, "go")
	inner := filepath.Join(outer, "sub")
	os.Mkdir(inner, 0o755)
	a, err := w.Add("web", outer)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := w.Add("web", inner)
	if a.Name() != "web" || b.Name() != "web-2" {
		t.Fatalf("names %q %q", a.Name(), b.Name())
	}
	if p, _ := w.ProjectFor(filepath.Join(inner, "x.go")); p != b {
		t.Fatal("nested folder: longest root must win")
	}
	if p, _ := w.ProjectFor(filepath.Join(outer, "x.go")); p != a {
		t.Fatal("outer file")
	}
	if _, ok := w.ProjectFor("/elsewhere/x.go"); ok {
		t.Fatal("file outside every project found a project")
	}
	if n, err := w.Rename("web-2", "web"); err != nil || n != "web-2" {
		t.Fatalf("rename onto a taken name: %q %v", n, err)
	}
	if n, _ := w.Rename("web-2", "api"); n != "api" {
		t.Fatalf("rename: %q", n)
	}
	if _, ok := w.Project("api"); !ok {
		t.Fatal("lookup after rename")
	}
	if !w.Remove("api") || w.Remove("api") {
		t.Fatal("remove")
	}
	if _, err := w.Add("x", filepath.Join(outer, "go.mod")); err == nil {
		t.Fatal("a file is not a folder")
	}
}

func TestContextIsolation(t *testing.T) {
	w := New(UTF16)
	a, _ := w.Add("a", fixture(t, "go"))
	b, _ := w.Add("b", fixture(t, "rust"))
	done := make(chan bool)
	for _, p := range []*Project{a, b} {
		go func() {
			for i := 0; i < 500; i++ {
				p.SetBuild(Outcome{Status: StatusFailed, Summary: p.Name()})
				p.AddError(p.Name())
				p.Snapshot()
			}
			done <- true
		}()
	}
	<-done
	<-done
	for _, p := range []*Project{a, b} {
		s := p.Snapshot()
		if s.Context.LastBuild.Summary != p.Name() || s.Context.LastTest.Status != StatusUnknown {
			t.Errorf("%s: build %+v test %+v", p.Name(), s.Context.LastBuild, s.Context.LastTest)
		}
		if len(s.Context.RecentErrors) != MaxRecentErrors {
			t.Errorf("%s: %d recent errors", p.Name(), len(s.Context.RecentErrors))
		}
		for _, e := range s.Context.RecentErrors {
			if e != p.Name() {
				t.Fatalf("%s sees %q", p.Name(), e)
			}
		}
	}
}

func TestSnapshotVersion(t *testing.T) {
	w := New(UTF16)
	root := fixture(t, "go")
	p, _ := w.Add("a", root)
	s1 := p.Snapshot()
	if s2 := p.Snapshot(); s2.Version != s1.Version {
		t.Fatal("version changed without a change")
	}
	w.Open(filepath.Join(root, "main.go"), 1, "package main")
	s3 := p.Snapshot()
	if s3.Version == s1.Version || !reflect.DeepEqual(s3.Context.OpenFiles, []string{"main.go"}) {
		t.Fatalf("after open: version %d, open %v", s3.Version, s3.Context.OpenFiles)
	}
	p.AddError("boom")
	if s4 := p.Snapshot(); s4.Version == s3.Version || s4.Context.RecentErrors[0] != "boom" {
		t.Fatal("error did not change the snapshot")
	}
	w.Close(filepath.Join(root, "main.go"))
	if s5 := p.Snapshot(); len(s5.Context.OpenFiles) != 0 {
		t.Fatal("close")
	}
}

func TestOverlayReads(t *testing.T) {
	w := New(UTF16)
	root := fixture(t, "go")
	p, err := w.Add("go", root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "main.go")
	w.Open(path, 1, "unsaved")
	if b, _ := w.ReadFile(p, path, MaxReadSize); string(b) != "unsaved" {
		t.Fatalf("read through overlay: %q", b)
	}
	w.Close(path)
	if b, _ := w.ReadFile(p, path, MaxReadSize); string(b) != "package main\n\nfunc main() {}\n" {
		t.Fatalf("read from disk: %q", b)
	}
	if err := w.Change(path, 2, nil); err == nil {
		t.Fatal("change of a closed document")
	}
}
