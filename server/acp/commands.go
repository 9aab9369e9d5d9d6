package acp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server/session"
)

// Slash commands over ACP: the session's commands are announced with
// available_commands_update (after session/new's answer, after
// session/load's replay, and again after a prompt when they changed), and
// a prompt that starts with /name is expanded as agent.run expands it.

// acpOut is the connection's output: it runs a hook once the answer that
// names a session has been written (session/new's), so that what the hook
// sends about the session reaches the client after the client knows it.
type acpOut struct {
	w io.Writer

	mu    sync.Mutex        // guards after
	after map[string]func() // session ID -> what to do once its answer is out
}

// Write writes one message (the SDK writes each whole, under its lock) and
// starts the hooks of the sessions whose answer it is.
func (o *acpOut) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil || !bytes.Contains(p, []byte(`"result"`)) {
		return n, err
	}
	o.mu.Lock()
	var run []func()
	for id, f := range o.after {
		if bytes.Contains(p, []byte(`"sessionId":"`+id+`"`)) {
			run = append(run, f)
			delete(o.after, id)
		}
	}
	o.mu.Unlock()
	for _, f := range run {
		go f() // the SDK holds its write lock until Write returns
	}
	return n, err
}

// afterAnswer runs f once the answer naming session id has been written.
func (o *acpOut) afterAnswer(id string, f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.after == nil {
		o.after = map[string]func(){}
	}
	o.after[id] = f
}

// announceCommands sends the session's slash commands when they differ
// from what it last sent.
func (a *acpAgent) announceCommands(ctx context.Context, s *acpSession) {
	list, err := a.backend().Commands(s.project)
	if err != nil {
		a.log("slash commands of session " + s.id + ": " + err.Error())
		return
	}
	cmds := make([]acp.AvailableCommand, 0, len(list))
	var sig strings.Builder
	for _, c := range list {
		if c.Error != "" {
			continue // it cannot run: /help says why
		}
		ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.ArgumentHint != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.ArgumentHint}}
		}
		cmds = append(cmds, ac)
		sig.WriteString(c.Name + "\x00" + c.Description + "\x00" + c.ArgumentHint + "\x00")
	}
	s.mu.Lock()
	same := s.announced == sig.String()
	s.announced = sig.String()
	s.mu.Unlock()
	if same {
		return
	}
	upd := acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}
	if err := a.client().SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(s.id), Update: upd}); err != nil {
		a.log("available_commands_update of session " + s.id + ": " + err.Error())
	}
}

// acpSlash expands a prompt of session s that starts with /name: done when
// a built-in answered it (its reply sent as the agent's message); else req
// takes the command's prompt, tools and model, and review says whether its
// edits need confirmation.
func (a *acpAgent) acpSlash(ctx context.Context, s *acpSession, req *agent.Request, review *bool) (done bool, err error) {
	b := a.backend()
	s.mu.Lock()
	chosen, stored := s.model, s.stored
	s.mu.Unlock()
	in := session.SlashInput{Project: s.project, Model: cmp.Or(chosen, b.Settings.Model)}
	if stored {
		in.Session = s.id
		if sess, err := b.Store.Session(ctx, s.id); err == nil {
			in.Model = cmp.Or(chosen, sess.Model, b.Settings.Model)
		}
	}
	in.SetModel = func(ctx context.Context, name string) error {
		if stored {
			if err := b.SetStoredModel(ctx, s.id, name); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.model = name
		s.mu.Unlock()
		return nil
	}
	res, ok, err := b.ExpandSlash(ctx, in, req.Prompt)
	switch {
	case !ok:
		return false, nil
	case err != nil:
		if session.SlashError(err) || errorsIsBusy(err) {
			return false, acp.NewInvalidParams(map[string]any{"error": err.Error()})
		}
		return false, err
	case res.Builtin:
		(&acpUpdates{conn: a.client(), session: s}).send(acp.UpdateAgentMessageText(res.Reply))
		return true, nil
	}
	req.Title, req.Prompt, req.Tools = req.Prompt, res.Prompt, res.Tools
	if res.Model != "" && chosen == "" {
		req.Model = res.Model
	}
	*review = *review || res.Review
	return false, nil
}

func errorsIsBusy(err error) bool {
	return errors.Is(err, agent.ErrSessionBusy) || errors.Is(err, agent.ErrUnknownSession)
}
