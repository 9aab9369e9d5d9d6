package session

import (
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/mcp"
)

// MCPPool shares MCP managers among a process's connections: windows whose
// servers are defined, resolved and run identically (same definitions,
// environment, folder and timeouts) use one set of processes. The zero
// value is ready.
type MCPPool struct {
	mu    sync.Mutex // guards byKey
	byKey map[string]*pooledManager
}

type pooledManager struct {
	mgr  *mcp.Manager
	refs int
}

// acquire returns the manager for key, creating it with create when none
// is shared; release gives it back, closing it with its last user.
func (p *MCPPool) acquire(key string, create func() (*mcp.Manager, error)) (mgr *mcp.Manager, release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pm, ok := p.byKey[key]
	if !ok {
		m, err := create()
		if err != nil {
			return nil, nil, err
		}
		pm = &pooledManager{mgr: m}
		if p.byKey == nil {
			p.byKey = map[string]*pooledManager{}
		}
		p.byKey[key] = pm
	}
	pm.refs++
	var once sync.Once
	return pm.mgr, func() {
		once.Do(func() {
			p.mu.Lock()
			pm.refs--
			last := pm.refs == 0
			if last {
				delete(p.byKey, key)
			}
			p.mu.Unlock()
			if last {
				pm.mgr.Close()
			}
		})
	}, nil
}

// shared reports how many managers are shared now, and their users.
func (p *MCPPool) shared() (managers, users int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pm := range p.byKey {
		managers++
		users += pm.refs
	}
	return managers, users
}
