package server

import (
	"context"
	"time"
)

// ProcessInfo is one running background process of agent.processes.
type ProcessInfo struct {
	Session string    `json:"session"`
	ID      string    `json:"id"`
	Command string    `json:"command"`
	Project string    `json:"project"`
	Started time.Time `json:"started"`
}

// ProcessesArgs narrow agent.processes to one session.
type ProcessesArgs struct {
	Session string `json:"session,omitempty"`
}

func (s *Server) processesCommand(ctx context.Context, call commandCall, a ProcessesArgs) ([]ProcessInfo, error) {
	out := []ProcessInfo{}
	for _, p := range call.b.Live().Processes(call.b.Runtime) {
		if a.Session == "" || p.Session == a.Session {
			out = append(out, ProcessInfo{Session: p.Session, ID: p.ID, Command: p.Command, Project: p.Project, Started: p.Started})
		}
	}
	return out, nil
}

// StopProcessArgs name a background process of a running session.
type StopProcessArgs struct {
	Session string `json:"session" required:"true"`
	ID      string `json:"id" required:"true"`
}

// StopProcessResult is agent.stopProcess's result.
type StopProcessResult struct {
	Stopped bool `json:"stopped"`
}

func (s *Server) stopProcessCommand(ctx context.Context, call commandCall, a StopProcessArgs) (StopProcessResult, error) {
	if err := call.b.Live().StopProcess(call.b.Runtime, a.Session, a.ID); err != nil {
		return StopProcessResult{}, invalidParams("agent.stopProcess: %v", err)
	}
	return StopProcessResult{Stopped: true}, nil
}
