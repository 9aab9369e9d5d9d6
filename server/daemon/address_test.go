package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store directory another user could write is refused, whoever made it,
// and never chmod-ed; the user's own (or root's, or the user's group's) is
// used.
func TestCheckDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  os.FileMode
		owner int // -1: the test's user
		gid   int // -1: the test's group
		want  string
	}{
		{"the user's, 0700", 0o700, -1, -1, ""},
		{"the user's, 0755", 0o755, -1, -1, ""},
		{"the user's group may write", 0o770, -1, -1, ""},
		{"every user may write", 0o777, -1, -1, "is writable by every user (mode 0777)"},
		{"sticky, as /tmp", 0o777 | os.ModeSticky, -1, -1, "is writable by every user (mode 1777)"},
		{"another group may write", 0o770, -1, 4242, "is writable by group 4242"},
		{"another user's", 0o700, 4242, -1, "belongs to uid 4242"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if (c.owner >= 0 || c.gid >= 0) && os.Getuid() != 0 {
				t.Skip("needs root to chown")
			}
			dir := filepath.Join(t.TempDir(), "d")
			os.Mkdir(dir, 0o700)
			if err := os.Chmod(dir, c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, c.owner, c.gid); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(dir)
			err := storeDir(filepath.Join(dir, "sessions.db"))
			var unsafe *UnsafeDirError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (!errors.As(err, &unsafe) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if _, _, derr := dial(filepath.Join(dir, "sessions.db")); (derr != nil && !IsNoDaemon(derr)) != (c.want != "") {
				t.Fatalf("dial: %v", derr)
			}
			if after, _ := os.Stat(dir); after.Mode() != before.Mode() {
				t.Fatalf("mode changed from %v to %v", before.Mode(), after.Mode())
			}
		})
	}
}
