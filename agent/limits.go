package agent

import (
	"errors"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tokens"
)

// Limits bound what one run may spend: its model calls, its summaries' and
// its subagents' together. Zero fields bound nothing. A resume is a new
// run, with the limits its request gives.
type Limits struct {
	// MaxTokens bounds the prompt plus completion tokens of the run's calls.
	MaxTokens int
	// MaxCost bounds their cost in USD; the run's model must have a price
	// (Config.Prices), else the run does not start (ErrNoPrice).
	MaxCost float64
}

// Which limit stopped a run (Result.Limit): its step limit or a budget.
const (
	LimitSteps  = "steps"
	LimitTokens = "tokens"
	LimitCost   = "cost"
)

// ErrNoPrice: a run with a cost limit on a model the price table lacks.
var ErrNoPrice = errors.New("no price for the model")

// spending is what a run and its subagents spent against their limits, as
// the budget counts it: each call's prompt and completion tokens as the
// provider reported them, else (a missing or incredible report) as
// estimated. Its fields are guarded by the accumulator's mu.
type spending struct {
	limits  Limits
	tokens  int
	cost    float64
	stopped string // the limit that stopped the run (LimitTokens, LimitCost); "": none
}

// checkPrice refuses a cost limit for a model without a price.
func (rt *Runtime) checkPrice(l Limits, modelName string) error {
	if l.MaxCost <= 0 {
		return nil
	}
	if _, ok := rt.cfg.Prices[modelName]; !ok {
		return fmt.Errorf("%w %s: a cost limit needs its price (the prices setting, e.g. --prices %s=2.5/10)", ErrNoPrice, modelName, modelName)
	}
	return nil
}

// afford checks, before a model call whose request is estimated at
// estimate tokens (the runtime's estimate), that the run's spending plus
// that request stays within its limits. When it would not, the run stops
// there: the error wraps graph.ErrStop, and the limit is recorded.
func (r *run) afford(estimate int) error {
	a := r.acc
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.spend.limits
	if a.spend.stopped != "" {
		return fmt.Errorf("the run's %s limit is reached: %w", a.spend.stopped, graph.ErrStop)
	}
	next := r.budget.tokens(estimate)
	switch {
	case l.MaxTokens > 0 && a.spend.tokens+next > l.MaxTokens:
		a.spend.stopped = LimitTokens
		return fmt.Errorf("the next model call (about %d tokens) would take the run past its limit of %d tokens (%d spent): %w",
			next, l.MaxTokens, a.spend.tokens, graph.ErrStop)
	case l.MaxCost > 0:
		c := r.rt.cfg.Prices[r.model].Cost(model.Usage{PromptTokens: next})
		if a.spend.cost+c > l.MaxCost {
			a.spend.stopped = LimitCost
			return fmt.Errorf("the next model call (about $%.4f) would take the run past its limit of $%.4f ($%.4f spent): %w",
				c, l.MaxCost, a.spend.cost, graph.ErrStop)
		}
	}
	return nil
}

// spent counts a model call against the run's limits: u as reported, its
// prompt tokens replaced by estimate (the request's, in provider tokens)
// when the report is missing or incredible for a request of size bytes,
// its completion tokens by reply's estimate when missing.
func (r *run) spent(u model.Usage, estimate, size int, reply model.Response) {
	if u.PromptTokens <= 0 || u.PromptTokens < size/credibleFloor {
		u.PromptTokens = estimate
	}
	if u.CompletionTokens <= 0 {
		n := tokens.Estimate(reply.Content)
		for _, c := range reply.ToolCalls {
			n += tokens.Estimate(c.Name) + tokens.Estimate(c.Args)
		}
		u.CompletionTokens = n
	}
	cost := 0.0
	if p, ok := r.rt.cfg.Prices[r.model]; ok {
		cost = p.Cost(u)
	}
	r.acc.mu.Lock()
	r.acc.spend.tokens += u.PromptTokens + u.CompletionTokens
	r.acc.spend.cost += cost
	r.acc.mu.Unlock()
}

// budget is the run's limits and spending for events; nil without limits.
func (a *accumulator) budget() *event.Budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.spend.limits
	if l == (Limits{}) {
		return nil
	}
	return &event.Budget{MaxTokens: l.MaxTokens, MaxCost: l.MaxCost, Tokens: a.spend.tokens, Cost: a.spend.cost}
}

// stoppedBy is the limit that stopped the run ("": none of the budgets).
func (a *accumulator) stoppedBy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spend.stopped
}
