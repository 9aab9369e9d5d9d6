package shellrule

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// decideCases are TestDecide's lines, under its rules: allow "go test *",
// "go vet ./...", "npm run test:*", "echo *", "ls", "sleep *", "make",
// "env *"; deny "rm *", "git push *".
var decideCases = []decideCase{
	// Allowed: every simple command matches a rule, nothing runs behind it.
	{"go test ./...", Allow, ""},
	{"go test ./... -run 'TestGreet$'", Allow, ""},
	{"go test -run \"Test Greet\" ./...", Allow, ""},
	{"go test ./... 2>&1", Allow, ""},
	{"go test ./... >/dev/null 2>&1", Allow, ""},
	{"go test ./... && go vet ./...", Allow, ""},
	{"go test ./... | echo done", Allow, ""},
	{"npm run test:unit", Allow, ""},
	{"ls", Allow, ""},
	{"env", Allow, ""}, // lists the environment: runs nothing
	{"env -0", Allow, ""},
	{"(go test ./... || echo failed)", Allow, ""},
	{"go test ./... <input.txt", Allow, ""},

	// --allow "go test *" must not run what follows an operator, a substitution or a pipe.
	{"go test ./... ; touch x", Ask, `no allow rule matches "touch x"`},
	{"go test ./... && touch x", Ask, `"touch x"`},
	{"go test ./... || touch x", Ask, `"touch x"`},
	{"go test $(touch x)", Ask, "command substitution"},
	{"go test `touch x`", Ask, "command substitution"},
	{"go test ./... | sh", Ask, "shell"},
	{"go test <(touch x)", Ask, "process substitution"},
	{"go test ./... > out.txt", Ask, "redirects output to a file"},
	{"go test ./... >> out.txt", Ask, "redirects output to a file"},
	{"go test ./... &> out.txt", Ask, "redirects output to a file"},
	{"go test ./... >&out.txt", Ask, "redirects output to a file"},
	{"go test $PKG", Ask, "expanded at run time"},
	{"go test *.go", Ask, "glob"},
	{"GOFLAGS=-exec=/tmp/evil go test ./...", Ask, "environment variables"},
	{"ls -la", Ask, "no allow rule"},
	{"make install", Ask, "no allow rule"},
	{"X=1", Ask, "sets shell variables"},
	{"export PATH=.", Ask, "not a simple command"},
	{"f() { echo hi; }; f", Ask, "defines a function"},
	{". ./x.sh", Ask, "file of shell commands"},
	{"source x.sh", Ask, "file of shell commands"},
	{"eval 'echo hi'", Ask, "another command (eval)"},
	{"eval -", Ask, "another command (eval)"}, // found by FuzzDecide: eval runs "-"
	{"bash -c 'go test ./...'", Ask, "shell"},
	{"env go test ./...", Ask, "another command (env)"},
	{"r*m x", Deny, "deny rule"}, // a globbed name could be rm
	{"git -c core.fsmonitor=/tmp/evil status", Ask, "git -c"},
	{"git --config-env=core.hooksPath=X status", Ask, "git --config-env"},
	{"go test (", Ask, "does not parse"},
	{"time go test ./...", Ask, "times another command"},

	// --deny "rm *" must see rm however it is reached.
	{"rm -rf build", Deny, `matches the deny rule "rm *"`},
	{"true; rm -rf build", Deny, "deny rule"},
	{"echo ok && rm -rf build", Deny, "deny rule"},
	{"FOO=1 rm -rf build", Deny, "deny rule"},
	{"/bin/rm -rf build", Deny, "deny rule"},
	{`\rm -rf build`, Deny, "deny rule"},
	{`r""m -rf build`, Deny, "deny rule"},
	{`$'\x72m' -rf build`, Deny, "deny rule"},
	{`"rm" -rf build`, Deny, "deny rule"},
	{"sh -c 'rm -rf build'", Deny, "deny rule"},
	{"bash -lc \"echo x; rm -rf build\"", Deny, "deny rule"},
	{"sh -c \"sh -c 'rm -rf build'\"", Deny, "deny rule"},
	{"env rm -rf build", Deny, "deny rule"},
	{"env -i FOO=1 rm -rf build", Deny, "deny rule"},
	{"nice -n 10 rm -rf build", Deny, "deny rule"},
	{"timeout 5 rm -rf build", Deny, "deny rule"},
	{"xargs rm < list", Deny, "deny rule"},
	{"find . -name '*.o' -exec rm {} ;", Deny, "deny rule"},
	{"sudo rm -rf /", Deny, "deny rule"},
	{"echo $(rm -rf build)", Deny, "deny rule"},
	{"go test ./... | (rm -rf build)", Deny, "deny rule"},
	{"f() { rm -rf build; }; f", Deny, "deny rule"},
	{"if true; then rm -rf build; fi", Deny, "deny rule"},
	{"git push --force origin main", Deny, `"git push *"`},
	{"rm", Deny, "deny rule"},
}

func TestDecide(t *testing.T) {
	set, err := NewSet(
		[]string{"go test *", "go vet ./...", "npm run test:*", "echo *", "ls", "sleep *", "make", "env *"},
		[]string{"rm *", "git push *"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range decideCases {
		d := set.Decide(tt.line)
		if d.Verdict != tt.want || !strings.Contains(d.Reason, tt.why) {
			t.Errorf("%s\n  got %s (%s), want %s (%q)", tt.line, d.Verdict, d.Reason, tt.want, tt.why)
		}
	}
}

func TestObfuscatedNamesAskWithoutDenyRules(t *testing.T) {
	set, _ := NewSet([]string{"*"}, nil) // even "allow everything" does not allow these
	for _, line := range []string{`$'\x72m' -rf x`, `r""m -rf x`, `\rm -rf x`, `$CMD x`, `r*m x`, "eval x", "sh -c 'ls'"} {
		if d := set.Decide(line); d.Verdict != Ask {
			t.Errorf("%s: %s (%s), want ask", line, d.Verdict, d.Reason)
		}
	}
	if d := set.Decide("ls -la && go build ./..."); d.Verdict != Allow {
		t.Errorf(`"*" should allow plain commands: %s %s`, d.Verdict, d.Reason)
	}
}

func TestCommandsListedInOrder(t *testing.T) {
	d := Set{}.Decide(`cd sub && go test -run "A B" ./... | tee log; sh -c 'make all'`)
	var got []string
	for _, c := range d.Commands {
		got = append(got, c.Text)
	}
	want := []string{"cd sub", `go test -run "A B" ./...`, "tee log", "sh -c 'make all'", "make all"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("commands %q, want %q", got, want)
	}
	if w := d.Commands[1].Words; *w[3] != "A B" {
		t.Fatalf("quote removal: %q", *w[3])
	}
}

func TestRuleWords(t *testing.T) {
	for _, tt := range []struct {
		rule, line string
		match      bool
	}{
		{"go test *", "go test", true},
		{"go test *", "go testify", false},
		{"go * ./...", "go vet -v ./...", true},
		{"npm run test:*", "npm run test:e2e", true},
		{"npm run test:*", "npm run test", false},
		{"npm run test:*", "npm run build", false},
		{"git log", "git log --all", false},
	} {
		set, _ := NewSet([]string{tt.rule}, nil)
		if got := set.Decide(tt.line).Verdict == Allow; got != tt.match {
			t.Errorf("rule %q, line %q: allowed %v", tt.rule, tt.line, got)
		}
	}
	if _, err := ParseRule("   "); err == nil {
		t.Error("empty rule accepted")
	}
}

// executed interprets line with mvdan.cc/sh's interpreter without running
// anything: every simple command it would run (builtins, eval'd and
// substituted ones included) is recorded with its expanded words, files open
// as empty, directories read as empty, and loops stop at a short deadline.
func executed(line string) [][]string {
	if braceRange.MatchString(line) || strings.Contains(line, "<(") || strings.Contains(line, ">(") ||
		strings.Contains(line, "coproc") || strings.Contains(strings.ReplaceAll(line, "&&", ""), "&") {
		// The interpreter would expand a brace range into a huge number of
		// words, and it leaves the loops of process substitutions, coprocesses
		// and background jobs running after its deadline.
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil
	}
	var mu sync.Mutex // pipeline parts run concurrently
	var calls [][]string
	r, err := interp.New(
		interp.Env(expand.ListEnviron()),
		interp.StdIO(strings.NewReader(""), io.Discard, io.Discard),
		interp.CallHandler(func(ctx context.Context, args []string) ([]string, error) {
			mu.Lock()
			calls = append(calls, append([]string(nil), args...))
			mu.Unlock()
			return args, nil
		}),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(context.Context, []string) error { return nil }
		}),
		interp.OpenHandler(func(context.Context, string, int, os.FileMode) (io.ReadWriteCloser, error) {
			return nopFile{strings.NewReader("")}, nil
		}),
		interp.ReadDirHandler2(func(context.Context, string) ([]fs.DirEntry, error) { return nil, nil }),
	)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r.Run(ctx, f)
	return calls
}

var braceRange = regexp.MustCompile(`\{[^}]*\.\.`)

type nopFile struct{ io.Reader }

func (nopFile) Write(p []byte) (int, error) { return len(p), nil }
func (nopFile) Close() error                { return nil }

// FuzzDecide holds the matcher against the shell's own interpreter: a line
// that would run rm is never allowed (under "rm *" denied, everything else
// allowed), and an allowed line runs only commands the matcher saw, word for
// word. It never panics.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"go test ./...", "a; b | c && d", "sh -c 'rm x'", "$(x)", `$'\x72m'`, "f(){ x; }", "echo > f",
		"a\\\nb", "((1+1))", "[[ -f x ]]", "case x in y) z;; esac", "x=rm; $x y", `eval "r""m x"`, "0 \\"} {
		f.Add(s)
	}
	// The option tables, interpreters and wrappers (options_test.go has more).
	for _, s := range []string{`go test -exec "sh -c 'rm x'" ./...`, `go test ./... -toolexec=rm`, `npm test --script-shell=rm`,
		`git grep -O'rm x' y`, `rg --pre rm x`, `tar xIf 'rm x' a.tar`, `tar --checkpoint-action=exec='rm x' -cf a .`,
		`rsync -avze 'rm x' a b:`, `ssh -oProxyCommand='rm x' h`, `sed '1e rm x' f`, `sed 's/.*/rm x/e' f`,
		`awk 'BEGIN{system("rm x")}'`, `make SHELL=rm CC='rm x'`, `python3 -c 'x'`, `node -pe 1`, `perl -lne 1`,
		`env -S'rm x'`, `env -iS'-i rm' x`, `setpriv rm x`, `valgrind rm x`, `firejail rm x`, `trap 'rm x' EXIT`,
		"alias r=rm\nr x", `timeout 5 sh -c 'rm v'`, `watch 'rm x'`, `npx rm x`, `git rebase -x 'rm x' m`} {
		f.Add(s)
	}
	set, _ := NewSet([]string{"*"}, []string{"rm *"})
	f.Fuzz(func(t *testing.T, line string) {
		d := set.Decide(line)
		if d.Verdict == Allow && d.Reason != "" {
			t.Fatalf("allowed with a reason: %q", d.Reason)
		}
		calls := executed(line)
		for _, c := range calls {
			if len(c) > 0 && path.Base(c[0]) == "rm" && d.Verdict == Allow {
				t.Fatalf("%q runs %q and was allowed", line, c)
			}
		}
		if d.Verdict != Allow {
			return
		}
		for _, c := range calls {
			if !slices.ContainsFunc(d.Commands, func(p Command) bool { return sameWords(p.Words, c) }) {
				t.Fatalf("%q was allowed but runs %q, which the matcher did not see (it saw %v)", line, c, d.Commands)
			}
		}
	})
}

func sameWords(words []*string, args []string) bool {
	if len(words) != len(args) {
		return false
	}
	for i, w := range words {
		if w == nil || *w != args[i] {
			return false
		}
	}
	return true
}

// Deeply nested lines are decided in time linear in their size, and a
// substitution's commands are listed once.
func TestNestingIsLinear(t *testing.T) {
	line := strings.Repeat("echo $(", 200) + "rm x" + strings.Repeat(")", 200)
	chain := strings.Repeat("echo a && ", 5000) + "rm x"
	braces := "echo {1..1000000000}{1..1000000000}; rm x"
	set, _ := NewSet([]string{"*"}, []string{"rm *"})
	for _, l := range []string{line, chain, braces} {
		done := make(chan Decision, 1)
		go func() { done <- set.Decide(l) }()
		select {
		case d := <-done:
			if d.Verdict != Deny {
				t.Fatalf("nested rm: %s", d.Verdict)
			}
		case <-time.After(time.Minute):
			t.Fatal("deciding a nested line hangs")
		}
	}
	if d := (Set{}).Decide("echo $(echo $(ls))"); len(d.Commands) != 3 {
		t.Fatalf("%d commands listed, want 3: %v", len(d.Commands), d.Commands)
	}
}

// Parallel tool calls decide their lines at the same time (run under -race).
func TestDecideConcurrently(t *testing.T) {
	set, _ := NewSet([]string{"go test *"}, []string{"rm *"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if d := set.Decide(`\rm -rf "x` + strings.Repeat("y", i) + `"`); d.Verdict != Deny {
					t.Errorf("verdict %s", d.Verdict)
					return
				}
			}
		}()
	}
	wg.Wait()
}
