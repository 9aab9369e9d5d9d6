//go:build !linux && !darwin && !windows

package sandbox

import "errors"

// Elsewhere than Linux, macOS and Windows nothing is confined, and the
// helper never runs.
func runHelper(o *opts) error {
	return errors.New("the sandbox helper runs only on Linux, macOS and Windows")
}
