package tools

import (
	"testing"
	"unicode/utf8"
)

// Clip never splits a character: a model or an editor shown a clipped line
// gets valid UTF-8.
func TestClipKeepsCharactersWhole(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"héllo", 2, "h…"},
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
	} {
		got := Clip(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
