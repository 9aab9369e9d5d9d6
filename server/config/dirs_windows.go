package config

import "path/filepath"

// platformStateDir is where Windows keeps a user's local application
// state: %LOCALAPPDATA% (which only the user, SYSTEM and the
// Administrators can enter), "" when it is unset or relative.
func platformStateDir(getenv func(string) string) string {
	if dir := getenv("LOCALAPPDATA"); filepath.IsAbs(dir) {
		return dir
	}
	return ""
}

// privateDir is false: a folder's mode says nothing of who may enter it on
// Windows, so privateTempDir makes a new folder of its own.
func privateDir(string) bool { return false }
