package sandbox

import (
	"slices"
	"testing"
)

// TestCommandProcs: macOS's helper finds every process of its command (its
// descendants, its session's, and those seen before that lost their
// parent), and no other (an unrelated process, a reused pid, launchd).
func TestCommandProcs(t *testing.T) {
	const self = 100
	table := []procInfo{
		{proc{1, 1}, 0, 1},          // launchd
		{proc{self, 10}, 50, self},  // the helper, leading its session
		{proc{101, 11}, self, self}, // sandbox-exec's sh
		{proc{102, 12}, 101, 102},   // a child that called setsid: a descendant still
		{proc{103, 13}, 1, self},    // an orphan that stayed in the session
		{proc{104, 14}, 1, 104},     // left the session, lost its parent: seen before
		{proc{105, 15}, 104, 104},   // its child, never seen
		{proc{106, 99}, 1, 106},     // a pid seen before, reused by another process
		{proc{107, 17}, 1, 107},     // unrelated
		{proc{108, 18}, 50, 50},     // the server's other child
	}
	seen := map[proc]bool{{104, 14}: true, {106, 16}: true, {109, 19}: true}
	var got []int
	for _, p := range commandProcs(table, self, self, seen) {
		got = append(got, p.pid)
	}
	slices.Sort(got)
	if want := []int{101, 102, 103, 104, 105}; !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	if seen[proc{106, 16}] || seen[proc{109, 19}] || !seen[proc{105, 15}] {
		t.Errorf("seen %v: ended processes kept, or a found one not added", seen)
	}
	// Not a session leader (an MCP server's helper): descendants only.
	got = got[:0]
	for _, p := range commandProcs(table, self, 0, map[proc]bool{}) {
		got = append(got, p.pid)
	}
	slices.Sort(got)
	if want := []int{101, 102}; !slices.Equal(got, want) {
		t.Errorf("without a session: found %v, want %v", got, want)
	}
}
