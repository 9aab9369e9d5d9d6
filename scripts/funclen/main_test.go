package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportsLongFunctions: a function of 81 lines is reported with its
// receiver and length, one of 80 is not, and testdata is skipped.
func TestReportsLongFunctions(t *testing.T) {
	dir := t.TempDir()
	body := func(name string, lines int) string {
		return name + " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype T struct{}\n\n" + body("func (t *T) Long()", 81) + body("func Short()", 80)
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", "x.go"), []byte("package x\n\n"+body("func Ignored()", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{dir}, 80, &out, &errOut)
	want := "p.go:5:1: T.Long has 81 lines (at most 80)\n"
	if code != 1 || !strings.HasSuffix(out.String(), want) || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("exit %d, output %q (stderr %q), want one line ending %q", code, out.String(), errOut.String(), want)
	}
	out.Reset()
	if code := run([]string{dir}, 81, &out, &errOut); code != 0 || out.Len() != 0 {
		t.Fatalf("with -max 81: exit %d, output %q", code, out.String())
	}
}
