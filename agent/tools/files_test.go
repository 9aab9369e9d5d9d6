package tools

import (
	"fmt"
	"strings"
	"testing"
)

// read_file numbers lines as %5d did, wider numbers included.
func TestWriteNumbered(t *testing.T) {
	for _, n := range []int{1, 9, 10, 99, 999, 9999, 10000, 99999, 100000, 1234567} {
		var got strings.Builder
		writeNumbered(&got, n, "\tline")
		if want := fmt.Sprintf("%5d| %s\n", n, "\tline"); got.String() != want {
			t.Errorf("line %d: %q, want %q", n, got.String(), want)
		}
	}
}
