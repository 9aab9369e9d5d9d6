package workspace

import (
	"strings"
)

// windowsDevices are the names Windows gives to devices in every folder,
// with or without an extension (NUL.txt is NUL).
var windowsDevices = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true, "conin$": true, "conout$": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// windowsNameProblem says why Windows would not open the path (a
// relative one, or an absolute one without its volume; either separator)
// under the name it is given, "" when it would: a colon names an alternate
// data stream (go.mod::$DATA is go.mod itself), a trailing dot or space is
// dropped (go.mod. is go.mod), and a device name is a device. Each would
// let a path slip past the protected-path rules, or write somewhere else
// than it says.
func windowsNameProblem(rel string) string {
	for _, name := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' }) {
		if name == "." || name == ".." {
			continue
		}
		switch {
		case strings.ContainsRune(name, ':'):
			return "a colon in " + name + " names an alternate data stream on Windows"
		case strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "):
			return "Windows drops the trailing dot or space of " + name + ", so it names another file"
		}
		base, _, _ := strings.Cut(name, ".")
		if windowsDevices[strings.ToLower(strings.TrimRight(base, " "))] {
			return name + " is a device on Windows, not a file"
		}
	}
	return ""
}
