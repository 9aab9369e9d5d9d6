package sample

import "testing"

func TestGreet(t *testing.T) {
	if Greet("Ada") == "" {
		t.Fatal("empty greeting")
	}
}
