package server

import (
	"testing"

	"github.com/agent-lsp/agent-lsp/server/session"
	"go.lsp.dev/uri"
)

// File URIs as VS Code sends them on Windows and macOS, turned into paths
// of that platform, and paths turned back into the URIs VS Code expects
// (run on every platform).
func TestFileURIsPerPlatform(t *testing.T) {
	cases := []struct {
		platform uri.Platform
		uri      string
		path     string
	}{
		{uri.PlatformWindows, "file:///c%3A/Users/me/proj/main.go", `c:\Users\me\proj\main.go`},
		{uri.PlatformWindows, "file:///c%3A/Users/me/my%20proj/%C3%A9t%C3%A9.go", `c:\Users\me\my proj\été.go`},
		{uri.PlatformWindows, "file://server/share/proj/a.go", `\\server\share\proj\a.go`},
		{uri.PlatformPOSIX, "file:///Users/me/My%20Project/a.go", "/Users/me/My Project/a.go"},
		{uri.PlatformPOSIX, "file:///home/me/proj/a.go", "/home/me/proj/a.go"},
	}
	for _, c := range cases {
		if got := session.FilenameOn(c.platform, c.uri); got != c.path {
			t.Errorf("session.FilenameOn(%v, %q) = %q, want %q", c.platform, c.uri, got, c.path)
		}
		if got := string(uri.FileFor(c.platform, c.path)); got != c.uri {
			t.Errorf("FileFor(%v, %q) = %q, want %q", c.platform, c.path, got, c.uri)
		}
	}
	// VS Code's spellings of one Windows file are one path: an upper-case
	// drive letter, an unescaped colon.
	for _, u := range []string{"file:///C:/Users/me/a.go", "file:///c:/Users/me/a.go", "file:///C%3A/Users/me/a.go"} {
		if got := session.FilenameOn(uri.PlatformWindows, u); got != `c:\Users\me\a.go` {
			t.Errorf("session.FilenameOn(windows, %q) = %q", u, got)
		}
	}
	if got := session.FilenameOn(uri.PlatformWindows, "untitled:Untitled-1"); got != "untitled:Untitled-1" {
		t.Errorf("a URI of another scheme changed: %q", got)
	}
}
