//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store/postgres/pgtest"
)

// workflowStep is one step of a GitHub Actions job as docs/ci.md shows it.
type workflowStep struct {
	job, name, id, run string
	env                map[string]string
}

// workflowSteps reads the steps of the YAML block after marker in the doc:
// each job's env, and each step's name, id, env and run (a line or a |
// block), as GitHub Actions reads them for the workflows of docs/ci.md.
func workflowSteps(t *testing.T, doc, marker string) []workflowStep {
	t.Helper()
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("docs/ci.md has no %s", marker)
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	block, _, _ := strings.Cut(rest, "```\n")
	var steps []workflowStep
	jobEnv := map[string]map[string]string{}
	var job string
	var env map[string]string // the mapping being read: a job's or a step's env
	var step *workflowStep
	var inRun bool
	for _, line := range strings.Split(block, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := strings.TrimSpace(line)
		switch {
		case inRun && (indent >= 10 || text == ""):
			step.run += strings.TrimPrefix(line, strings.Repeat(" ", 10)) + "\n"
			continue
		case inRun:
			inRun = false
		}
		key, value, _ := strings.Cut(strings.TrimPrefix(text, "- "), ":")
		value = strings.TrimSpace(value)
		switch {
		case indent == 2 && value == "":
			job, env, step = key, nil, nil
			jobEnv[job] = map[string]string{}
		case indent == 4 && key == "env":
			env = jobEnv[job]
		case indent == 6 && strings.HasPrefix(text, "- "):
			steps = append(steps, workflowStep{job: job, env: map[string]string{}})
			step, env = &steps[len(steps)-1], nil
			fallthrough
		case step != nil && indent == 8:
			switch key {
			case "name":
				step.name = value
			case "id":
				step.id = value
			case "env":
				env = step.env
			case "run":
				step.run, inRun = value, value == "|"
				if inRun {
					step.run = ""
				}
			}
		case env != nil && (indent == 6 || indent == 10):
			env[key] = value
		}
	}
	for i := range steps {
		for k, v := range jobEnv[steps[i].job] {
			if _, ok := steps[i].env[k]; !ok {
				steps[i].env[k] = v
			}
		}
	}
	return steps
}

// TestCIWorkflow runs the shell steps of docs/ci.md's GitHub Actions
// workflow, in order, as the runner would (bash -eo pipefail, the step's
// env, $GITHUB_OUTPUT), against the scripted model: the review of a pull
// request (a denied command: exit 4, listed in the comment), its comment
// (a stand-in gh), and the second job continuing the session on the shared
// store (PostgreSQL when the tests have one, else a store file).
func TestCIWorkflow(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := workflowSteps(t, string(doc), "<!-- ci-workflow: github -->")
	if len(steps) < 6 {
		t.Fatalf("read %d steps: %+v", len(steps), steps)
	}
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("the workflow uses jq (GitHub's runners have it): apt-get install jq")
	}
	c := newCLI(t, scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "make lint"})}},
		scripted.Turn{Text: "greet.go:4: Greet does not check for an empty name."},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "empty_test.go", "content": "package sample\n"})}},
		scripted.Turn{Text: "Added empty_test.go."})
	store := c.store
	if os.Getenv(pgtest.Env) != "" {
		store = pgtest.FreshSchema(t)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = c.workspace
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "feature")
	git("add", ".")
	git("commit", "-qm", "base")
	git("update-ref", "refs/remotes/origin/main", "HEAD")
	os.WriteFile(filepath.Join(c.workspace, "greet.go"), []byte(strings.Replace(mustRead(t, filepath.Join(c.workspace, "greet.go")), "Hello", "Hi", 1)), 0o644)
	git("commit", "-qam", "the change")

	bin := t.TempDir() // agent-lsp (the Install step's), and a gh that records its arguments
	os.Symlink(binary, filepath.Join(bin, "agent-lsp"))
	ghLog := filepath.Join(t.TempDir(), "gh.log")
	os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\necho \"$*\" >> "+ghLog+"\n"), 0o755)
	secrets := map[string]string{"secrets.OPENAI_API_KEY": "demo-not-a-secret", "secrets.AGENT_LSP_STORE": store, "github.base_ref": "main",
		"github.token": "test-token", "github.event.pull_request.number": "7"}
	expr := regexp.MustCompile(`\$\{\{\s*([^}]+?)\s*\}\}`)
	var ran []string
	for _, s := range steps {
		if s.run == "" || strings.HasPrefix(s.name, "Install") {
			continue
		}
		output := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.run)
		cmd.Dir = c.workspace
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "OPENAI_BASE_URL="+c.srv.URL, "AGENT_LSP_MODEL=scripted", "GITHUB_OUTPUT="+output)
		for k, v := range s.env {
			cmd.Env = append(cmd.Env, k+"="+expr.ReplaceAllStringFunc(v, func(m string) string {
				name := expr.FindStringSubmatch(m)[1]
				v, ok := secrets[name]
				if !ok {
					t.Fatalf("step %q: %s is not known to the test", s.name, name)
				}
				return v
			}))
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("step %q (job %s) failed: %v\n%s", s.name, s.job, err, out)
		}
		ran = append(ran, s.name)
		if f, err := os.Open(output); err == nil { // the job's outputs, for the next job
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					secrets["needs."+s.job+".outputs."+k] = v
					secrets["steps."+s.id+".outputs."+k] = v
				}
			}
			f.Close()
		}
	}
	if strings.Join(ran, ", ") != "Review the pull request, Post the review, Continue the session" {
		t.Fatalf("ran %v", ran)
	}
	review := mustRead(t, filepath.Join(c.workspace, "review.md"))
	if !strings.Contains(review, "Greet does not check for an empty name.") || !strings.Contains(review, `denied: make lint (--allow "make lint")`) {
		t.Fatalf("review.md:\n%s", review)
	}
	if gh := mustRead(t, ghLog); gh != "pr comment 7 --body-file review.md\n" {
		t.Fatalf("gh was run with: %q", gh)
	}
	reqs := c.srv.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[1].Content, "pr.diff") || !strings.Contains(mustRead(t, filepath.Join(c.workspace, "pr.diff")), "+\treturn \"Hi, \"") {
		t.Fatal("the second job did not continue the first job's session, or the diff is not the pull request's")
	}
	if d := mustRead(t, filepath.Join(c.workspace, "tests.diff")); !strings.Contains(d, "+++ b/empty_test.go") {
		t.Fatalf("tests.diff:\n%s", d)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
