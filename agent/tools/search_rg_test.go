//go:build unix

package tools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// rgPatterns are the benchmark's patterns: a literal, an expression with a
// required literal, and one whose literal is short and late.
var rgPatterns = []struct{ metric, pattern string }{
	{"x-ripgrep-literal", `ErrUnexpectedEOF`},
	{"x-ripgrep-prefix", `func \w+Handler\(`},
	{"x-ripgrep-regex", `[A-Z][a-z]+Error\(`},
}

// goroot is a copy of Go's own tree (15,000 files) made a git repository,
// shared by the tests and benchmarks of one test binary.
var goroot struct {
	once sync.Once
	dir  string
	err  error
}

// gorootCopy copies GOROOT once into a folder that lives until the test
// binary ends (removed by TestMain's cleanup below).
func gorootCopy(tb testing.TB) string {
	tb.Helper()
	goroot.once.Do(func() {
		dir, err := os.MkdirTemp("", "agent-lsp-goroot-")
		if err != nil {
			goroot.err = err
			return
		}
		goroot.dir = filepath.Join(dir, "go")
		src, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			goroot.err = err
			return
		}
		if out, err := exec.Command("cp", "-a", strings.TrimSpace(string(src)), goroot.dir).CombinedOutput(); err != nil {
			goroot.err = &exec.ExitError{Stderr: out}
			return
		}
		if out, err := exec.Command("git", "init", "-q", goroot.dir).CombinedOutput(); err != nil {
			goroot.err = &exec.ExitError{Stderr: out}
		}
	})
	if goroot.err != nil {
		tb.Fatalf("copying GOROOT: %v", goroot.err)
	}
	return goroot.dir
}

// ripgrep finds rg, failing in CI (whose scripts install it) and skipping
// elsewhere.
func ripgrep(tb testing.TB) string {
	rg, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("rg is not installed: scripts/test-all.sh installs Debian's ripgrep")
		}
		tb.Skip("rg is not installed")
	}
	return rg
}

// rgLines are the path:line pairs ripgrep reports for pattern in dir.
func rgLines(tb testing.TB, rg, dir, pattern string) []string {
	cmd := exec.Command(rg, "-n", "--no-heading", "--hidden", "--glob", "!.git", "--null", "--", pattern, ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil && len(out) > 0 {
		tb.Fatalf("rg %s: %v", pattern, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		path, rest, ok := strings.Cut(l, "\x00")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ":")
		lines = append(lines, strings.TrimPrefix(path, "./")+":"+n)
	}
	sort.Strings(lines)
	return lines
}

// ourLines are the path:line pairs search reports for pattern in the
// project p, with the match limit lifted, and the files it did not search
// for their size.
func ourLines(tb testing.TB, ws *workspace.Workspace, p *workspace.Project, pattern string) ([]string, []string) {
	m, err := newLineMatcher(pattern, false)
	if err != nil {
		tb.Fatal(err)
	}
	q := searchQuery{m: m, limit: 1 << 30}
	found, err := q.run(context.Background(), ws, p)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, l := range found.lines {
		path, rest, _ := strings.Cut(l, ":")
		n, _, _ := strings.Cut(rest, ":")
		lines = append(lines, path+":"+n)
	}
	sort.Strings(lines)
	return lines, found.big
}

// With the limit lifted, search finds on Go's tree exactly the lines
// ripgrep finds (hidden files included, .git left out), but in the files it
// names as too large to search.
func TestSearchMatchesRipgrep(t *testing.T) {
	if testing.Short() {
		t.Skip("copies GOROOT")
	}
	rg := ripgrep(t)
	dir := gorootCopy(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ws := workspace.New(workspace.UTF16)
	p, err := ws.Add("go", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range rgPatterns {
		ours, big := ourLines(t, ws, p, tt.pattern)
		theirs := slices.DeleteFunc(rgLines(t, rg, dir, tt.pattern), func(l string) bool {
			path, _, _ := strings.Cut(l, ":")
			return slices.Contains(big, path)
		})
		if len(theirs) < 10 {
			t.Fatalf("%s: ripgrep found only %d lines: the tree is not Go's", tt.pattern, len(theirs))
		}
		if !slices.Equal(ours, theirs) {
			t.Errorf("%s: %d lines, ripgrep %d; only ours: %v; only ripgrep's: %v", tt.pattern, len(ours), len(theirs),
				first(missing(ours, theirs), 10), first(missing(theirs, ours), 10))
		}
	}
}

// missing lists what a has and b lacks (both sorted).
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// BenchmarkSearch times search against ripgrep on a copy of Go's tree
// (15,000 files, warm cache), the two run alternately, and reports for each
// pattern the ratio of the medians of their times (x-ripgrep-*: 1 is
// ripgrep's speed). Goals: literal ≤ 2, prefix ≤ 3, regex ≤ 10.
func BenchmarkSearch(b *testing.B) {
	rg := ripgrep(b)
	dir := gorootCopy(b)
	ws := workspace.New(workspace.UTF16)
	p, err := ws.Add("go", dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range rgPatterns {
		m, err := newLineMatcher(tt.pattern, false)
		if err != nil {
			b.Fatal(err)
		}
		var ours, theirs []time.Duration
		runs := max(b.N, 5)
		for range runs {
			start := time.Now()
			q := searchQuery{m: m, limit: 1 << 30}
			if _, err := q.run(ctx, ws, p); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(start))
			start = time.Now()
			cmd := exec.Command(rg, "-n", "--no-heading", "--hidden", "--glob", "!.git", "--", tt.pattern, ".")
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout = &out
			cmd.Run()
			theirs = append(theirs, time.Since(start))
		}
		b.ReportMetric(float64(median(ours))/float64(median(theirs)), tt.metric)
		b.ReportMetric(float64(median(ours).Microseconds())/1000, strings.TrimPrefix(tt.metric, "x-ripgrep-")+"-ms")
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
