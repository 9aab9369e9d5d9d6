//go:build !windows

package sandbox

// findToken: only Windows has restricted tokens (wintoken.go).
func findToken(string) (bool, error) { return false, nil }
