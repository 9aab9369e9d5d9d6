package main

import (
	"fmt"
	"os"
)

// Access modes, as access(2)'s.
const (
	accessX = 0x1
	accessW = 0x2
)

// access checks that this user may use path as mode says, as far as
// Windows tells without opening it: a file with the read-only attribute
// cannot be written (folders' read-only attribute does not stop writes;
// access lists are left to the open that follows).
func access(path string, mode uint32) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if mode&accessW != 0 && !fi.IsDir() && fi.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%s is read-only", path)
	}
	return nil
}
