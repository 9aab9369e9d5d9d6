// Command funclen reports every Go function or method longer than a limit
// (80 lines by default) in the folders it is given, tests included. A
// function's length counts its lines from the func keyword to its closing
// brace; the doc comment is not counted. It exits 1 when it reports any.
//
//	go run ./scripts/funclen [-max 80] server agent store workspace
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// long is one function over the limit.
type long struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	max := flag.Int("max", 80, "the most lines a function may have")
	flag.Parse()
	os.Exit(run(flag.Args(), *max, os.Stdout, os.Stderr))
}

// run checks the Go files under roots and prints what is too long to
// stdout; it returns the exit code.
func run(roots []string, max int, stdout, stderr io.Writer) int {
	if len(roots) == 0 {
		fmt.Fprintln(stderr, "usage: funclen [-max N] DIR...")
		return 2
	}
	var found []long
	for _, root := range roots {
		l, err := check(root, max)
		if err != nil {
			fmt.Fprintf(stderr, "funclen: %v\n", err)
			return 2
		}
		found = append(found, l...)
	}
	for _, l := range found {
		fmt.Fprintf(stdout, "%s: %s has %d lines (at most %d)\n", l.pos, l.name, l.lines, max)
	}
	if len(found) > 0 {
		return 1
	}
	return 0
}

// check parses every .go file under root (skipping testdata and hidden
// folders, as the go tool does) and returns its functions over max lines,
// in file order.
func check(root string, max int) ([]long, error) {
	fset := token.NewFileSet()
	var found []long
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		found = append(found, longFuncs(fset, f, max)...)
		return nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].pos.Filename < found[j].pos.Filename })
	return found, err
}

// longFuncs returns the function declarations of f longer than max lines.
func longFuncs(fset *token.FileSet, f *ast.File, max int) []long {
	var found []long
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Type.Func), fset.Position(fn.Body.Rbrace)
		if n := end.Line - start.Line + 1; n > max {
			found = append(found, long{pos: start, name: funcName(fn), lines: n})
		}
	}
	return found
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
