//go:build !darwin

package sandbox

import "errors"

func checkSeatbelt([]string) error { return errors.New("seatbelt is macOS's") }
