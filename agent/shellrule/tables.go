package shellrule

import "strings"

// The option tables: for each tool whose options can run a program or code,
// every option it takes (from its --help or its source: go 1.26, git 2.39,
// GNU tar 1.34, GNU make 4.3, GNU sed 4.9, OpenSSH 9.2, rsync 3.2, ripgrep
// 13 and 14, npm 11) and what each does with its value. An allow rule such
// as "go test *" covers every argument except the values of the options
// that take a program or code: those are commands of their own.

// goBuild are the build flags of go build, install, run, test, vet, list,
// get, clean, generate and fix (cmd/go/internal/work.AddBuildFlags).
var goBuild = spec{
	flags: "-a -n -x -v -asan -json -linkshared -msan -race -trimpath -work -modcacherw -cover",
	values: "-C -p -asmflags -compiler -buildmode -gcflags -installsuffix -mod -modfile -overlay -pgo -pkgdir -tags " +
		"-covermode -coverpkg -debug-actiongraph -debug-runtime-trace -debug-trace -o",
	optional: "-buildvcs",
	programs: "-toolexec",
	asks:     "-gccgoflags", // flags for gcc, which can name programs (-wrapper, -B)
	checks:   "-ldflags",    // -extld names the linker, -extldflags are gcc's flags
}

// goTestBinary are the flags go test hands to the test binary, also written
// -test.NAME.
var goTestBinary = spec{
	flags: "-benchmem -failfast -fullpath -short -v -paniconexit0 -artifacts",
	values: "-bench -benchtime -blockprofile -blockprofilerate -count -coverprofile -cpu -cpuprofile -fuzz " +
		"-fuzzminimizetime -fuzztime -list -memprofile -memprofilerate -mutexprofile -mutexprofilefraction " +
		"-outputdir -parallel -run -shuffle -skip -timeout -trace -testlogfile -gocoverdir",
}

var goVetAnalyzers = "-V -all -appends -asmdecl -assign -atomic -bool -bools -buildtag -buildtags -cgocall " +
	"-composites -composites.whitelist -compositewhitelist -copylocks -defers -diff -directive -errorsas -flags " +
	"-framepointer -hostport -httpresponse -ifaceassert -loopclosure -lostcancel -methods -nilfunc -printf " +
	"-rangeloops -shift -sigchanyzer -slog -source -stdmethods -stdversion -stringintconv -structtag " +
	"-testinggoroutine -testinggoroutine.subtest -tests -timeformat -unmarshal -unreachable -unsafeptr " +
	"-unusedresult -waitgroup"

func goSub(optionsEnd int, s ...spec) *tool {
	return newTool(tool{name: "go", style: goflag, optionsEnd: optionsEnd, check: goCheck}, merge(append([]spec{goBuild}, s...)...))
}

func goTable() *tool {
	return newTool(tool{name: "go", style: goflag, optionsEnd: 1, subs: map[string]*tool{
		"build":   goSub(1),
		"install": goSub(1),
		"run":     goSub(1, spec{programs: "-exec"}),
		// go test reads its flags after the packages too (testflag.go); -args
		// and -- hand the rest to the test binary.
		"test": goSub(0, goTestBinary, prefixed(goTestBinary, "-test."),
			spec{flags: "-c -json -args", values: "-vet", programs: "-exec", stops: "-args"}),
		"vet": goSub(1, spec{flags: goVetAnalyzers, values: "-c -printf.funcs -printfuncs -unusedfuncs -unusedresult.funcs " +
			"-unusedresult.stringmethods -unusedstringmethods", programs: "-vettool"}),
		"fix": goSub(1, spec{flags: "-diff", programs: "-fixtool"}),
		"list": goSub(1, spec{flags: "-e -m -u -versions -retracted -deps -test -export -compiled -find", values: "-f -reuse",
			optional: "-json"}),
		"get":      goSub(1, spec{flags: "-d -t -tool", optional: "-u"}),
		"clean":    goSub(1, spec{flags: "-i -r -cache -testcache -modcache -fuzzcache"}),
		"generate": goSub(1, spec{values: "-run -skip"}),
		"env":      newTool(tool{name: "go env", lenient: true, operands: settingsWrite("-w")}, spec{flags: "-w -u -json -changed"}),
	}}, spec{})
}

var npmSpec = spec{
	flags: "--all --allow-same-version --audit --bin-links --bypass-2fa --commit-hooks --dangerously-allow-all-scripts " +
		"--description --dev --diff-ignore-all-space --diff-name-only --diff-no-prefix --diff-text --dry-run --engine-strict " +
		"--expect-results --force --foreground-scripts --format-package-lock --fund --git-tag-version --global --global-style " +
		"--if-present --ignore-scripts --include-staged --include-workspace-root --include-attestations --init-private " +
		"--install-links --json --legacy-bundling --legacy-peer-deps --link --long --offline --omit-lockfile-registry-resolved " +
		"--optional --package-lock --package-lock-only --parseable --allow-scripts-pending --allow-scripts-pin --prefer-dedupe " +
		"--prefer-offline --prefer-online --production --progress --provenance --read-only --rebuild-bundle --save --save-bundle " +
		"--save-dev --save-exact --save-optional --save-peer --save-prod --packages-all --shrinkwrap --sign-git-commit " +
		"--sign-git-tag --strict-peer-deps --strict-allow-scripts --strict-ssl --timing --unicode --update-notifier --usage " +
		"--version --versions --workspaces --workspaces-update --yes " +
		// shorthands (nopt): -s is --loglevel silent, -ws --workspaces...
		"-d -dd -ddd -q -s -n -iwr -ws --quiet --silent --verbose --desc --help --local --no --porcelain --readonly --iwr --ws " +
		"-a -f -g -l -p -S -B -D -E -O -P -? -H -h -v -y",
	values: "--_auth --access --allow-directory --allow-file --allow-git --allow-remote --allow-scripts --also --audit-level " +
		"--auth-type --before --ca --cache --cache-max --cache-min --cafile --cert --cidr --cpu --depth --diff --diff-dst-prefix " +
		"--diff-src-prefix --diff-unified --expect-result-count --expires --fetch-retries --fetch-retry-factor " +
		"--fetch-retry-maxtimeout --fetch-retry-mintimeout --fetch-timeout --heading --https-proxy --include " +
		"--init-author-email --init-author-name --init-author-url --init-license --init-type --init-version " +
		"--init.author.email --init.author.name --init.author.url --init.license --init.version --install-strategy --key " +
		"--libc --local-address --location --lockfile-version --loglevel --logs-dir --logs-max --name --maxsockets --message " +
		"--min-release-age --min-release-age-exclude --noproxy --omit --only --orgs --os --otp --package --pack-destination " +
		"--packages --prefix --preid --provenance-file --proxy --registry --replace-registry-host --save-prefix --sbom-format " +
		"--sbom-type --scope --scopes --packages-and-scopes-permission --orgs-permission --password --token-description " +
		"--searchexclude --searchlimit --searchopts --searchstaleness --tag --tag-version-prefix --umask --user-agent --which " +
		"--workspace --reg --enjoy-by -L -m -C -w",
	optional: "--color --browser",
	programs: "--script-shell --shell --git --editor --browser --viewer --node-gyp",
	shells:   "--call -c",
	asks:     "--node-options --init-module --init.module --userconfig --globalconfig",
}

var pnpmSpec = spec{
	flags: "-r --recursive -s --silent --stream --parallel --aggregate-output --if-present --bail --sort --reverse " +
		"--report-summary --use-stderr --color -h --help -v --version --frozen-lockfile --prefer-frozen-lockfile --prod -P " +
		"--dev -D --optional --offline --prefer-offline --ignore-scripts -g --global --fail-if-no-match " +
		"--include-workspace-root -w --workspace-root --save-dev --save-prod --save-optional -O --save-exact -E --save-peer " +
		"--shell-emulator --resolution-only --lockfile-only --force --fix-lockfile --ignore-pnpmfile --ignore-workspace " +
		"--json --long --parseable --verify-store-integrity --enable-pre-post-scripts -c --shell-mode --workspace " +
		"--no-color --no-bail --no-sort --no-optional --no-frozen-lockfile",
	values: "-C --dir --filter -F --filter-prod --test-pattern --changed-files-ignore-pattern --reporter --loglevel " +
		"--workspace-concurrency --resume-from --depth --store-dir --virtual-store-dir --modules-dir --lockfile-dir " +
		"--network-concurrency --child-concurrency --registry --cpu --os --libc",
	programs: "--script-shell",
	asks:     "--node-options --pnpmfile --global-pnpmfile",
}

var yarnSpec = spec{
	flags: "-s --silent --verbose --offline --prefer-offline --frozen-lockfile --immutable --ignore-scripts --production " +
		"--json --no-progress --non-interactive --check-files --force --flat --ignore-engines --ignore-optional " +
		"--ignore-platform --link-duplicates --no-bin-links --no-lockfile --pure-lockfile --skip-integrity-check " +
		"--strict-semver --emoji --no-emoji --no-default-rc --scripts-prepend-node-path -v --version -h --help -W " +
		"--ignore-workspace-root-check -D --dev -P --peer -O --optional -E --exact -T --tilde -A --all -p --parallel -i " +
		"--interlaced --topological --topological-dev -R --recursive --no-private -t --top-level",
	values: "--cwd --network-timeout --mutex --modules-folder --registry --cache-folder --global-folder --link-folder " +
		"-j --jobs --include --exclude --since --network-concurrency",
	programs: "--script-shell",
	asks:     "--use-yarnrc --rc-filename",
}

// gitTool reads git's own options, then a subcommand's. git -c,
// --config-env and --exec-path (and --git-dir: another repository's config)
// can set hooks, fsmonitor or aliases that run programs.
var gitSpec = spec{
	flags: "-p --paginate -P --no-pager --no-replace-objects --bare --literal-pathspecs --glob-pathspecs " +
		"--noglob-pathspecs --icase-pathspecs --no-optional-locks --version -v --help -h --html-path --man-path " +
		"--info-path --no-lazy-fetch --no-advice",
	values:   "-C --work-tree --namespace --super-prefix --list-cmds --attr-source",
	optional: "--exec-path",
	asks:     "--config-env --exec-path --git-dir",
	checks:   "-c",
}

// gitSubs are the subcommands of git with options that run programs.
var gitSubs = map[string]spec{
	"grep": {
		flags: "--cached --no-index --untracked --exclude-standard --recurse-submodules -v --invert-match -i --ignore-case " +
			"-w --word-regexp -a --text -I --textconv -r --recursive -E --extended-regexp -G --basic-regexp -F " +
			"--fixed-strings -P --perl-regexp -n --line-number --column -h -H --full-name -l --files-with-matches " +
			"--name-only -L --files-without-match -z --null -o --only-matching -c --count --break --heading -p " +
			"--show-function -W --function-context --and --or --not -q --quiet --all-match --ext-grep",
		values:   "--max-depth -C --context -B --before-context -A --after-context --threads -f -e -m --max-count",
		optional: "--color -O --open-files-in-pager",
		shells:   "-O --open-files-in-pager", // the pager runs through the shell, with the files as arguments
	},
	"rebase": {
		flags: "--keep-base --no-verify -q --quiet -v --verbose -n --no-stat --signoff --committer-date-is-author-date " +
			"--reset-author-date --ignore-whitespace -f --force-rebase --no-ff --continue --skip --abort --quit " +
			"--edit-todo --show-current-patch --apply -m --merge -i --interactive --rerere-autoupdate --autosquash " +
			"--update-refs --autostash --fork-point --root --reschedule-failed-exec --reapply-cherry-picks",
		values:   "--onto -C --whitespace --empty -s --strategy -X --strategy-option",
		optional: "-S --gpg-sign -r --rebase-merges",
		shells:   "-x --exec",
	},
	"difftool": {
		flags:  "-g --gui -d --dir-diff -y --no-prompt --prompt --symlinks --tool-help --trust-exit-code --no-index",
		values: "-t --tool",
		shells: "-x --extcmd",
	},
	"clone": {
		flags: "-v --verbose -q --quiet --progress --reject-shallow -n --no-checkout --bare --mirror -l --local " +
			"--no-hardlinks -s --shared --dissociate --single-branch --no-tags --shallow-submodules -4 --ipv4 -6 --ipv6 " +
			"--also-filter-submodules --remote-submodules --sparse",
		values: "-j --jobs --reference --reference-if-able -o --origin -b --branch --depth --shallow-since " +
			"--shallow-exclude --separate-git-dir --server-option --filter --bundle-uri",
		optional: "--recurse-submodules --recursive",
		programs: "-u --upload-pack",
		asks:     "--template --config", // hooks from a template, config that runs programs
		checks:   "-c",
	},
	"fetch": {
		flags: "-v --verbose -q --quiet --all --set-upstream -a --append --atomic -f --force -m --multiple -t --tags " +
			"-n --prefetch -p --prune -P --prune-tags --dry-run --write-fetch-head -k --keep -u --update-head-ok " +
			"--progress --unshallow --refetch --update-shallow -4 --ipv4 -6 --ipv6 --negotiate-only --auto-maintenance " +
			"--auto-gc --show-forced-updates --write-commit-graph --stdin",
		values: "-j --jobs --depth --shallow-since --shallow-exclude --deepen --refmap -o --server-option " +
			"--negotiation-tip --filter",
		optional: "--recurse-submodules",
		programs: "--upload-pack",
	},
	"pull": {
		flags: "-v --verbose -q --quiet --progress -n --stat --squash --commit --edit --ff --ff-only --verify " +
			"--verify-signatures --autostash --allow-unrelated-histories --all -a --append -f --force -t --tags -p " +
			"--prune --dry-run -k --keep --unshallow --update-shallow -4 --ipv4 -6 --ipv6 --show-forced-updates " +
			"--set-upstream",
		values: "--cleanup -s --strategy -X --strategy-option --depth --shallow-since --shallow-exclude --deepen " +
			"--refmap -o --server-option --negotiation-tip",
		optional: "--recurse-submodules -r --rebase --log --signoff -S --gpg-sign -j --jobs",
		programs: "--upload-pack",
	},
	"push": {
		flags: "-v --verbose -q --quiet --all --mirror -d --delete --tags -n --dry-run --porcelain -f --force " +
			"--force-if-includes --thin -u --set-upstream --progress --prune --no-verify --follow-tags --atomic -4 " +
			"--ipv4 -6 --ipv6",
		values:   "--repo --recurse-submodules -o --push-option",
		optional: "--force-with-lease --signed",
		programs: "--receive-pack --exec",
	},
	"ls-remote": {
		flags:    "-q --quiet -t --tags -h --heads --refs --get-url --exit-code --symref",
		values:   "--sort -o --server-option",
		programs: "--upload-pack --exec",
	},
	"archive": {
		flags:    "--worktree-attributes -v --verbose -l --list",
		values:   "--format --prefix --add-file --add-virtual-file -o --output --remote",
		programs: "--exec",
	},
	"init": {
		flags:    "--bare -q --quiet",
		values:   "--separate-git-dir -b --initial-branch --object-format",
		optional: "--shared",
		asks:     "--template",
	},
	"filter-branch": {
		flags:  "-f --force --prune-empty",
		values: "--subdirectory-filter --original -d --state-branch",
		shells: "--setup --env-filter --tree-filter --index-filter --parent-filter --msg-filter --commit-filter --tag-name-filter",
	},
}

func gitTable() *tool {
	subs := map[string]*tool{
		"submodule": newTool(tool{name: "git submodule", lenient: true, operands: gitSubmodule}, spec{}),
		"bisect":    newTool(tool{name: "git bisect", lenient: true, operands: gitBisect}, spec{}),
		"config": newTool(tool{name: "git config", lenient: true, operands: gitConfig}, spec{
			values:   "-f --file --blob -t --type --default --comment --value",
			askFlags: "-e --edit --add --replace-all --rename-section",
		}),
	}
	for name, s := range gitSubs {
		subs[name] = newTool(tool{name: "git " + name, abbrev: true, negate: true, numbers: true, check: gitConfigOption}, s)
	}
	return newTool(tool{name: "git", optionsEnd: 1, subs: subs, check: gitConfigOption}, gitSpec)
}

var rgSpec = spec{
	flags: "--auto-hybrid-regex --binary --block-buffered -b --byte-offset -s --case-sensitive --column -c --count " +
		"--count-matches --crlf --debug --trace --files -l --files-with-matches --files-without-match -F --fixed-strings " +
		"-L --follow --glob-case-insensitive -h --help --heading --hidden -i --ignore-case --ignore-file-case-insensitive " +
		"--include-zero -v --invert-match --json --line-buffered -n --line-number -x --line-regexp --max-columns-preview " +
		"--mmap -U --multiline --multiline-dotall --no-config -I --no-filename --no-heading --no-ignore --no-ignore-dot " +
		"--no-ignore-exclude --no-ignore-files --no-ignore-global --no-ignore-messages --no-ignore-parent --no-ignore-vcs " +
		"-N --no-line-number --no-messages --no-mmap --no-pcre2-unicode --no-require-git --no-unicode -0 --null " +
		"--null-data --one-file-system -o --only-matching --passthru --passthrough -P --pcre2 --pcre2-version -p --pretty " +
		"-q --quiet -z --search-zip -S --smart-case --stats -a --text --trim --type-list -u --unrestricted -V --version " +
		"--vimgrep -H --with-filename -w --word-regexp --files-without-match --no-context-separator -. --stop-on-nonmatch " +
		"--line-regexp --follow --sort-files --no-sort-files",
	values: "-A --after-context -B --before-context --color --colors -C --context --context-separator --dfa-size-limit " +
		"-E --encoding --engine --field-context-separator --field-match-separator -f --file -g --glob --iglob " +
		"--ignore-file -M --max-columns -m --max-count -d --max-depth --maxdepth --max-filesize --path-separator " +
		"--pre-glob --regex-size-limit -e --regexp -r --replace --sort --sortr -j --threads -t --type --type-add " +
		"--type-clear -T --type-not --hyperlink-format --generate",
	programs: "--pre --hostname-bin",
}

var tarSpec = spec{
	flags: "-A --catenate --concatenate -c --create --delete -d --diff --compare -r --append --test-label -t --list " +
		"-u --update -x --extract --get --check-device -G --incremental --ignore-failed-read --no-check-device " +
		"--no-seek -n --seek -S --sparse --exclude-backups --exclude-caches --exclude-caches-all --exclude-vcs " +
		"--exclude-vcs-ignores --no-null --no-recursion --no-unquote --no-verbatim-files-from --null --recursion " +
		"--unquote --verbatim-files-from --anchored --ignore-case --no-anchored --no-ignore-case --no-wildcards " +
		"--no-wildcards-match-slash --wildcards --wildcards-match-slash --keep-directory-symlink --keep-newer-files -k " +
		"--keep-old-files --no-overwrite-dir --overwrite --overwrite-dir --recursive-unlink --remove-files " +
		"--skip-old-files -U --unlink-first -W --verify --no-ignore-command-error -O --to-stdout --clamp-mtime " +
		"--delay-directory-restore -m --touch --no-delay-directory-restore --no-same-owner --no-same-permissions " +
		"--numeric-owner -p --preserve-permissions --same-permissions --same-owner -s --preserve-order --same-order " +
		"--acls --no-acls --no-selinux --no-xattrs --selinux --xattrs --force-local -M --multi-volume -B " +
		"--read-full-records -i --ignore-zeros --old-archive --portability --posix -a --auto-compress -j --bzip2 -J " +
		"--xz --lzip --lzma --lzop --no-auto-compress --zstd -z --gzip --gunzip --ungzip -Z --compress --uncompress " +
		"--hard-dereference -h --dereference --one-file-system -P --absolute-names --full-time -l --check-links -R " +
		"--block-number --show-defaults --show-omitted-dirs --show-snapshot-field-ranges --show-transformed-names " +
		"--show-stored-names --utc -v --verbose -w --interactive --confirmation -o -? --help --restrict --usage --version " +
		"--ignore-command-error --preserve",
	values: "-g --listed-incremental --hole-detection --level --sparse-version --add-file -C --directory --exclude " +
		"--exclude-caches-under --exclude-ignore --exclude-ignore-recursive --exclude-tag --exclude-tag-all " +
		"--exclude-tag-under -T --files-from -X --exclude-from --group --group-map --mode --mtime --owner " +
		"--owner-map --sort --xattrs-exclude --xattrs-include -f --file -L --tape-length --volno-file -b " +
		"--blocking-factor --record-size -H --format --pax-option -V --label -K --starting-file --newer-mtime -N " +
		"--newer --after-date --suffix --strip-components --transform --xform --index-file --no-quote-chars " +
		"--quote-chars --quoting-style --warning",
	optional: "--occurrence --one-top-level --atime-preserve --backup --checkpoint --totals",
	programs: "--rsh-command --rmt-command",
	// tar runs these through /bin/sh -c
	shells: "-I --use-compress-program --to-command -F --info-script --new-volume-script",
	checks: "--checkpoint-action", // exec=COMMAND runs a command
}

var rsyncSpec = spec{
	flags: "-v --verbose -q --quiet --no-motd -c --checksum -a --archive -r --recursive -R --relative " +
		"--no-implied-dirs -b --backup -u --update --inplace --append --append-verify -d --dirs --mkpath -l --links " +
		"-L --copy-links --copy-unsafe-links --safe-links --munge-links -k --copy-dirlinks -K --keep-dirlinks -H " +
		"--hard-links -p --perms -E --executability -A --acls -X --xattrs -o --owner -g --group --devices " +
		"--copy-devices --write-devices --specials -D -t --times -U --atimes --open-noatime -N --crtimes -O " +
		"--omit-dir-times -J --omit-link-times --super --fake-super -S --sparse --preallocate -n --dry-run -W " +
		"--whole-file -x --one-file-system --existing --ignore-existing --remove-source-files --del --delete " +
		"--delete-before --delete-during --delete-delay --delete-after --delete-excluded --ignore-missing-args " +
		"--delete-missing-args --ignore-errors --force -P --partial --delay-updates -m --prune-empty-dirs " +
		"--numeric-ids -I --ignore-times --size-only -y --fuzzy -z --compress -C --cvs-exclude -F -0 --from0 " +
		"--old-args --secluded-args -s --protect-args --trust-sender --blocking-io --stats -8 --8-bit-output -h " +
		"--human-readable --progress -i --itemize-changes --list-only --fsync -4 --ipv4 -6 --ipv6 -V --version " +
		"--help --msgs2stderr --old-dirs --old-d",
	values: "--info --debug --stderr --backup-dir --suffix --chmod --checksum-choice --cc -B --block-size --max-delete " +
		"--max-size --min-size --max-alloc --partial-dir --usermap --groupmap --chown --timeout --contimeout " +
		"--modify-window -@ -T --temp-dir --compare-dest --copy-dest --link-dest --compress-choice --zc " +
		"--compress-level --zl --skip-compress -f --filter --exclude --exclude-from --include --include-from " +
		"--files-from --copy-as --address --port --sockopts --outbuf --out-format --log-file --log-file-format " +
		"--password-file --bwlimit --stop-after --stop-at --write-batch --only-write-batch --read-batch --protocol " +
		"--iconv --checksum-seed",
	programs: "-e --rsh --rsync-path",
	asks:     "-M --remote-option --config --dparam --early-input",
	askFlags: "--daemon --server --sender",
}

// sshSpec, scpSpec and sftpSpec are the options of ssh, scp and sftp: -o takes a config
// keyword, -F a config file (which can hold ProxyCommand, Match exec).
var sshSpec = spec{
	flags:  "-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y",
	values: "-B -b -c -D -E -e -i -J -L -l -m -O -p -P -Q -R -S -W -w",
	asks:   "-F -I",
	checks: "-o",
}

var scpSpec = spec{
	flags:    "-3 -4 -6 -A -B -C -O -p -q -R -r -s -T -v",
	values:   "-c -i -J -l -P -X",
	programs: "-S -D",
	asks:     "-F",
	checks:   "-o",
}

var sftpSpec = spec{
	flags:    "-4 -6 -A -a -C -f -N -p -q -r -v",
	values:   "-B -c -i -J -l -P -R -s",
	programs: "-S -D",
	asks:     "-F -b", // a batch file can hold !commands
	checks:   "-o",
}

var makeSpec = spec{
	flags: "-b -m -B --always-make -d -e --environment-overrides -h --help -i --ignore-errors -k --keep-going -L " +
		"--check-symlink-times -n --just-print --dry-run --recon -p --print-data-base -q --question -r " +
		"--no-builtin-rules -R --no-builtin-variables -s --silent --quiet --no-silent -S --no-keep-going --stop -t " +
		"--touch --trace -v --version -w --print-directory --no-print-directory --warn-undefined-variables",
	values: "-C --directory -I --include-dir -o --old-file --assume-old -W --what-if --new-file --assume-new " +
		"--jobserver-auth --jobserver-style",
	optional: "--debug -j --jobs -l --load-average --max-load -O --output-sync --shuffle",
	asks:     "-f --file --makefile -E --eval", // a makefile the model may have written; make code
}

var sedSpec = spec{
	flags: "-n --quiet --silent --debug --follow-symlinks --posix -E -r --regexp-extended -s --separate --sandbox " +
		"-u --unbuffered -z --null-data --help --version -b --binary",
	values:   "-l --line-length",
	optional: "-i --in-place",
	asks:     "-f --file", // a script file: its e commands cannot be read
	checks:   "-e --expression",
}

var awkSpec = spec{
	flags: "-b --characters-as-bytes -c --traditional -C --copyright -g --gen-pot -h --help -M --bignum -N " +
		"--use-lc-numeric -n --non-decimal-data --optimize -P --posix -r --re-interval -s --no-optimize -S --sandbox " +
		"-t --lint-old -V --version",
	optional: "-d --dump-variables -D --debug -L --lint -o --pretty-print -p --profile -O",
	values:   "-F --field-separator -v --assign",
	asks:     "-f --file -E --exec -i --include -l --load -W", // program files, extensions, mawk -W exec
	checks:   "-e --source",
}

// envSpec is env's options: -S takes a string env splits into the command
// and its arguments.
var envSpec = spec{
	flags:    "-i --ignore-environment -0 --null -v --debug --list-signal-handling",
	values:   "-u --unset -C --chdir",
	optional: "--block-signal --default-signal --ignore-signal",
	checks:   "-S --split-string",
}

// The tables by command name, built once at start and only read after
// (in init: their checks reach the walker, which reads them).
var tools, interpreters map[string]*tool

// envTool reads env's options for -S, whose string env splits into the
// command and its arguments.
var envTool *tool

func init() {
	tools, interpreters = toolTable(), interpreterTable()
	envTool = newTool(tool{name: "env", optionsEnd: 1, lenient: true, check: envSplit}, envSpec)
}

// toolTable is the option tables of tools whose options run programs or code.
func toolTable() map[string]*tool {
	awk := newTool(tool{name: "awk", abbrev: true, optionsEnd: 1, check: awkCheck, operands: awkOperands}, awkSpec)
	mk := newTool(tool{name: "make", abbrev: true, operands: makeAssignments}, makeSpec)
	tar := newTool(tool{name: "tar", abbrev: true, prepare: tarOldStyle, check: tarCheck}, tarSpec)
	return map[string]*tool{
		"go":   goTable(),
		"git":  gitTable(),
		"npm":  newTool(tool{name: "npm", abbrev: true, negate: true, subs: configSubs("npm", "config", "c", "set")}, npmSpec),
		"pnpm": newTool(tool{name: "pnpm", abbrev: true, negate: true, subs: configSubs("pnpm", "config", "c", "set")}, pnpmSpec),
		"yarn": newTool(tool{name: "yarn", abbrev: true, negate: true, subs: configSubs("yarn", "config")}, yarnSpec),
		"rg":   newTool(tool{name: "rg", negate: true}, rgSpec),
		"tar":  tar, "gtar": tar,
		"rsync": newTool(tool{name: "rsync", negate: true}, rsyncSpec),
		"ssh":   newTool(tool{name: "ssh", optionsEnd: 2, check: sshCheck, operands: sshRemote}, sshSpec),
		"scp":   newTool(tool{name: "scp", check: sshCheck}, scpSpec),
		"sftp":  newTool(tool{name: "sftp", optionsEnd: 1, check: sshCheck}, sftpSpec),
		"make":  mk, "gmake": mk,
		"sed": newTool(tool{name: "sed", abbrev: true, check: sedCheck, operands: sedOperands}, sedSpec),
		"awk": awk, "gawk": awk, "mawk": awk, "nawk": awk,
	}
}

// interpreterTable is the interpreters: they run code given on their
// command line (python -c) or read from standard input, and only an allow
// rule that names the option allows that. Their other options are read
// leniently, to find the code. Names are matched without a version suffix
// (python3.12, perl5.36).
func interpreterTable() map[string]*tool {
	python := newTool(tool{name: "python", lenient: true, optionsEnd: 1,
		operands: stdinCode("-V --version -h --help -? --help-env --help-xoptions --help-all -m")}, pythonSpec)
	node := newTool(tool{name: "node", lenient: true,
		operands: stdinCode("-v --version -h --help -c --check --test --run --v8-options")}, nodeSpec)
	lua := newTool(tool{name: "lua", lenient: true, optionsEnd: 1, operands: stdinCode("-v")}, luaSpec)
	return map[string]*tool{
		"python": python, "pypy": python, "node": node, "nodejs": node, "lua": lua, "luajit": lua,
		"perl": newTool(tool{name: "perl", lenient: true, optionsEnd: 1, check: perlModule, operands: stdinCode("-v -V -h -c")}, perlSpec),
		"ruby": newTool(tool{name: "ruby", lenient: true, optionsEnd: 1,
			operands: stdinCode("-v --version -h --help -c")}, rubySpec),
		"php": newTool(tool{name: "php", lenient: true, optionsEnd: 1,
			operands: stdinCode("-v -h -i -m -l -S --ini -f --rf --rc --re --rz --ri")}, phpSpec),
		"deno":    newTool(tool{name: "deno", lenient: true, optionsEnd: 1, operands: denoEval}, spec{}),
		"bun":     newTool(tool{name: "bun", lenient: true, optionsEnd: 1}, spec{codes: "-e --eval -p --print"}),
		"Rscript": newTool(tool{name: "Rscript", lenient: true, optionsEnd: 1}, spec{codes: "-e"}),
		"R":       newTool(tool{name: "R", lenient: true}, spec{codes: "-e"}),
		"julia": newTool(tool{name: "julia", lenient: true, optionsEnd: 1},
			spec{values: "-L --load -J --sysimage -t --threads -p --procs", codes: "-e --eval -E --print"}),
	}
}

var perlSpec = spec{
	flags:    "-a -c -n -p -s -S -t -T -u -U -w -W -X -v -h",
	digits:   "-0 -l",
	optional: "-C -d -D -i -x -V -I -F -M -m",
	codes:    "-e -E",
	checks:   "-M -m", // -M'Foo;system(...)' is code too
}

var rubySpec = spec{
	flags:    "-a -c -d -l -n -p -s -S -v -w -y -U --version --help -h --jit --yjit --verbose",
	values:   "-r -I -C -E -F --enable --disable --encoding --external-encoding --internal-encoding",
	digits:   "-0",
	optional: "-i -x -W -T -K",
	codes:    "-e",
}

var phpSpec = spec{
	flags:  "-a -C -e -h -H -i -l -m -n -q -s -v -w -? --ini",
	values: "-c -d -f -F -z -S -t --rf --rc --re --rz --ri",
	codes:  "-r -B -R -E",
}

var pythonSpec = spec{
	flags:  "-b -B -d -E -h -i -I -O -P -q -s -S -u -v -V -x -R -? --help --version --help-env --help-xoptions --help-all",
	values: "-W -X --check-hash-based-pycs",
	codes:  "-c",
	stops:  "-c -m",
}

var nodeSpec = spec{
	flags:  "-i --interactive -v --version -h --help -c --check --test --watch --no-warnings --enable-source-maps",
	values: "-r --require --import --loader --experimental-loader -C --conditions --input-type --title --env-file --run",
	codes:  "-e --eval -p --print",
}

var luaSpec = spec{
	flags:  "-i -v -E -W",
	values: "-l",
	codes:  "-e",
}

// configSubs are a package manager's config subcommands: `npm config set
// script-shell ...` changes what later commands run.
func configSubs(name string, subs ...string) map[string]*tool {
	m := map[string]*tool{}
	for _, sub := range subs {
		hook := settingsWrite("set")
		if sub == "set" {
			hook = settingsWrite("")
		}
		m[sub] = newTool(tool{name: name + " " + sub, lenient: true, operands: hook}, spec{})
	}
	return m
}

// merge joins specs.
func merge(specs ...spec) spec {
	var out spec
	for _, s := range specs {
		for _, p := range [][2]*string{{&out.flags, &s.flags}, {&out.values, &s.values}, {&out.optional, &s.optional},
			{&out.digits, &s.digits}, {&out.programs, &s.programs}, {&out.shells, &s.shells}, {&out.asks, &s.asks},
			{&out.askFlags, &s.askFlags}, {&out.codes, &s.codes}, {&out.checks, &s.checks}, {&out.stops, &s.stops}} {
			*p[0] += " " + *p[1]
		}
	}
	return out
}

// prefixed renames a go-flag spec's flags -NAME to PREFIX NAME.
func prefixed(s spec, prefix string) spec {
	re := func(names string) string {
		var out []string
		for _, n := range strings.Fields(names) {
			out = append(out, prefix+strings.TrimPrefix(n, "-"))
		}
		return strings.Join(out, " ")
	}
	return spec{flags: re(s.flags), values: re(s.values)}
}
