package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// helperArg is the hidden first argument that makes this binary the helper.
const helperArg = "__agent-lsp-sandbox"

// Main runs the helper when this process was started as one (and then never
// returns); otherwise it returns at once. Call it first thing in main, and in
// the TestMain of every package whose tests run commands through a sandbox
// (the test binary is then the helper).
func Main() {
	if len(os.Args) < 2 || os.Args[1] != helperArg {
		return
	}
	err := helper(os.Args[2:])
	fmt.Fprintf(os.Stderr, "agent-lsp sandbox: %v\n", err)
	os.Exit(126) // as a shell does for a command that cannot run
}

// helper applies the policy its arguments give (--write DIR..., --network,
// then -- and the command) and execs the command.
func helper(args []string) error {
	var writable []string
	network := false
	for len(args) > 0 && args[0] != "--" {
		switch {
		case args[0] == "--write" && len(args) > 1:
			writable = append(writable, args[1])
			args = args[2:]
		case args[0] == "--network":
			network = true
			args = args[1:]
		default:
			return fmt.Errorf("unknown argument %q", args[0])
		}
	}
	if len(args) < 2 {
		return errors.New("no command after --")
	}
	argv := args[1:]
	cfg := landlock.V11.BestEffort() // the newest rights, downgraded to what the kernel has
	if network {
		cfg.HandledAccessNet = 0
	}
	err := cfg.Restrict(
		landlock.RODirs("/"),
		landlock.RWDirs(writable...).IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("apply Landlock: %w", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}
