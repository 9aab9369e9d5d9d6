package server_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md names every Go package of the module by its path.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	dirs := map[string]bool{}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "editors") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel("..", filepath.Dir(p))
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only the packages %v", dirs)
	}
	for dir := range dirs {
		if dir != "." && !regexp.MustCompile(`(^|[\s/(])`+regexp.QuoteMeta(dir)+`\b`).MatchString(doc) {
			t.Errorf("docs/architecture.md does not name the package %s", dir)
		}
	}
}
