package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes files (slash paths to contents) below root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// walked lists what Project.Walk visits below dir, as relative paths.
func walked(t *testing.T, p *Project, dir string) []string {
	t.Helper()
	var got []string
	err := p.Walk(context.Background(), filepath.Join(p.Root(), dir), func(abs, rel string, d fs.DirEntry) error {
		if abs != filepath.Join(p.Root(), filepath.FromSlash(rel)) {
			t.Errorf("%s: abs %s", rel, abs)
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// isolatedGit keeps the user's own git configuration and excludes out of a
// test, and returns the folder that stands for $XDG_CONFIG_HOME.
func isolatedGit(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	return filepath.Join(home, ".config")
}

// A walk leaves out what git leaves out: nested .gitignore files (a deeper
// one re-including what a higher one excluded), .ignore files (which win),
// the repository's info/exclude and the user's global excludes; it visits
// hidden files and vendor folders (no fixed skip list) but never .git.
func TestWalkHonoursIgnoreFiles(t *testing.T) {
	config := isolatedGit(t)
	root := t.TempDir()
	tree(t, root, map[string]string{
		".git/HEAD":           "ref: refs/heads/main\n",
		".git/info/exclude":   "# local\nscratch/\n",
		".gitignore":          "*.log\n/build/\nnode_modules/\n!keep.log\n",
		".env.example":        "A=1\n",
		".github/ci.yml":      "on: push\n",
		"a.go":                "package a\n",
		"debug.log":           "x\n",
		"keep.log":            "kept\n",
		"build/out.bin":       "x\n",
		"sub/build/made.go":   "package made\n", // /build/ is anchored at the top
		"sub/.gitignore":      "*.tmp\n!important.log\n",
		"sub/x.tmp":           "x\n",
		"sub/important.log":   "kept\n",
		"sub/y.go":            "package sub\n",
		"vendor/m/m.go":       "package m\n",
		"node_modules/p/i.js": "x\n",
		"scratch/notes.txt":   "x\n",
		"gen/.ignore":         "*.pb.go\n",
		"gen/api.pb.go":       "package gen\n",
		"gen/api.go":          "package gen\n",
		"secret.key":          "x\n",
		"nested/.gitignore":   "\\#hash.txt\n",
		"nested/#hash.txt":    "x\n",
	})
	tree(t, config, map[string]string{"git/ignore": "*.key\n"})
	p := New(UTF16)
	proj, err := p.Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	got := walked(t, proj, ".")
	want := []string{".env.example", ".github/ci.yml", ".gitignore", "a.go", "gen/.ignore", "gen/api.go",
		"keep.log", "nested/.gitignore", "sub/.gitignore", "sub/build/made.go", "sub/important.log", "sub/y.go", "vendor/m/m.go"}
	if !slices.Equal(got, want) {
		t.Errorf("walked\n  %s\nwant\n  %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	// A walk of a subfolder applies the ignore files above it.
	if got := walked(t, proj, "sub"); !slices.Equal(got, []string{"sub/.gitignore", "sub/build/made.go", "sub/important.log", "sub/y.go"}) {
		t.Errorf("walked sub: %v", got)
	}
	// An ignored folder walked by name yields nothing.
	if got := walked(t, proj, "build"); len(got) != 0 {
		t.Errorf("walked build: %v", got)
	}
}

// A project that is a folder of a repository honours the repository's
// ignore files above it, with their anchors where git puts them.
func TestWalkProjectBelowRepositoryTop(t *testing.T) {
	isolatedGit(t)
	top := t.TempDir()
	tree(t, top, map[string]string{
		".git/HEAD":         "ref: refs/heads/main\n",
		".gitignore":        "*.o\n/svc/tmp/\n/other/\n",
		"svc/.gitignore":    "dist/\n",
		"svc/main.c":        "int main;\n",
		"svc/main.o":        "x",
		"svc/tmp/t.c":       "x",
		"svc/dist/d.js":     "x",
		"svc/lib/other/o.c": "x", // /other/ is anchored at the top: not this one
	})
	proj, err := New(UTF16).Add("svc", filepath.Join(top, "svc"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := walked(t, proj, "."), []string{".gitignore", "lib/other/o.c", "main.c"}; !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
}

// Without .git the ignore files still apply (a project need not be a
// repository), a huge or special ignore file does no harm, and a symlink is
// visited as an entry, not followed.
func TestWalkHostileIgnoreFiles(t *testing.T) {
	isolatedGit(t)
	root := t.TempDir()
	tree(t, root, map[string]string{"a.txt": "a", "b.txt": "b", "d/c.txt": "c"})
	// A .gitignore of 1 MiB whose early lines ignore b.txt: what lies past
	// the bound is not read, what lies within it is honoured.
	big := "b.txt\n" + strings.Repeat("#"+strings.Repeat("x", 98)+"\n", 10<<10) + "a.txt\n"
	tree(t, root, map[string]string{".gitignore": big})
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "d", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	proj, err := New(UTF16).Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := walked(t, proj, "."), []string{".gitignore", "a.txt", "d/.gitignore", "d/c.txt", "etc"}; !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
}

// A cancelled walk stops with the context's error.
func TestWalkCancelled(t *testing.T) {
	isolatedGit(t)
	root := t.TempDir()
	tree(t, root, map[string]string{"a/1": "", "b/2": ""})
	proj, err := New(UTF16).Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = proj.Walk(ctx, root, func(string, string, fs.DirEntry) error { n++; cancel(); return nil })
	if err != context.Canceled || n != 1 {
		t.Errorf("err %v after %d files, want context.Canceled after 1", err, n)
	}
}
