package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	o, err := parseOpts(os.Args[2:])
	if err == nil {
		err = runHelper(o) // returns only on failure
	}
	fmt.Fprintf(os.Stderr, "agent-lsp sandbox: %v\n", err)
	os.Exit(126) // as a shell does for a command that cannot run
}

// stage is what one run of the helper does.
type stage string

const (
	// stageSpawn starts stageNS in new namespaces and waits for it (for a
	// caller that can only change a command line, such as MCP servers).
	stageSpawn stage = "spawn"
	// stageNS runs in new namespaces (its parent set them up): mounts,
	// drops everything, then runs the command as the namespace's init.
	stageNS stage = "ns"
	// stageProbe does what stageNS does, without a command.
	stageProbe stage = "probe"
	// stageReaper is the snapshot mechanism's supervisor: a child subreaper
	// that starts stageRestrict and kills what the command left.
	stageReaper stage = "reaper"
	// stageRestrict drops everything and execs the command.
	stageRestrict stage = "restrict"
)

// opts is the helper's command line: how to confine one command.
type opts struct {
	stage   stage
	next    stage    // stageSpawn: the stage it starts (stageNS or stageReaper)
	root    string   // the project's root; ro and pin are relative to it
	write   []string // Landlock: writable directories
	network bool     // no Landlock network rules
	netns   bool     // in a network namespace of its own: bring loopback up
	ro      []string // bind read-only (relative to root)
	roAbs   []string // bind read-only (absolute)
	pin     []string // bind onto itself (relative to root)
	links   []string // Windows: protected links, denied as themselves (relative to root)
	token   bool     // Windows: run the command with a write-restricted token
	temps   []string // directories the private /tmp is also mounted on
	tmpSize int64    // bytes of the private /tmp
	cgroup  string   // the pids cgroup to join
	nproc   int      // RLIMIT_NPROC, when > 0 (Windows: the Job Object's processes)
	memory  int64    // Windows: the Job Object's committed memory in bytes, when > 0
	server  int      // the process whose network namespace's sockets are masked
	gocache string   // GOCACHE for the command
	argv    []string // the command
}

// optFlags is the table of the helper's flags: each sets one field.
var optFlags = map[string]func(o *opts, v string) error{
	"--stage":    func(o *opts, v string) error { o.stage = stage(v); return nil },
	"--next":     func(o *opts, v string) error { o.next = stage(v); return nil },
	"--root":     func(o *opts, v string) error { o.root = v; return nil },
	"--write":    func(o *opts, v string) error { o.write = append(o.write, v); return nil },
	"--ro":       func(o *opts, v string) error { o.ro = append(o.ro, v); return nil },
	"--ro-abs":   func(o *opts, v string) error { o.roAbs = append(o.roAbs, v); return nil },
	"--pin":      func(o *opts, v string) error { o.pin = append(o.pin, v); return nil },
	"--link":     func(o *opts, v string) error { o.links = append(o.links, v); return nil },
	"--temp":     func(o *opts, v string) error { o.temps = append(o.temps, v); return nil },
	"--cgroup":   func(o *opts, v string) error { o.cgroup = v; return nil },
	"--gocache":  func(o *opts, v string) error { o.gocache = v; return nil },
	"--tmp-size": func(o *opts, v string) (err error) { o.tmpSize, err = strconv.ParseInt(v, 10, 64); return err },
	"--nproc":    func(o *opts, v string) (err error) { o.nproc, err = strconv.Atoi(v); return err },
	"--memory":   func(o *opts, v string) (err error) { o.memory, err = strconv.ParseInt(v, 10, 64); return err },
	"--server":   func(o *opts, v string) (err error) { o.server, err = strconv.Atoi(v); return err },
}

// optSwitches are the flags without a value.
var optSwitches = map[string]func(o *opts){
	"--network": func(o *opts) { o.network = true },
	"--netns":   func(o *opts) { o.netns = true },
	"--token":   func(o *opts) { o.token = true },
}

func parseOpts(args []string) (*opts, error) {
	o := &opts{}
	for len(args) > 0 && args[0] != "--" {
		if set, ok := optSwitches[args[0]]; ok {
			set(o)
			args = args[1:]
			continue
		}
		set, ok := optFlags[args[0]]
		if !ok || len(args) < 2 {
			return nil, fmt.Errorf("unknown argument %q", args[0])
		}
		if err := set(o, args[1]); err != nil {
			return nil, fmt.Errorf("%s: %w", args[0], err)
		}
		args = args[2:]
	}
	if len(args) > 0 {
		o.argv = args[1:]
	}
	if o.stage == "" {
		o.stage = stageRestrict
	}
	if len(o.argv) == 0 && o.stage != stageProbe {
		return nil, errors.New("no command after --")
	}
	return o, nil
}

// args is the command line that gives back o (without the command).
func (o *opts) args() []string {
	out := []string{"--stage", string(o.stage)}
	add := func(flag string, vs ...string) {
		for _, v := range vs {
			out = append(out, flag, v)
		}
	}
	if o.next != "" {
		add("--next", string(o.next))
	}
	if o.root != "" {
		add("--root", o.root)
	}
	add("--write", o.write...)
	add("--ro", o.ro...)
	add("--ro-abs", o.roAbs...)
	add("--pin", o.pin...)
	add("--link", o.links...)
	add("--temp", o.temps...)
	if o.tmpSize > 0 {
		add("--tmp-size", strconv.FormatInt(o.tmpSize, 10))
	}
	if o.cgroup != "" {
		add("--cgroup", o.cgroup)
	}
	if o.nproc > 0 {
		add("--nproc", strconv.Itoa(o.nproc))
	}
	if o.memory > 0 {
		add("--memory", strconv.FormatInt(o.memory, 10))
	}
	if o.server > 0 {
		add("--server", strconv.Itoa(o.server))
	}
	if o.gocache != "" {
		add("--gocache", o.gocache)
	}
	if o.network {
		out = append(out, "--network")
	}
	if o.netns {
		out = append(out, "--netns")
	}
	if o.token {
		out = append(out, "--token")
	}
	return out
}

// commandLine is the helper's full command line for o.
func (o *opts) commandLine(helper string) []string {
	out := append([]string{helper, helperArg}, o.args()...)
	return append(append(out, "--"), o.argv...)
}

// env is the command's environment: this process's (the caller gave the
// helper the command's), with GOCACHE set to the sandbox's own.
func (o *opts) env() []string {
	env := os.Environ()
	if o.gocache != "" {
		env = setenv(env, "GOCACHE", o.gocache)
	}
	return env
}

// setenv returns env with name set to value, replacing every earlier value
// (programs differ in which of two they read).
func setenv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
