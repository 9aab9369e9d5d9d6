package store

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// CorruptError is a store file bbolt cannot be trusted with: its pages are
// damaged, or reading it faulted.
type CorruptError struct {
	Path  string
	Cause string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s", e.Path, e.Cause)
}

// moveAside renames a damaged store to <path>.corrupt-<time>, keeping it for
// inspection, and returns the new name.
func moveAside(path string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405Z"))
	if _, err := os.Lstat(aside); err == nil {
		aside = fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// guarded runs fn, which reads a bbolt file through its memory map, so
// that a fault (a page the file no longer has: cut short, a bad block) or
// a panic of bbolt on a damaged page fails fn with a CorruptError instead
// of killing the process. Every access to a bbolt file goes through it:
// open, initialization, transactions, compaction.
func guarded(path string, fn func() error) (err error) {
	// bbolt reads pages through its memory map on the calling goroutine.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &CorruptError{Path: path, Cause: fmt.Sprint(v)}
		}
	}()
	return fn()
}

// damage is one damaged record a read met: what it is, and why it cannot
// be read.
type damage struct {
	what string
	err  error
}

// damageLog is what the store's reads met of damaged records. Its owner is
// the Bolt; its lock guards its fields.
type damageLog struct {
	mu   sync.Mutex      // guards met and told
	met  int64           // damaged records met, counted at every meeting
	told map[string]bool // the warnings already given, so each is given once
}

// damaged counts a damaged record of thread's namespace ns (thread "": of
// the store itself) and names it through the warning path, once per record.
func (b *Bolt) damaged(thread, ns string, d damage) {
	where := "the store"
	switch {
	case ns != "":
		where = fmt.Sprintf("session %q, namespace %q", thread, ns)
	case thread != "":
		where = fmt.Sprintf("session %q", thread)
	}
	cause := strings.TrimPrefix(d.err.Error(), ErrDamaged.Error()+": ")
	msg := fmt.Sprintf("%s: %s is damaged (%s) and was left out; `agent-lsp sessions check` lists every damaged record", where, d.what, cause)
	b.damage.mu.Lock()
	b.damage.met++
	if b.damage.told == nil {
		b.damage.told = map[string]bool{}
	}
	tell := !b.damage.told[msg]
	b.damage.told[msg] = true
	b.damage.mu.Unlock()
	if tell {
		b.warn(msg)
	}
}

// Damage returns how many times the store's reads met damage since it was
// opened (a damaged record left out, or a damaged file read through a
// salvaged copy): a command that met some should say so and fail.
func (b *Bolt) Damage() int64 {
	b.damage.mu.Lock()
	defer b.damage.mu.Unlock()
	return b.damage.met
}

// guard turns a panic of bbolt while reading or writing a damaged file into
// an error, so one bad page fails one call instead of the process. It is
// deferred after debug.SetPanicOnFault(true) (see guarded).
func guard(path string, err *error) {
	if v := recover(); v != nil {
		*err = &CorruptError{Path: path, Cause: fmt.Sprint(v)}
	}
}
