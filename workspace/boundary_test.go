package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// boundaryFixture makes a project with links in and out of its root.
func boundaryFixture(t testing.TB) (*Project, string, string) {
	base := t.TempDir()
	root := filepath.Join(base, "proj")
	outside := filepath.Join(base, "outside")
	writeFile(t, filepath.Join(root, "a", "b.txt"), "b")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret")
	links := map[string]string{
		"file-out": filepath.Join(outside, "secret.txt"),
		"dir-out":  outside,
		"dir-in":   filepath.Join(root, "a"),
		"file-in":  filepath.Join(root, "a", "b.txt"),
		"dangling": filepath.Join(outside, "nothing-here"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(UTF16).Add("proj", root)
	if err != nil {
		t.Fatal(err)
	}
	return p, root, outside
}

func TestResolve(t *testing.T) {
	p, root, outside := boundaryFixture(t)
	tests := []struct {
		path string
		want string // "" means refused
	}{
		{"a/b.txt", filepath.Join(root, "a/b.txt")},
		{"./a/../a/b.txt", filepath.Join(root, "a/b.txt")},
		{"new/file.go", filepath.Join(root, "new/file.go")},
		{filepath.Join(root, "a", "b.txt"), filepath.Join(root, "a/b.txt")},
		{".", root},
		{"dir-in/b.txt", filepath.Join(root, "dir-in/b.txt")},
		{"file-in", filepath.Join(root, "file-in")},
		{"../x", ""},
		{"a/../../x", ""},
		{"../proj/a/b.txt", filepath.Join(root, "a/b.txt")},
		{filepath.Join(outside, "secret.txt"), ""},
		{"/etc/passwd", ""},
		{"file-out", ""},
		{"dir-out/secret.txt", ""},
		{"dir-out", ""},
		{"dir-out/new-file.txt", ""},
		{"dir-out/new/deeper/file.txt", ""},
		{"dangling", ""},
		{"a/b.txt/not-a-dir", filepath.Join(root, "a/b.txt/not-a-dir")},
		{"", ""},
		{"a\x00b", ""},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.path, "/", "|"), func(t *testing.T) {
			got, err := p.Resolve(tt.path)
			if tt.want == "" {
				var be *BoundaryError
				if !errors.As(err, &be) {
					t.Fatalf("Resolve(%q) = %q, %v; want a boundary error", tt.path, got, err)
				}
				if !strings.Contains(err.Error(), `"proj"`) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.path)) {
					t.Fatalf("error does not name project and path: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// FuzzResolve checks that no input yields a path outside the root, following links.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a/b.txt", "../x", "a/../../x", "/etc/passwd", "dir-out/x", "file-out", "dir-in/../../x", "./././a", "a//b", "dir-in/b.txt", "\x00", "..", "dir-out/../a"} {
		f.Add(s)
	}
	p, _, _ := boundaryFixture(f)
	f.Fuzz(func(t *testing.T, path string) {
		got, err := p.Resolve(path)
		if err != nil {
			return
		}
		if !within(p.root, got) {
			t.Fatalf("Resolve(%q) = %q: outside root %s", path, got, p.root)
		}
		// Follow links through the nearest existing ancestor.
		existing := got
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil {
			t.Fatalf("Resolve(%q) = %q whose links do not resolve: %v", path, got, err)
		}
		if !within(p.realRoot, real) {
			t.Fatalf("Resolve(%q) = %q, which leads to %s outside the root", path, got, real)
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	for _, files := range []int{10, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			p := projectWithFiles(b, files)
			for i := 0; i < b.N; i++ {
				if _, err := p.Resolve("pkg3/file3.go"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	for _, files := range []int{10, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			p := projectWithFiles(b, files)
			for i := 0; i < b.N; i++ {
				p.AddError("e") // a change, so the snapshot is rebuilt each time
				if s := p.Snapshot(); s.Name == "" {
					b.Fatal("empty snapshot")
				}
			}
		})
	}
}

func projectWithFiles(b *testing.B, n int) *Project {
	root := b.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n\ngo 1.26\n"), 0o644)
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%d", i%100))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%d.go", i)), []byte("package x\n"), 0o644)
	}
	p, err := New(UTF16).Add("bench", root)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return p
}

// A project folder replaced by a link after it was added, or a root that
// is a link retargeted since, does not lead Resolve out of the project.
func TestResolveRootReplaced(t *testing.T) {
	t.Run("folder replaced by a link", func(t *testing.T) {
		dir := t.TempDir()
		root, outside := filepath.Join(dir, "proj"), filepath.Join(dir, "outside")
		os.Mkdir(root, 0o755)
		os.Mkdir(outside, 0o755)
		os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
		p, err := New(UTF16).Add("p", root)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Resolve("secret"); err != nil {
			t.Fatalf("before the swap: %v", err)
		}
		os.Rename(root, root+".old")
		os.Symlink(outside, root)
		for _, path := range []string{"secret", "new-file", filepath.Join(root, "secret")} {
			if got, err := p.Resolve(path); err == nil {
				t.Errorf("Resolve(%q) = %q, into the folder the link points to", path, got)
			}
		}
	})
	t.Run("root link retargeted", func(t *testing.T) {
		dir := t.TempDir()
		real, outside, link := filepath.Join(dir, "real"), filepath.Join(dir, "outside"), filepath.Join(dir, "link")
		os.Mkdir(real, 0o755)
		os.Mkdir(outside, 0o755)
		os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
		os.Symlink(real, link)
		p, err := New(UTF16).Add("p", link)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Resolve("secret"); err != nil {
			t.Fatalf("before the retarget: %v", err)
		}
		os.Remove(link)
		os.Symlink(outside, link)
		if got, err := p.Resolve("secret"); err == nil {
			t.Errorf("Resolve(secret) = %q, through the retargeted link", got)
		}
	})
}

// below agrees with filepath.Rel wherever it answers, and answers for the
// clean paths inside a root that Resolve returns.
func FuzzBelow(f *testing.F) {
	for _, s := range [][2]string{{"/w/p", "/w/p/a.go"}, {"/w/p", "/w/p"}, {"/w/p", "/w/pq/a"}, {"/w/p", "/w/p/../x"},
		{"/w/p", "/w/p//a"}, {"/w/p", "/w/p/./a"}, {"/w/p", "/w/p/a/"}, {"/", "/a/b"}, {"/", "/"}, {"/w/p", "/w/p/a/.."}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, root, path string) {
		root = filepath.Clean("/" + root) // roots are clean and absolute
		rel, ok := below(root, path)
		if !ok {
			return
		}
		want, err := filepath.Rel(root, path)
		if err != nil || rel != want || want == "." || want == ".." || strings.HasPrefix(want, "../") {
			t.Fatalf("below(%q, %q) = %q; filepath.Rel gives %q, %v", root, path, rel, want, err)
		}
	})
}

func TestBelow(t *testing.T) {
	tests := []struct {
		root, path, rel string
		ok              bool
	}{
		{"/w/p", "/w/p/a.go", "a.go", true},
		{"/w/p", "/w/p/d/a.go", "d/a.go", true},
		{"/", "/a/b", "a/b", true},
		{"/w/p", "/w/p", "", false},
		{"/w/p", "/w/pq/a", "", false},
		{"/w/p", "/w/p/../x", "", false},
		{"/w/p", "/w/p//a", "", false},
		{"/w/p", "/w/p/a/", "", false},
	}
	native := func(p string) string { return p }
	if runtime.GOOS == "windows" {
		native = func(p string) string { return `C:` + filepath.FromSlash(p) }
	}
	for _, tt := range tests {
		tt.root, tt.path, tt.rel = native(tt.root), native(tt.path), filepath.FromSlash(tt.rel)
		if rel, ok := below(tt.root, tt.path); ok != tt.ok || (ok && rel != tt.rel) {
			t.Errorf("below(%q, %q) = %q, %v; want %q, %v", tt.root, tt.path, rel, ok, tt.rel, tt.ok)
		}
	}
}
