package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/conc/pool"

	"github.com/agent-lsp/agent-lsp/store"
)

// Start and End are the pseudo-nodes where a run enters and leaves the graph.
const (
	Start = "__start__"
	End   = "__end__"
)

// Node is one unit of work. It reads the state and returns exactly one patch.
// It must return promptly once ctx is cancelled.
type Node func(ctx context.Context, s State) (Patch, error)

// Route is a target chosen by a Router: a node to trigger, or a Send task.
type Route struct {
	node string
	arg  any
	send bool
}

// To routes to a node (or End).
func To(node string) Route { return Route{node: node} }

// Send routes to a new task of node with its own argument; several Sends to one
// node run as parallel tasks in the same step.
func Send(node string, arg any) Route { return Route{node: node, arg: arg, send: true} }

// Router chooses the next targets from the state after a step.
type Router func(s State) []Route

// Builder assembles a Graph.
type Builder struct {
	schema  *Schema
	nodes   map[string]Node
	edges   map[string][]string
	routers map[string]Router
	err     error
}

// New starts a graph over the given schema.
func New(schema *Schema) *Builder {
	return &Builder{schema: schema, nodes: map[string]Node{}, edges: map[string][]string{}, routers: map[string]Router{}}
}

// Node adds a node.
func (b *Builder) Node(name string, fn Node) *Builder {
	if name == Start || name == End || name == "" {
		b.fail(fmt.Errorf("node name %q is reserved", name))
	} else if _, dup := b.nodes[name]; dup {
		b.fail(fmt.Errorf("node %q added twice", name))
	}
	b.nodes[name] = fn
	return b
}

// Edge always routes from one node to another after from runs.
func (b *Builder) Edge(from, to string) *Builder {
	b.edges[from] = append(b.edges[from], to)
	return b
}

// Branch adds a conditional edge: after from runs, r chooses the targets.
func (b *Builder) Branch(from string, r Router) *Builder {
	if _, dup := b.routers[from]; dup {
		b.fail(fmt.Errorf("node %q has two routers", from))
	}
	b.routers[from] = r
	return b
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Compile checks the graph and returns it.
func (b *Builder) Compile() (*Graph, error) {
	if b.err != nil {
		return nil, fmt.Errorf("compile graph: %w", b.err)
	}
	for from, tos := range b.edges {
		if _, ok := b.nodes[from]; !ok && from != Start {
			return nil, fmt.Errorf("compile graph: edge from unknown node %q", from)
		}
		for _, to := range tos {
			if _, ok := b.nodes[to]; !ok && to != End {
				return nil, fmt.Errorf("compile graph: edge to unknown node %q", to)
			}
		}
	}
	for from := range b.routers {
		if _, ok := b.nodes[from]; !ok && from != Start {
			return nil, fmt.Errorf("compile graph: router on unknown node %q", from)
		}
	}
	if len(b.edges[Start]) == 0 && b.routers[Start] == nil {
		return nil, fmt.Errorf("compile graph: nothing follows %s", Start)
	}
	return &Graph{schema: b.schema, nodes: b.nodes, edges: b.edges, routers: b.routers, live: map[threadKey]*runner{}}, nil
}

// Graph is a compiled graph; it is safe for concurrent runs on different threads.
type Graph struct {
	schema  *Schema
	nodes   map[string]Node
	edges   map[string][]string
	routers map[string]Router

	mu   sync.Mutex            // guards live
	live map[threadKey]*runner // the invocation running on each thread, for Queue
}

// Status is how a run ended, or that it is running: the store's type, so the
// kernel, the store and the session index share one set of values.
type Status = store.Status

// Run statuses.
const (
	StatusRunning   = store.StatusRunning
	StatusDone      = store.StatusDone
	StatusCancelled = store.StatusCancelled
	StatusFailed    = store.StatusFailed
	StatusLimit     = store.StatusLimit
)

// DefaultStepLimit is the step limit of a run whose Config sets none: the
// agent's default too (a model turn and a tool round are one step each).
const DefaultStepLimit = 100

// EventType names what an Event reports.
type EventType string

// Event types.
const (
	StepStart    EventType = "step.start"
	NodeStart    EventType = "node.start"
	NodeEnd      EventType = "node.end"
	PatchApplied EventType = "patch.applied"
	StepEnd      EventType = "step.end"
	// InputApplied reports a queued input (TaskID is its ID) stored with the
	// checkpoint of Step.
	InputApplied EventType = "input.applied"
)

// Event reports progress of a run.
type Event struct {
	Type   EventType
	Step   int
	Node   string
	TaskID string
	Err    error
}

// Config says where a run's state lives and how it may run.
type Config struct {
	Thread       string
	Namespace    string
	Checkpointer store.Checkpointer // nil: no persistence
	StepLimit    int                // steps per invocation; 0 means DefaultStepLimit
	Concurrency  int                // parallel tasks per step; 0 means 16
	Events       func(Event)        // called synchronously; may be nil
	// Index, when set, returns the session index entry to store with each
	// checkpoint of the thread, in the same transaction (nil: none). It runs
	// at the barrier with the state and status being checkpointed; the kernel
	// passes its result to the store without reading it.
	Index func(s State, status Status) *store.Session
	// Accepts, when set, says whether queued input (Queue) may be applied to
	// state s, the state after a step's writes; nil accepts any state.
	Accepts func(s State) bool
	// Durability says when the run's checkpoints and pending writes reach
	// the disk ("": the store's default). Queued input is always stored
	// synchronously.
	Durability store.Durability
}

// Result is how a run ended.
type Result struct {
	Status Status
	State  State
	Steps  int // steps executed by this invocation
	Err    error
	// Queued lists the IDs of inputs queued (Queue) that the run ended
	// without applying, in queue order; the caller hands them back.
	Queued []string
}

type task struct {
	store.Task
	seq int
}

type runner struct {
	g       *Graph
	cfg     Config
	vals    map[string]any
	step    int    // newest stored step
	steps   int    // steps run by this invocation
	written Status // status of the newest stored checkpoint
	inbox   inbox
	// intents are the intents of the interrupted step a Resume runs again
	// (see intents.go); read by its tasks, dropped at its barrier.
	intents map[string]json.RawMessage
}

// Invoke applies input as a new step (entering at Start) and runs until the
// graph ends, the step limit is hit, the context is cancelled or a node fails.
// It continues the thread's stored state when there is one. Input messages whose
// IDs are already stored replace themselves, so re-delivering an input is a no-op.
func (g *Graph) Invoke(ctx context.Context, cfg Config, input Patch) (Result, error) {
	r, err := g.open(ctx, cfg)
	if err == nil {
		err = g.register(r)
	}
	if err != nil {
		return Result{Status: StatusFailed, Err: err}, err
	}
	defer g.unregister(r)
	next, err := r.barrier(ctx, []task{{Task: store.Task{Node: Start}}}, []Patch{input})
	if err != nil {
		res := Result{Status: StatusFailed, State: State{vals: r.vals}, Err: err, Queued: r.close()}
		return res, err
	}
	return r.loop(ctx, next, nil)
}

// Resume continues the thread from its newest checkpoint without new input: the
// tasks that checkpoint planned run again, except those whose writes were kept
// as pending writes. A thread that had ended returns its state unchanged.
func (g *Graph) Resume(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Checkpointer == nil {
		err := errors.New("resume needs a checkpointer")
		return Result{Status: StatusFailed, Err: err}, err
	}
	st, err := cfg.Checkpointer.Load(ctx, cfg.Thread, cfg.Namespace)
	if err != nil {
		return Result{Status: StatusFailed, Err: err}, err
	}
	r, err := g.fromState(cfg, st)
	if err != nil {
		return Result{Status: StatusFailed, Err: err}, err
	}
	if len(st.Next) == 0 {
		return Result{Status: st.Status, State: State{vals: r.vals}}, nil
	}
	if err := g.register(r); err != nil {
		return Result{Status: StatusFailed, Err: err}, err
	}
	defer g.unregister(r)
	st.Pending = r.takeIntents(st.Pending)
	if err := r.restoreInputs(st.Pending); err != nil {
		return r.end(ctx, StatusFailed, nil, err)
	}
	next := make([]task, len(st.Next))
	for i, t := range st.Next {
		next[i] = task{Task: t, seq: i}
	}
	pending := map[string]Patch{}
	for id, raw := range st.Pending {
		if strings.HasPrefix(id, inputPrefix) {
			continue
		}
		p, err := g.schema.decodePatch(raw)
		if err != nil {
			return r.end(ctx, StatusFailed, next, err)
		}
		pending[id] = p
	}
	return r.loop(ctx, next, pending)
}

func (g *Graph) open(ctx context.Context, cfg Config) (*runner, error) {
	if cfg.Checkpointer == nil {
		return &runner{g: g, cfg: cfg, vals: map[string]any{}, step: -1}, nil
	}
	st, err := cfg.Checkpointer.Load(ctx, cfg.Thread, cfg.Namespace)
	if errors.Is(err, store.ErrNotFound) {
		return &runner{g: g, cfg: cfg, vals: map[string]any{}, step: -1}, nil
	}
	if err != nil {
		return nil, err
	}
	return g.fromState(cfg, st)
}

func (g *Graph) fromState(cfg Config, st *store.State) (*runner, error) {
	vals, err := g.schema.load(st)
	if err != nil {
		return nil, fmt.Errorf("load thread %s/%s: %w", cfg.Thread, cfg.Namespace, err)
	}
	return &runner{g: g, cfg: cfg, vals: vals, step: st.Step, written: st.Status}, nil
}

func (r *runner) emit(e Event) {
	if r.cfg.Events != nil {
		r.cfg.Events(e)
	}
}

func (r *runner) limit() int {
	if r.cfg.StepLimit > 0 {
		return r.cfg.StepLimit
	}
	return DefaultStepLimit
}

// loop runs planned steps until there is nothing left to do.
func (r *runner) loop(ctx context.Context, next []task, pending map[string]Patch) (Result, error) {
	for len(next) > 0 {
		if ctx.Err() != nil {
			return r.end(ctx, StatusCancelled, next, nil)
		}
		if r.steps >= r.limit() {
			return r.end(ctx, StatusLimit, next, nil)
		}
		patches, err := r.runTasks(ctx, next, pending)
		pending = nil
		if err != nil {
			if ctx.Err() != nil {
				return r.end(ctx, StatusCancelled, next, nil)
			}
			return r.end(ctx, StatusFailed, next, err)
		}
		r.steps++
		planned, err := r.barrier(ctx, next, patches)
		if err != nil {
			return r.end(ctx, StatusFailed, next, err)
		}
		next = planned
	}
	return r.end(ctx, StatusDone, nil, nil)
}

// end records the run's final status on the newest checkpoint.
func (r *runner) end(ctx context.Context, status Status, next []task, err error) (Result, error) {
	res := Result{Status: status, State: State{vals: r.vals}, Steps: r.steps, Err: err, Queued: r.close()}
	if r.cfg.Checkpointer != nil && r.step >= 0 && !(status == StatusDone && r.written == StatusDone) {
		cp := r.checkpoint(r.step, status, delta{}, next, res.State)
		if perr := r.cfg.Checkpointer.Put(context.WithoutCancel(ctx), cp); perr != nil && err == nil {
			res.Status, res.Err = StatusFailed, perr
		}
	}
	return res, res.Err
}

// checkpoint assembles the checkpoint of step: what d changed, the tasks
// planned next, the status, and the session index entry the Index hook gives
// for s. The barrier, a run's end and Update all store what it returns.
func (r *runner) checkpoint(step int, status Status, d delta, next []task, s State) store.Checkpoint {
	cp := store.Checkpoint{Thread: r.cfg.Thread, Namespace: r.cfg.Namespace, Step: step, Status: status,
		Values: d.values, Lists: d.lists, Next: storeTasks(next), Durability: r.cfg.Durability}
	if r.cfg.Index != nil {
		cp.Index = r.cfg.Index(s, status)
	}
	return cp
}

func storeTasks(ts []task) []store.Task {
	if len(ts) == 0 {
		return nil
	}
	out := make([]store.Task, len(ts))
	for i, t := range ts {
		out[i] = t.Task
	}
	return out
}

type taskResult struct {
	patch Patch
	err   error
}

// runTasks runs one step's tasks, in parallel when there are several, and
// returns their patches in task order. Finished tasks of a step that does not
// complete are kept as pending writes.
func (r *runner) runTasks(ctx context.Context, tasks []task, pending map[string]Patch) ([]Patch, error) {
	step := r.step + 1
	r.emit(Event{Type: StepStart, Step: step})
	state := State{vals: r.vals}
	results := make([]taskResult, len(tasks))
	run := func(i int) {
		t := tasks[i]
		if p, ok := pending[t.ID]; ok {
			results[i] = taskResult{patch: p}
			return
		}
		r.emit(Event{Type: NodeStart, Step: step, Node: t.Node, TaskID: t.ID})
		p, err := r.call(ctx, t, state)
		results[i] = taskResult{patch: p, err: err}
		r.emit(Event{Type: NodeEnd, Step: step, Node: t.Node, TaskID: t.ID, Err: err})
		if err == nil && len(tasks) > 1 {
			results[i].err = r.keep(ctx, t, p)
		}
	}
	if len(tasks) == 1 {
		run(0)
	} else {
		p := pool.New().WithMaxGoroutines(r.concurrency())
		for i := range tasks {
			p.Go(func() { run(i) })
		}
		p.Wait()
	}
	patches := make([]Patch, len(tasks))
	var firstErr error
	for i, res := range results {
		if res.err != nil && firstErr == nil {
			firstErr = fmt.Errorf("node %s: %w", tasks[i].Node, res.err)
		}
		patches[i] = res.patch
	}
	return patches, firstErr
}

func (r *runner) concurrency() int {
	if r.cfg.Concurrency > 0 {
		return r.cfg.Concurrency
	}
	return 16
}

// keep stores a finished task's patch as a pending write.
func (r *runner) keep(ctx context.Context, t task, p Patch) error {
	if r.cfg.Checkpointer == nil {
		return nil
	}
	raw, err := r.g.schema.encodePatch(p)
	if err != nil {
		return err
	}
	return r.cfg.Checkpointer.PutWrite(context.WithoutCancel(ctx), store.PendingWrite{Thread: r.cfg.Thread, Namespace: r.cfg.Namespace,
		Task: t.ID, Writes: raw, Durability: r.cfg.Durability})
}

type stepsLeftKey struct{}

// StepsLeft returns, inside a node, how many steps the invocation running it
// may still take after the current one; ok is false outside a node.
func StepsLeft(ctx context.Context) (n int, ok bool) {
	n, ok = ctx.Value(stepsLeftKey{}).(int)
	return n, ok
}

// call runs one node, turning a panic into an error.
func (r *runner) call(ctx context.Context, t task, s State) (p Patch, err error) {
	ctx = context.WithValue(ctx, stepsLeftKey{}, max(r.limit()-r.steps-1, 0))
	ctx = context.WithValue(ctx, taskKey{}, r)
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	fn := r.g.nodes[t.Node]
	if fn == nil {
		return Patch{}, fmt.Errorf("unknown node %q", t.Node)
	}
	s.arg = t.Arg
	return fn(ctx, s)
}

// barrier applies a step's patches in task order, then the queued inputs
// the resulting state accepts, plans the next step and writes the
// checkpoint. The runner moves to the new step only once the checkpoint is
// stored. Inputs applied where the run would end make it go on from Start.
func (r *runner) barrier(ctx context.Context, tasks []task, patches []Patch) ([]task, error) {
	step := r.step + 1
	r.inbox.mu.Lock()
	defer r.inbox.mu.Unlock()
	vals, d, err := r.g.schema.apply(r.vals, patches)
	if err != nil {
		return nil, fmt.Errorf("step %d: %w", step, err)
	}
	taken := r.take(State{vals: vals})
	if len(taken) > 0 {
		all := slices.Clone(patches)
		for _, q := range taken {
			all = append(all, q.patch)
		}
		if vals, d, err = r.g.schema.apply(r.vals, all); err != nil {
			return nil, fmt.Errorf("step %d: queued input: %w", step, err)
		}
	}
	r.emit(Event{Type: PatchApplied, Step: step})
	next, err := r.plan(step, State{vals: vals}, tasks)
	if err == nil && len(next) == 0 && len(taken) > 0 {
		next, err = r.plan(step, State{vals: vals}, []task{{Task: store.Task{Node: Start}}})
	}
	if err != nil {
		return nil, fmt.Errorf("step %d: %w", step, err)
	}
	status := StatusRunning
	if len(next) == 0 {
		status = StatusDone
		r.inbox.closed = true // an input queued from now on starts a new run
	}
	if r.cfg.Checkpointer != nil {
		cp := r.checkpoint(step, status, d, next, State{vals: vals})
		if err := r.cfg.Checkpointer.Put(context.WithoutCancel(ctx), cp); err != nil {
			r.inbox.items = append(taken, r.inbox.items...)
			return nil, err
		}
		if err := r.restore(ctx); err != nil {
			return nil, err
		}
	}
	r.vals, r.step, r.written = vals, step, status
	r.intents = nil // the step they were of is stored
	for _, q := range taken {
		r.emit(Event{Type: InputApplied, Step: step, TaskID: q.id})
	}
	r.emit(Event{Type: StepEnd, Step: step})
	return next, nil
}

// plan lists the tasks triggered by the nodes that just ran. A node triggered
// by several predecessors runs once; every Send is its own task.
func (r *runner) plan(step int, s State, ran []task) ([]task, error) {
	var next []task
	seen := map[string]bool{}
	add := func(rt Route) error {
		if rt.node == End {
			return nil
		}
		if _, ok := r.g.nodes[rt.node]; !ok {
			return fmt.Errorf("route to unknown node %q", rt.node)
		}
		t := task{seq: len(next)}
		t.Node = rt.node
		if rt.send {
			b, err := json.Marshal(rt.arg)
			if err != nil {
				return fmt.Errorf("send to %s: %w", rt.node, err)
			}
			t.Arg = b
		} else {
			if seen[rt.node] {
				return nil
			}
			seen[rt.node] = true
		}
		t.ID = r.taskID(step, t)
		next = append(next, t)
		return nil
	}
	done := map[string]bool{}
	for _, t := range ran {
		if done[t.Node] {
			continue
		}
		done[t.Node] = true
		for _, to := range r.g.edges[t.Node] {
			if err := add(To(to)); err != nil {
				return nil, err
			}
		}
		if rt := r.g.routers[t.Node]; rt != nil {
			for _, route := range rt(s) {
				if err := add(route); err != nil {
					return nil, err
				}
			}
		}
	}
	return next, nil
}

// taskID is deterministic in (thread, namespace, step, node, trigger).
func (r *runner) taskID(step int, t task) string {
	h := sha256.New()
	for _, part := range []string{r.cfg.Thread, r.cfg.Namespace, strconv.Itoa(step), t.Node, strconv.Itoa(t.seq), string(t.Arg)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Update writes a patch to a thread as a step of its own, outside any node:
// first the pending writes of the newest checkpoint's finished tasks, then the
// patch build returns for the resulting state. The step plans the given nodes
// next (none: the thread has ended) and records status. It is how a runtime
// closes a cancelled run cleanly, e.g. by answering tool calls that never ran.
func (g *Graph) Update(ctx context.Context, cfg Config, build func(State) Patch, status Status, next ...string) error {
	if cfg.Checkpointer == nil {
		return errors.New("update needs a checkpointer")
	}
	a, err := g.patched(ctx, cfg, build, "update")
	if err != nil {
		return err
	}
	r := a.r
	step := r.step + 1
	var tasks []task
	for i, n := range next {
		if _, ok := g.nodes[n]; !ok {
			return fmt.Errorf("update %s/%s: unknown node %q", cfg.Thread, cfg.Namespace, n)
		}
		t := task{seq: i}
		t.Node = n
		t.ID = r.taskID(step, t)
		tasks = append(tasks, t)
	}
	return cfg.Checkpointer.Put(context.WithoutCancel(ctx), r.checkpoint(step, status, a.d, tasks, State{vals: a.vals}))
}

// finished decodes the pending writes of st's planned tasks that finished,
// in plan order, and lists those that had not.
func (g *Graph) finished(st *store.State) (patches []Patch, unfinished []task, err error) {
	for i, t := range st.Next {
		raw, ok := st.Pending[t.ID]
		if !ok {
			unfinished = append(unfinished, task{Task: t, seq: i})
			continue
		}
		p, err := g.schema.decodePatch(raw)
		if err != nil {
			return nil, nil, err
		}
		patches = append(patches, p)
	}
	return patches, unfinished, nil
}

// Amend writes a patch to a thread that is not running, as a step of its
// own that changes nothing else: the pending writes of the newest
// checkpoint's finished tasks are applied first, then the patch build
// returns for the resulting state; the status stays, and so do the planned
// tasks that had not finished, so a later Resume goes on as it would have.
// It is how a runtime changes a session between runs (switching its
// project) with the one writer of its state.
func (g *Graph) Amend(ctx context.Context, cfg Config, build func(State) Patch) error {
	if cfg.Checkpointer == nil {
		return errors.New("amend needs a checkpointer")
	}
	g.mu.Lock()
	_, running := g.live[threadKey{cfg.Thread, cfg.Namespace}]
	g.mu.Unlock()
	if running {
		return fmt.Errorf("amend %s/%s: the thread is running", cfg.Thread, cfg.Namespace)
	}
	a, err := g.patched(ctx, cfg, build, "amend")
	if err != nil {
		return err
	}
	if err := cfg.Checkpointer.Put(context.WithoutCancel(ctx), a.r.checkpoint(a.r.step+1, a.st.Status, a.d, a.unfinished, State{vals: a.vals})); err != nil {
		return err
	}
	return a.r.keepIntents(ctx, a.st.Pending) // the unfinished tasks' intents stay theirs
}

// amendment is a step Update or Amend writes: the newest checkpoint st of a
// thread, its runner r and unfinished tasks, and the values (and their
// delta from st's) after the pending writes of st's finished tasks and the
// caller's patch.
type amendment struct {
	r          *runner
	st         *store.State
	unfinished []task
	vals       map[string]any
	d          delta
}

// patched loads the newest checkpoint of cfg's thread and applies the
// pending writes of its finished tasks, in plan order, then the patch build
// returns for the resulting state. Errors of the patches name verb and the
// thread.
func (g *Graph) patched(ctx context.Context, cfg Config, build func(State) Patch, verb string) (amendment, error) {
	st, err := cfg.Checkpointer.Load(ctx, cfg.Thread, cfg.Namespace)
	if err != nil {
		return amendment{}, err
	}
	r, err := g.fromState(cfg, st)
	if err != nil {
		return amendment{}, err
	}
	patches, unfinished, err := g.finished(st)
	if err != nil {
		return amendment{}, err
	}
	vals, _, err := g.schema.apply(r.vals, patches)
	if err != nil {
		return amendment{}, fmt.Errorf("%s %s/%s: %w", verb, cfg.Thread, cfg.Namespace, err)
	}
	patches = append(patches, build(State{vals: vals}))
	vals, d, err := g.schema.apply(r.vals, patches)
	if err != nil {
		return amendment{}, fmt.Errorf("%s %s/%s: %w", verb, cfg.Thread, cfg.Namespace, err)
	}
	return amendment{r: r, st: st, unfinished: unfinished, vals: vals, d: d}, nil
}
