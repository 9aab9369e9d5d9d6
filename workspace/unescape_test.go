package workspace

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// TestIgnoreEscapes: a gitignore line's backslash escapes match as git
// says on every platform. go-git matches with filepath.Match, which on
// Windows reads '\' as a separator: without unescape, each of the escaped
// cases below matches nothing there (shown under Wine: scripts/wine-test.sh).
func TestIgnoreEscapes(t *testing.T) {
	for _, tc := range []struct {
		line  string
		match []string
		not   []string
	}{
		{`\#hash.txt`, []string{"#hash.txt"}, []string{"hash.txt"}},
		{`\!bang`, []string{"!bang"}, []string{"bang"}},
		{`a\*b`, []string{"a*b"}, []string{"axb", "ab"}},
		{`what\?`, []string{"what?"}, []string{"whatx"}},
		{`\[x]`, []string{"[x]"}, []string{"x"}},
		{`trail\ `, []string{"trail "}, []string{"trail"}},
		{`*.go`, []string{"a.go"}, []string{"a.gox"}},
		{`[ab]\*`, []string{"a*"}, []string{"ab", "c*"}},
	} {
		p := gitignore.ParsePattern(unescape(tc.line), nil)
		for _, name := range tc.match {
			if p.Match([]string{name}, false) != gitignore.Exclude {
				t.Errorf("%q (as %q) does not match %q", tc.line, unescape(tc.line), name)
			}
		}
		for _, name := range tc.not {
			if p.Match([]string{name}, false) != gitignore.NoMatch {
				t.Errorf("%q (as %q) matches %q", tc.line, unescape(tc.line), name)
			}
		}
	}
}
