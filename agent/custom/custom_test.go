package custom

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseCommand(t *testing.T) {
	c := ParseCommand("fix", []byte("---\ndescription: Fix an issue\nargument-hint: [issue]\nmodel: gpt-4o\nmode: review\nallowed-tools: Read, Grep, Bash(git status:*)\n---\nFix $ARGUMENTS now.\n"))
	if c.Err != nil || c.Description != "Fix an issue" || c.ArgumentHint != "[issue]" || c.Model != "gpt-4o" || c.Mode != "review" ||
		!slices.Equal(c.AllowedTools, []string{"Read", "Grep", "Bash(git", "status:*)"}) && !slices.Equal(c.AllowedTools, []string{"Read", "Grep", "Bash(git status:*)"}) {
		t.Fatalf("%+v", c)
	}
	if got := c.Expand("the parser"); got != "Fix the parser now." {
		t.Fatalf("expand: %q", got)
	}
	// Not YAML, but plain lines, as Claude Code reads them.
	c = ParseCommand("pr", []byte("---\nargument-hint: [pr-number] [priority]\ndescription: Review a PR\n---\nReview PR $1 at priority $2.\n"))
	if c.Err != nil || c.ArgumentHint != "[pr-number] [priority]" || c.Expand("12 high") != "Review PR 12 at priority high." {
		t.Fatalf("%+v", c)
	}
	// No front matter: the body's first line describes it.
	c = ParseCommand("plain", []byte("# Explain the code\n\nExplain it.\n"))
	if c.Err != nil || c.Description != "Explain the code" || c.Expand("") != "# Explain the code\n\nExplain it." {
		t.Fatalf("%+v", c)
	}
	// Copilot's prompt files say tools, as a list.
	c = ParseCommand("p", []byte("---\nmode: agent\ntools: ['codebase', 'editFiles']\n---\nDo it.\n"))
	if !slices.Equal(c.AllowedTools, []string{"codebase", "editFiles"}) || c.Mode != "agent" {
		t.Fatalf("%+v", c)
	}
	for name, text := range map[string]string{
		"unclosed":  "---\ndescription: x\nbody\n",
		"bad yaml":  "---\ndescription: x\n  nested: [unclosed\n---\nbody\n",
		"no body":   "---\ndescription: x\n---\n\n",
		"bad tools": "---\nallowed-tools: {a: b}\n---\nbody\n",
	} {
		if c := ParseCommand("x", []byte(text)); c.Err == nil {
			t.Errorf("%s: no error: %+v", name, c)
		}
	}
}

func TestExpandArguments(t *testing.T) {
	c := Command{Body: "first $1, second $2, ninth $9, all: $ARGUMENTS; $10"}
	got := c.Expand(`one "two words" three`)
	want := `first one, second two words, ninth , all: one "two words" three; one0`
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	c = Command{Body: "Review the code."}
	if got := c.Expand("carefully"); got != "Review the code.\n\nARGUMENTS: carefully" {
		t.Fatalf("%q", got)
	}
}

func TestParsePrompt(t *testing.T) {
	for prompt, want := range map[string]string{
		"/fix the parser":     "fix|the parser",
		"  /help":             "help|",
		"/frontend:test a b":  "frontend:test|a b",
		"/fix\nmore lines":    "fix|more lines",
		"/usr/bin/env is odd": "",
		"fix /this":           "",
		"/ nothing":           "",
		"/":                   "",
	} {
		name, args, ok := Parse(prompt)
		got := ""
		if ok {
			got = name + "|" + args
		}
		if got != want {
			t.Errorf("Parse(%q) = %q, want %q", prompt, got, want)
		}
	}
}

func TestReferences(t *testing.T) {
	got := References("Look at @src/main.go, and (@docs/a.md). Mail me@example.com; @src/main.go again; `@x`")
	if !slices.Equal(got, []string{"src/main.go", "docs/a.md"}) {
		t.Fatalf("%q", got)
	}
	out := Attach("see @a.go", []Reference{{Path: "a.go", Text: "x := \"```\"\n"}})
	if !strings.Contains(out, "(@a.go is attached:)\n````\nx := \"```\"\n````") {
		t.Fatalf("%s", out)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"fix", "fix-tests", "review", "help", "model", "sessions"}
	if got := Suggest("fx", names); len(got) == 0 || got[0] != "fix" {
		t.Fatalf("%q", got)
	}
	if got := Suggest("revew", names); !slices.Equal(got, []string{"review"}) {
		t.Fatalf("%q", got)
	}
	if got := Suggest("zzzzzzzz", names); len(got) != 0 {
		t.Fatalf("%q", got)
	}
}

func TestLoadFolders(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	write(t, filepath.Join(project, ".agents/commands/fix.md"), "---\ndescription: project fix\n---\nFix $ARGUMENTS\n")
	write(t, filepath.Join(project, ".claude/commands/fix.md"), "Shadowed by .agents.\n")
	write(t, filepath.Join(project, ".claude/commands/frontend/test.md"), "Test the frontend.\n")
	write(t, filepath.Join(project, ".claude/commands/notes.txt"), "not a command\n")
	write(t, filepath.Join(project, ".github/prompts/explain.prompt.md"), "---\ndescription: explain\n---\nExplain.\n")
	write(t, filepath.Join(project, ".github/prompts/README.md"), "not a prompt file\n")
	write(t, filepath.Join(project, ".agents/commands/deploy.md"), "Project deploy.\n")
	write(t, filepath.Join(user, "commands/deploy.md"), "---\ndescription: my deploy\n---\nMy deploy.\n")
	write(t, filepath.Join(user, "commands/mine.md"), "Mine.\n")
	cmds, problems := Folders{Project: project, User: user}.Commands()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, string(c.Source)+":"+c.Name+":"+c.Path+":"+c.Description)
	}
	want := []string{
		"user:deploy:" + filepath.Join(user, "commands/deploy.md") + ":my deploy",
		"user:mine:" + filepath.Join(user, "commands/mine.md") + ":Mine.",
		"project:fix:.agents/commands/fix.md:project fix",
		"project:frontend:test:.claude/commands/frontend/test.md:Test the frontend.",
		"project:explain:.github/prompts/explain.prompt.md:explain",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	write(t, filepath.Join(project, ".agents/agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews code\ntools: [read_file, search]\nmodel: small\nmax_loops: 5\n---\nYou review code.\n")
	write(t, filepath.Join(project, ".claude/agents/tester.md"), "---\ndescription: Tests\ntools: Read, Bash\n---\nYou test.\n")
	write(t, filepath.Join(user, "agents/reviewer.md"), "---\ndescription: my reviewer\n---\nMine.\n")
	agents, problems := Folders{Project: project, User: user}.Agents()
	if len(problems) != 0 || len(agents) != 2 {
		t.Fatalf("%+v %v", agents, problems)
	}
	if a := agents[0]; a.Name != "reviewer" || a.Source != User || a.Description != "my reviewer" || a.Tools != nil {
		t.Fatalf("%+v", a)
	}
	if a := agents[1]; a.Name != "tester" || a.Source != Project || !slices.Equal(a.Tools, []string{"Read", "Bash"}) || a.Prompt != "You test." {
		t.Fatalf("%+v", a)
	}
}

// A hostile repository's command and agent files (testdata/hostile/
// custom-repo): a link out of the project, a front matter over the limit, a
// YAML bomb. Each is listed with a clear error; nothing outside is read,
// and nothing takes long.
func TestHostileFiles(t *testing.T) {
	project := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(project, os.DirFS(filepath.Join("..", "..", "testdata", "hostile", "custom-repo"))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmds, _ := Folders{Project: project}.Commands()
	agents, _ := Folders{Project: project}.Agents()
	if d := time.Since(start); d > 20*time.Second { // only to catch a bomb that exploded
		t.Fatalf("loading took %v", d)
	}
	byName := map[string]Command{}
	for _, c := range cmds {
		byName[c.Name] = c
	}
	for name, want := range map[string]string{
		"huge":   "front matter is over 8192 bytes",
		"bomb":   "front matter: line 10: a name must be a string",
		"linked": "path escapes from parent",
	} {
		c, ok := byName[name]
		if !ok || c.Err == nil || !strings.Contains(c.Err.Error(), want) {
			t.Errorf("%s: %+v, want an error saying %q", name, c, want)
		}
		if strings.Contains(c.Body, "root:") {
			t.Errorf("%s read /etc/passwd", name)
		}
	}
	if len(agents) != 1 || agents[0].Err == nil || !strings.Contains(agents[0].Err.Error(), "front matter") {
		t.Fatalf("agents: %+v", agents)
	}
}

func TestSelectTools(t *testing.T) {
	avail := []string{"read_file", "list_files", "search", "edit_file", "create_file", "run_command", "mcp__gh__issues", "mcp__gh__prs", "mcp__db__query"}
	chosen, unknown := SelectTools([]string{"read_file", "Grep", "Bash(git status:*)", "mcp__gh", "nonsense"}, avail)
	if !slices.Equal(chosen, []string{"mcp__gh__issues", "mcp__gh__prs", "read_file", "run_command", "search"}) || !slices.Equal(unknown, []string{"nonsense"}) {
		t.Fatalf("%q %q", chosen, unknown)
	}
	chosen, _ = SelectTools([]string{"read"}, avail[:3])
	if !slices.Equal(chosen, []string{"list_files", "read_file", "search"}) {
		t.Fatalf("%q", chosen)
	}
	// A group whose tools are not available chooses nothing, and is not unknown.
	chosen, unknown = SelectTools([]string{"edit"}, avail[:3])
	if len(chosen) != 0 || len(unknown) != 0 {
		t.Fatalf("%q %q", chosen, unknown)
	}
}

// An agent file's isolation: worktree or none (the same as nothing); any
// other value makes the file an error that says what to write.
func TestAgentIsolation(t *testing.T) {
	for _, c := range []struct{ front, want, err string }{
		{"isolation: worktree", "worktree", ""},
		{"isolation: none", "", ""},
		{"", "", ""},
		{"isolation: container", "", "give worktree or none"},
	} {
		a := ParseAgent("x", []byte("---\n"+c.front+"\n---\nDo it.\n"))
		if a.Isolation != c.want && c.err == "" || c.err == "" && a.Err != nil || c.err != "" && (a.Err == nil || !strings.Contains(a.Err.Error(), c.err)) {
			t.Errorf("%q: isolation %q, err %v", c.front, a.Isolation, a.Err)
		}
	}
}
