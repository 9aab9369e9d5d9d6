//go:build !darwin

package sandbox

import "errors"

func checkSeatbelt([]string) error { return errors.New("Seatbelt is macOS's") }
