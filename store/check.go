package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/convert"
	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// CheckReport is what Check found in a store.
type CheckReport struct {
	Sessions int // sessions checked (threads with a namespace "")
	Records  int // records checked
	// Damaged names each damaged record, and each piece of damage to the
	// file's pages; nil when there is none.
	Damaged []string
}

// Check verifies the whole store and reports what is damaged, changing
// nothing: the file's pages as Open checks them, then every record's
// seal, every checkpoint's head and every session's record. A read-only
// view of a damaged file (OpenReadOnly) reports the damage it was opened
// with. Writes wait while the pages are checked.
func (b *Bolt) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	if err := b.Flush(); err != nil {
		return rep, fmt.Errorf("check %s: %w", b.path, err)
	}
	rep.Damaged = append(rep.Damaged, b.opened...)
	problems, err := b.checkPages()
	if err != nil {
		return rep, fmt.Errorf("check %s: %w", b.path, err)
	}
	for _, p := range problems {
		rep.Damaged = append(rep.Damaged, "the file's pages: "+p)
	}
	err = b.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			b.checkBucket(name, bk, &rep)
			return nil
		})
	})
	if err != nil {
		return rep, fmt.Errorf("check %s: %w", b.path, err)
	}
	return rep, nil
}

// checkPages checks the pages of the store's file (inspect's check), with
// no transaction running: the file holds its newest commit, whole.
func (b *Bolt) checkPages() ([]string, error) {
	b.swap.Lock()
	defer b.swap.Unlock()
	src, err := convert.Open(b.db.Path())
	if err != nil {
		return []string{err.Error()}, nil
	}
	defer src.Close()
	var out []string
	for _, p := range src.Check() {
		out = append(out, convert.Describe(p))
	}
	return out, nil
}

// checkBucket checks the records of the top-level bucket name.
func (b *Bolt) checkBucket(name []byte, bk *bolt.Bucket, rep *CheckReport) {
	add := func(where, what string, err error) {
		cause := strings.TrimPrefix(err.Error(), ErrDamaged.Error()+": ")
		rep.Damaged = append(rep.Damaged, fmt.Sprintf("%s: %s (%s)", where, what, cause))
	}
	switch {
	case bytes.Equal(name, layout.Approvals):
		bk.ForEach(func(k, v []byte) error {
			rep.Records++
			what := fmt.Sprintf("the approval %q", k)
			if v == nil {
				add("the approvals", what, fmt.Errorf("%w: it is marked as a bucket", ErrDamaged))
			} else if _, err := record.Unseal(record.Place{Bucket: layout.Approvals, Key: k}, v, b.strict); err != nil {
				add("the approvals", what, err)
			}
			return nil
		})
	case bytes.Equal(name, layout.Meta):
	default:
		thread, ns, ok := layout.ParseThreadBucket(name)
		if !ok {
			add("the store", fmt.Sprintf("a bucket of no known kind, %q", name), ErrDamaged)
			return
		}
		where := fmt.Sprintf("session %q", thread)
		if ns != "" {
			where += fmt.Sprintf(", namespace %q", ns)
		} else {
			rep.Sessions++
			if _, err := sessionOf(thread, bk.Get(layout.KeyHead), b.strict); err != nil {
				add(where, "the session's record", err)
			}
		}
		rep.Records += bk.Stats().KeyN
		_, damaged, err := loadNamespace(bk, name, b.strict)
		for _, d := range damaged {
			add(where, d.what, d.err)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			add(where, "the checkpoint", err)
		}
	}
}
