package workspace

import "testing"

// Windows and macOS path cases, run on every platform: the boundary's
// prefix test per platform style, the names Windows reads otherwise, and
// protected-path matching with either separator and any case.

var (
	windowsStyle = pathStyle{sep: '\\', fold: true}
	macStyle     = pathStyle{sep: '/', fold: true}
	linuxStyle   = pathStyle{sep: '/', fold: false}
)

func TestWithinPerPlatform(t *testing.T) {
	cases := []struct {
		style      pathStyle
		root, path string
		within     bool
		respelled  string
	}{
		{windowsStyle, `c:\Users\me\proj`, `c:\Users\me\proj\a.go`, true, `c:\Users\me\proj\a.go`},
		{windowsStyle, `c:\Users\me\proj`, `C:\USERS\ME\Proj\a.go`, true, `c:\Users\me\proj\a.go`},
		{windowsStyle, `c:\Users\me\proj`, `c:\Users\me\proj`, true, `c:\Users\me\proj`},
		{windowsStyle, `c:\Users\me\proj`, `c:\Users\me\project\a.go`, false, ""},
		{windowsStyle, `c:\Users\me\proj`, `d:\Users\me\proj\a.go`, false, ""},
		{windowsStyle, `c:\`, `C:\x\a.go`, true, `c:\x\a.go`},
		{windowsStyle, `\\server\share\proj`, `\\SERVER\share\proj\a.go`, true, `\\server\share\proj\a.go`},
		{windowsStyle, `c:\proj`, `c:\proj/a.go`, false, ""}, // not clean: Clean makes it c:\proj\a.go first
		{macStyle, `/Users/me/proj`, `/users/ME/proj/a.go`, true, `/Users/me/proj/a.go`},
		{macStyle, `/Users/me/proj`, `/Users/me/proj2/a.go`, false, ""},
		{macStyle, `/`, `/etc/hosts`, true, `/etc/hosts`},
		{linuxStyle, `/home/me/proj`, `/home/me/Proj/a.go`, false, ""},
		{linuxStyle, `/home/me/proj`, `/home/me/proj/a.go`, true, `/home/me/proj/a.go`},
		{linuxStyle, `/home/me/proj`, `/home/me/proj`, true, `/home/me/proj`},
	}
	for _, c := range cases {
		if got := c.style.within(c.root, c.path); got != c.within {
			t.Errorf("%+v within(%q, %q) = %v, want %v", c.style, c.root, c.path, got, c.within)
		}
		got, ok := c.style.respell(c.root, c.path)
		if ok != c.within || got != c.respelled {
			t.Errorf("%+v respell(%q, %q) = %q %v, want %q", c.style, c.root, c.path, got, ok, c.respelled)
		}
	}
}

func TestWindowsNameProblem(t *testing.T) {
	cases := []struct {
		rel string
		bad bool
	}{
		{`src\main.go`, false},
		{`src/main.go`, false},
		{`..\x`, false}, // climbing is the boundary's to refuse
		{`.github\workflows\ci.yml`, false},
		{`go.mod::$DATA`, true},   // the file itself, under another name
		{`src\a.go:hidden`, true}, // an alternate data stream
		{`go.mod.`, true},         // Windows drops the dot: go.mod
		{`go.mod `, true},         // and the space
		{`.git.\config`, true},    // .git\config
		{`NUL`, true},             // a device
		{`src\con.txt`, true},     // a device, extension or not
		{`Com1 .log`, true},       // spaces before the extension too
		{`console.go`, false},     // not a device name
		{`lpt10.txt`, false},      // only LPT1..9
		{`notes...md`, false},     // dots inside are fine
		{`a b\c d.txt`, false},    // spaces inside are fine
	}
	for _, c := range cases {
		if got := windowsNameProblem(c.rel); (got != "") != c.bad {
			t.Errorf("windowsNameProblem(%q) = %q, want a problem: %v", c.rel, got, c.bad)
		}
	}
}

func TestProtectedMatchWindowsAndMacSpellings(t *testing.T) {
	for _, rel := range []string{`.git\config`, `.GIT/config`, `.Git\Hooks\pre-commit`, `.VSCode\Settings.json`, `.github\workflows\CI.yml`} {
		if _, ok := Match(ProtectedPaths, rel); !ok {
			t.Errorf("%q is not protected", rel)
		}
	}
	for _, rel := range []string{`GO.MOD`, `sub\Go.Mod`, `PACKAGE.json`} {
		if _, ok := Match(CommandFiles, rel); !ok {
			t.Errorf("%q is not a command file", rel)
		}
	}
	for _, rel := range []string{`src\main.go`, `docs\git\config.md`} {
		if r, ok := Match(ProtectedPaths, rel); ok {
			t.Errorf("%q matched %q", rel, r.Pattern)
		}
	}
}
