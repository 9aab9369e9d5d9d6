// Package hooks holds the commands a user or a repository runs on the
// agent's events (Claude Code's hooks): before and after each tool call,
// before a prompt is sent and when a run ends. A hook is a shell command
// line; it gets the event as JSON on its standard input and answers with
// its exit status and output: exit 2 from a pre_tool hook blocks the call
// and its standard error is the reason the model reads.
//
// This package parses the file shape (Parse), matches hooks to events
// (Set) and runs them bounded in time and output (Set.Run). Where hooks
// come from, whether a repository's are approved and how they are
// confined is the caller's: it gives each hook's Exec.
package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// Event names when a hook runs.
type Event string

// The events.
const (
	// PreTool runs before a tool call; exit 2 blocks it.
	PreTool Event = "pre_tool"
	// PostTool runs after a tool call, with its result; exit 2 adds its
	// standard error to the result the model reads.
	PostTool Event = "post_tool"
	// Prompt runs before a prompt is sent; its standard output is added
	// to the prompt as context, and exit 2 refuses the prompt.
	Prompt Event = "prompt"
	// Stop runs when a run ends.
	Stop Event = "stop"
)

// spec says what one event does with its hooks.
type spec struct {
	event   Event
	tools   bool   // a matcher selects tools by name
	blocks  bool   // exit 2 stops what the event is about
	context bool   // standard output is added to what the model reads
	exit2   string // what exit 2 does, for messages and docs
}

// events is the table of events, in the order of a run.
var events = []spec{
	{event: Prompt, context: true, blocks: true, exit2: "refuses the prompt; its standard error says why"},
	{event: PreTool, tools: true, blocks: true, exit2: "blocks the call; its standard error is the result the model reads"},
	{event: PostTool, tools: true, exit2: "adds its standard error to the result the model reads"},
	{event: Stop, exit2: "is reported, like any failure"},
}

func lookup(e Event) (spec, bool) {
	i := slices.IndexFunc(events, func(s spec) bool { return s.event == e })
	if i < 0 {
		return spec{}, false
	}
	return events[i], true
}

// Events lists the event names in the order a run reaches them.
func Events() []Event {
	out := make([]Event, len(events))
	for i, s := range events {
		out[i] = s.event
	}
	return out
}

// Source says whose a hook is.
type Source string

// The sources.
const (
	// SourceUser is the user's hooks.json.
	SourceUser Source = "user"
	// SourceEditor is the editor's hooks setting (initializationOptions).
	SourceEditor Source = "editor"
	// SourceProject is a repository's .agents/hooks.json: repository
	// content, run only once approved.
	SourceProject Source = "project"
)

// Bounds of a hook's time: a timeout is clamped to them.
const (
	DefaultTimeout = 30 * time.Second
	minTimeout     = time.Second
	maxTimeout     = 10 * time.Minute
)

// Hook is one command on one event.
type Hook struct {
	Event Event
	// Matcher is a glob over tool names (path.Match's syntax; "a|b"
	// matches either); "" matches every tool. Only tool events have one.
	Matcher string
	Command string
	// Timeout is the hook's own bound; 0 takes the caller's default.
	Timeout time.Duration
	Source  Source
	Origin  string // the file or setting it was read from
}

// Matches says whether h runs for a call of tool.
func (h Hook) Matches(tool string) bool {
	if h.Matcher == "" {
		return true
	}
	for _, alt := range strings.Split(h.Matcher, "|") {
		if ok, _ := path.Match(strings.TrimSpace(alt), tool); ok {
			return true
		}
	}
	return false
}

// String describes h for the user: its event, matcher and command.
func (h Hook) String() string {
	var b strings.Builder
	b.WriteString(string(h.Event))
	if h.Matcher != "" {
		b.WriteString(" " + h.Matcher)
	}
	b.WriteString(": " + h.Command)
	if h.Timeout > 0 {
		fmt.Fprintf(&b, " (timeout %s)", h.Timeout)
	}
	return b.String()
}

// Config is what one file or setting defines: its hooks, in the file's
// order, and the entries that were left out, each with why.
type Config struct {
	Hooks  []Hook
	Errors []string
}

// entry is the JSON shape of one hook.
type entry struct {
	Matcher *string          `json:"matcher"`
	Match   *string          `json:"match"`
	Command *string          `json:"command"`
	Timeout *json.RawMessage `json:"timeout"`
}

var entryFields = []string{"matcher", "match", "command", "timeout"}

// Parse reads a hooks file or setting: {"pre_tool": [{"matcher": "run_command",
// "command": "…", "timeout": 30}], "post_tool": […], "prompt": […], "stop":
// […]}, or the same wrapped as {"hooks": {…}}. An entry that cannot be used
// (an unknown field, no command, a bad matcher or timeout) is left out and
// named in Errors, never read as matching everything; so is an unknown
// event. A document that is not a JSON object defines no hooks and says so.
func Parse(data []byte, origin string, src Source) Config {
	var cfg Config
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return cfg
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: not a JSON object of hooks by event: %v", origin, err))
		return cfg
	}
	if inner, ok := top["hooks"]; ok {
		for k := range top {
			if k != "hooks" {
				cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %q beside \"hooks\" is ignored", origin, k))
			}
		}
		top = nil
		if err := json.Unmarshal(inner, &top); err != nil {
			cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: hooks must be an object of hooks by event: %v", origin, err))
			return cfg
		}
	}
	names := make([]string, 0, len(top))
	for k := range top {
		names = append(names, k)
	}
	sort.SliceStable(names, func(i, j int) bool { return order(names[i]) < order(names[j]) })
	for _, name := range names {
		sp, ok := lookup(Event(name))
		if !ok {
			cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %q is not an event (%s); its hooks are ignored", origin, name, joinEvents()))
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(top[name], &list); err != nil {
			cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %s must be a list of hooks; ignored", origin, name))
			continue
		}
		for i, raw := range list {
			h, err := parseEntry(raw, sp)
			if err != nil {
				cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %s[%d]: %v; this hook is ignored", origin, name, i, err))
				continue
			}
			h.Source, h.Origin = src, origin
			cfg.Hooks = append(cfg.Hooks, h)
		}
	}
	return cfg
}

func order(name string) int {
	i := slices.IndexFunc(events, func(s spec) bool { return string(s.event) == name })
	if i < 0 {
		return len(events)
	}
	return i
}

func joinEvents() string {
	names := make([]string, len(events))
	for i, s := range events {
		names[i] = string(s.event)
	}
	return strings.Join(names, ", ")
}

// parseEntry reads one hook of event sp.
func parseEntry(raw json.RawMessage, sp spec) (Hook, error) {
	h := Hook{Event: sp.event}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return h, fmt.Errorf("not an object with a command")
	}
	for k := range fields {
		if !slices.Contains(entryFields, k) {
			if k == "hooks" || k == "type" {
				return h, fmt.Errorf("unknown field %q (Claude Code's nested shape is not read: write {\"matcher\", \"command\", \"timeout\"})", k)
			}
			return h, fmt.Errorf("unknown field %q (the fields are %s)", k, strings.Join(entryFields, ", "))
		}
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return h, fmt.Errorf("a field has the wrong type: %v", err)
	}
	if e.Command == nil || strings.TrimSpace(*e.Command) == "" {
		return h, fmt.Errorf("no command")
	}
	h.Command = *e.Command
	if e.Matcher != nil && e.Match != nil && *e.Matcher != *e.Match {
		return h, fmt.Errorf("both matcher and match, which differ")
	}
	m := e.Matcher
	if m == nil {
		m = e.Match
	}
	if m != nil && *m != "" {
		if !sp.tools {
			return h, fmt.Errorf("a %s hook has no matcher (it is not about a tool)", sp.event)
		}
		for _, alt := range strings.Split(*m, "|") {
			if _, err := path.Match(strings.TrimSpace(alt), ""); err != nil || strings.TrimSpace(alt) == "" {
				return h, fmt.Errorf("matcher %q is not a glob of tool names", *m)
			}
		}
		if *m != "*" {
			h.Matcher = *m
		}
	}
	if e.Timeout != nil {
		var secs float64
		if err := json.Unmarshal(*e.Timeout, &secs); err != nil || secs <= 0 {
			return h, fmt.Errorf("timeout must be a positive number of seconds")
		}
		h.Timeout = Clamp(time.Duration(secs * float64(time.Second)))
	}
	return h, nil
}

// Clamp bounds a hook's timeout to 1 s–10 min.
func Clamp(d time.Duration) time.Duration { return min(max(d, minTimeout), maxTimeout) }

// Hash identifies what a list of hooks runs: every hook's event, matcher,
// command and timeout, in order. An approval is bound to it, so a changed,
// added or removed hook must be approved again.
func Hash(hooks []Hook) string {
	type canon struct {
		Event   Event  `json:"event"`
		Matcher string `json:"matcher"`
		Command string `json:"command"`
		Timeout int64  `json:"timeout_ms"`
	}
	list := make([]canon, len(hooks))
	for i, h := range hooks {
		list[i] = canon{h.Event, h.Matcher, h.Command, h.Timeout.Milliseconds()}
	}
	data, err := json.Marshal(list)
	if err != nil {
		panic(fmt.Sprintf("hooks: hashing: %v", err)) // strings and numbers only: cannot fail
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Approves reports whether an allow list (--allow-hooks, the allowHooks
// setting) approves hooks whose Hash is hash: "*" (a bare --allow-hooks)
// approves any, HASH (or NAME@HASH, as MCP servers are named) exactly those.
func Approves(allow []string, hash string) bool {
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if i := strings.LastIndexByte(a, '@'); i >= 0 {
			a = a[i+1:]
		}
		if a == "*" || a == hash {
			return true
		}
	}
	return false
}

// IsHash reports whether s has the shape of a Hash (64 hexadecimal digits).
func IsHash(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
