package session

import (
	"fmt"
	"runtime"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Filename is the path a file URI names on this platform (a string that is
// no file: URI is returned as it is), for both front ends' URIs.
func Filename(u string) string { return FilenameOn(hostPlatform(), u) }

// hostPlatform is how this platform spells paths in file URIs.
func hostPlatform() uri.Platform {
	if runtime.GOOS == "windows" {
		return uri.PlatformWindows
	}
	return uri.PlatformPOSIX
}

// FilenameOn turns a file URI into a path of platform, as VS Code does:
// file:///c%3A/Users/me/a.go is c:\Users\me\a.go on Windows.
func FilenameOn(platform uri.Platform, u string) string {
	if !strings.HasPrefix(u, "file:") {
		return u
	}
	if parsed, err := uri.Parse(u); err == nil {
		return uri.FsPathFor(parsed, platform, false)
	}
	return strings.TrimPrefix(u, "file://")
}

// Decided is the decision on an edit's path: the tool's, and for an edit
// that comes without one, decided now. A path that cannot be decided (it
// left its project since) needs the user's confirmation, for that reason.
func Decided(ws *workspace.Workspace, fe tools.FileEdit) (workspace.Decision, error) {
	if fe.Decision.Abs == fe.Path && fe.Path != "" {
		return fe.Decision, nil
	}
	_, d, err := ws.Decide(fe.Path)
	if err != nil {
		return d, fmt.Errorf("its path cannot be decided: %w", err)
	}
	return d, nil
}
