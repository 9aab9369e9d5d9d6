package tools

import (
	"context"
	"encoding/json"
)

// ToolRequest is a call of a tool another program provides (an MCP
// server's) that needs the user's permission.
type ToolRequest struct {
	Session string
	Project string
	Tool    string // the name the model calls, e.g. mcp__github__create_issue
	Server  string // the program that provides it
	Args    string // the model's arguments, as JSON
}

// ToolPermissions is what a Permissions port implements to allow calls of
// other programs' tools. A port without it denies them: the agent never
// calls another program's tool that nobody could have been asked about.
type ToolPermissions interface {
	AllowTool(ctx context.Context, req ToolRequest) (Permission, error)
}

// ExternalCall calls another program's tool with the model's arguments; its
// result is cut to limit bytes.
type ExternalCall func(ctx context.Context, args json.RawMessage, limit int) (Result, error)

// External is a tool another program provides: each call first asks the
// permission port (ToolPermissions), then calls; the call's intent is
// recorded first unless the server says the tool only reads (readOnly: its
// MCP annotation readOnlyHint).
func External(name, server, description string, schema json.RawMessage, readOnly bool, call ExternalCall) Tool {
	return Tool{Name: name, Description: description, Schema: schema, External: server, ReadOnly: readOnly, schema: parseSchema(schema),
		Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
			tp, ok := env.Permissions.(ToolPermissions)
			if !ok {
				return errorf("%s is a tool of %s, and this client cannot be asked to allow it", name, server)
			}
			perm, err := tp.AllowTool(ctx, ToolRequest{Session: env.Session, Project: env.Project, Tool: name, Server: server, Args: string(args)})
			if err != nil {
				return Result{}, err
			}
			if !perm.Allowed {
				return Result{Content: "error: not allowed: " + perm.Reason, IsError: true, Summary: name + " not allowed",
					Denied: &Denial{What: name, Hint: perm.Hint}}, nil
			}
			if !readOnly {
				if err := env.intend(ctx, Intent{}); err != nil {
					return errNotRecorded("the call of "+name, err), nil
				}
			}
			return call(ctx, args, env.maxOutput())
		}}
}
