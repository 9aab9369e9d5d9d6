// Package convert reads store files of every format, damaged or not,
// without bbolt (through store/internal/boltfile), and turns what they
// hold into this format's records (store/internal/layout): every reader of
// an earlier format lives here, and runs only when the store opens a file
// (to convert it, or to salvage a damaged one) or imports one. It converts
// formats 1 and 2 (nested buckets), seals format 3's records, rewrites the
// pending writes of binaries before 0.2 to the graph's current encoding, and
// puts right the name of a bucket that one flipped bit changed.
package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/boltfile"
	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// Source is a store file read with boltfile: never mapped, every page
// checked before it is trusted. It is what a conversion from an earlier
// format, a salvage of a damaged file and an import read.
type Source struct {
	f      *boltfile.File
	format uint64 // 1 when the file has no format record
	// formatErr says the format record is damaged.
	formatErr error
	strict    bool // every record is sealed (format 4 and later)
	tops      []topBucket
	// problems is damage the layout cannot have, beside what f reports:
	// by the name of the top-level bucket it is in ("" for the file).
	problems []boltfile.Problem
	// close releases the file; nothing read from it is valid after.
	close func() error
}

// topBucket is a top-level bucket of a Source.
type topBucket struct {
	name []byte
	b    boltfile.Bucket
	// bad says its header cannot be read: nothing of it can be.
	bad bool
}

// rootWhere names the root bucket in problems: damage there may lose
// sessions whose names cannot be read.
const rootWhere = "(the index of buckets)"

// Open reads the top-level buckets and the format of the store file
// at path; close releases it. A file with no valid meta page is an error
// wrapping boltfile.ErrNoMeta.
func Open(path string) (*Source, error) {
	f, close, err := boltfile.OpenPath(path)
	if err != nil {
		return nil, err
	}
	s := &Source{f: f, format: 1, close: close}
	err = f.Walk(f.Root(), rootWhere, func(k, v []byte, bucket bool) error {
		b, err := boltfile.ParseBucket(bytes.Clone(v))
		if !bucket {
			err = errors.New("it is not marked as a bucket")
		}
		if err != nil {
			s.problem(string(k), "the bucket cannot be read: "+err.Error())
		}
		s.tops = append(s.tops, topBucket{name: bytes.Clone(k), b: b, bad: err != nil})
		return nil
	})
	if err != nil {
		close()
		return nil, err
	}
	if meta := s.top(layout.Meta); meta != nil {
		s.readFormat(*meta)
	}
	s.strict = s.format >= 4 && s.formatErr == nil
	return s, nil
}

func (s *Source) problem(where, what string) {
	s.problems = append(s.problems, boltfile.Problem{Where: where, What: what})
}

// top returns the top-level bucket name, nil if there is none (or it
// cannot be read).
func (s *Source) top(name []byte) *boltfile.Bucket {
	for i := range s.tops {
		if bytes.Equal(s.tops[i].name, name) && !s.tops[i].bad {
			return &s.tops[i].b
		}
	}
	return nil
}

// readFormat reads the format record and its checksum from the meta bucket.
func (s *Source) readFormat(meta boltfile.Bucket) {
	var rec, sum []byte
	s.f.Walk(meta, string(layout.Meta), func(k, v []byte, bucket bool) error {
		switch {
		case bucket:
		case bytes.Equal(k, layout.FormatKey):
			rec = bytes.Clone(v)
		case bytes.Equal(k, layout.FormatSumKey):
			sum = bytes.Clone(v)
		}
		return nil
	})
	switch {
	case rec == nil:
		if sum != nil {
			s.formatErr = errors.New("the format record is missing")
		}
	case len(rec) != 8:
		s.formatErr = fmt.Errorf("the format record has %d bytes", len(rec))
	case sum == nil && binary.BigEndian.Uint64(rec) >= 4 && binary.BigEndian.Uint64(rec) <= layout.Format:
		s.formatErr = errors.New("the format record's checksum is missing")
	case sum != nil && (len(sum) != 4 || binary.LittleEndian.Uint32(sum) != layout.FormatSum(rec)):
		s.formatErr = errors.New("the format record fails its checksum")
	default:
		s.format = binary.BigEndian.Uint64(rec)
	}
	if s.formatErr != nil {
		s.problem(string(layout.Meta), s.formatErr.Error())
	}
}

// legacy reports whether the file has buckets of formats 1 and 2.
func (s *Source) Legacy() bool { return s.top(legacySessions) != nil || s.top(legacyThreads) != nil }

// check walks every bucket of the file and returns its damage: the pages
// (boltfile's checks) and what the layout cannot have (a record marked as a
// nested bucket, an item beyond its namespace's counter, a bucket of no
// known kind). Record seals are not checked: Load and Check find those.
func (s *Source) Check() []boltfile.Problem {
	for _, t := range s.tops {
		where := string(t.name)
		switch {
		case t.bad:
		case t.name[0] == layout.ThreadPrefix:
			if _, _, ok := layout.ParseThreadBucket(t.name); !ok {
				s.problem(where, "the bucket's name cannot be read")
			}
			s.verifyName(t)
			s.walkNamespace(t, func(k, v []byte) {})
		case bytes.Equal(t.name, layout.Meta), bytes.Equal(t.name, layout.Approvals):
			s.f.Walk(t.b, where, func(k, v []byte, bucket bool) error {
				if bucket {
					s.problem(where, fmt.Sprintf("the record %q is marked as a bucket", k))
				}
				return nil
			})
		case bytes.Equal(t.name, legacySessions), bytes.Equal(t.name, legacyThreads):
			s.copyBucket(t.b, where, 0)
		default:
			s.problem(rootWhere, fmt.Sprintf("a bucket of no known kind: %q", t.name))
		}
	}
	s.f.Unreached()
	return append(s.f.Problems(), s.problems...)
}

// walkNamespace calls fn with each record of a namespace bucket of the
// current layout, reporting (and skipping) what the layout cannot have.
func (s *Source) walkNamespace(t topBucket, fn func(k, v []byte)) {
	if t.bad {
		return
	}
	where := string(t.name)
	s.f.Walk(t.b, where, func(k, v []byte, bucket bool) error {
		if bucket {
			s.problem(where, fmt.Sprintf("the record %x is marked as a bucket", k))
			return nil
		}
		if k[0] == layout.KItem && len(k) >= 10 && binary.BigEndian.Uint64(k[len(k)-8:]) > t.b.Seq {
			s.problem(where, fmt.Sprintf("the item %x is beyond the namespace's counter %d", k, t.b.Seq))
		}
		fn(k, v)
		return nil
	})
}

// copyBucket reads bucket b (named where in problems) and its nested
// buckets into memory.
func (s *Source) copyBucket(b boltfile.Bucket, where string, depth int) *bucketCopy {
	out := &bucketCopy{seq: b.Seq}
	s.f.Walk(b, where, func(k, v []byte, bucket bool) error {
		e := entryCopy{key: bytes.Clone(k)}
		if bucket {
			sub, err := boltfile.ParseBucket(v)
			if err != nil || depth >= 8 {
				s.problem(where, fmt.Sprintf("the nested bucket %q cannot be read", k))
				return nil
			}
			e.bucket = s.copyBucket(sub, where, depth+1)
		} else {
			e.value = bytes.Clone(v)
		}
		out.entries = append(out.entries, e)
		return nil
	})
	return out
}

// bucketCopy is a bucket read into memory: its sequence and its entries in
// key order, each a value or a nested bucket.
type bucketCopy struct {
	seq     uint64
	entries []entryCopy
}

type entryCopy struct {
	key, value []byte
	bucket     *bucketCopy // set for a nested bucket; value is then nil
}

// Session is one session read from a store file, in the current
// layout: the buckets of its namespaces, with what was left out of them.
type Session struct {
	ID      []byte
	Buckets []Bucket
	Size    int64 // bytes read
	// Record says the session has its session record.
	Record bool
	// Left names the records left out (damaged, or not convertible);
	// Damaged says the file's pages under the session are damaged.
	Left    []string
	Damaged bool
}

// sessions passes add every session of the Source, both layouts, in the
// current layout, with the records that can be read: a record whose seal
// fails (or, in a file of an earlier format, that cannot be decoded) is
// left out and named in the session's left.
func (s *Source) Sessions(ctx context.Context, add func(Session) error) error {
	if err := s.legacySessions(ctx, add); err != nil {
		return err
	}
	// The namespaces of each thread, in the order of their names, with
	// names the seals of their records say were damaged put right.
	var order []string
	groups := map[string][]topBucket{}
	for _, t := range s.tops {
		if t.bad || t.name[0] != layout.ThreadPrefix {
			continue
		}
		t.name, _ = s.verifyName(t)
		thread, _, ok := layout.ParseThreadBucket(t.name)
		if !ok {
			continue
		}
		if groups[thread] == nil {
			order = append(order, thread)
		}
		groups[thread] = append(groups[thread], t)
	}
	for _, thread := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		sc := Session{ID: []byte(thread)}
		before := s.problemCount()
		for _, t := range groups[thread] {
			sc.Buckets = append(sc.Buckets, s.namespaceCopy(t, &sc))
		}
		sc.Damaged = s.problemCount() > before
		if err := add(sc); err != nil {
			return err
		}
	}
	return nil
}

// errEnough stops a walk that read what it needed.
var errEnough = errors.New("enough")

// verifyName checks the name of the namespace bucket t against the seals
// of its first records (they cover it): the name when one holds. When none
// does, a name one bit away from t's for which they all hold is the
// bucket's true one (CRC32C tells a one-bit change in records this size
// apart from every other), reported as damage and returned; failing that,
// the bucket's name or records are damaged, which is reported, and ok is
// false. A file of an earlier format, without seals, cannot tell.
func (s *Source) verifyName(t topBucket) (name []byte, ok bool) {
	if !s.strict || t.bad {
		return t.name, true
	}
	type sealed struct {
		key, v []byte
		part   byte
	}
	var recs []sealed
	s.f.Reread(t.b, string(t.name), func(k, v []byte, bucket bool) error {
		switch {
		case bucket:
		case k[0] == layout.KHead && len(k) == 1:
			if h, sess, err := layout.SplitHead(v); err == nil {
				if len(h) > 0 {
					recs = append(recs, sealed{bytes.Clone(k), bytes.Clone(h), layout.PartHead})
				} else if len(sess) > 0 {
					recs = append(recs, sealed{bytes.Clone(k), bytes.Clone(sess), layout.PartSession})
				}
			}
		case k[0] == layout.KItem, k[0] == layout.KValue, k[0] == layout.KPending:
			recs = append(recs, sealed{bytes.Clone(k), bytes.Clone(v), layout.PartHead})
		}
		if len(recs) == 3 {
			return errEnough
		}
		return nil
	})
	holds := func(name []byte, all bool) bool {
		n := 0
		pre := record.BucketSum(name)
		for _, r := range recs {
			at := record.In(name, pre, r.key)
			at.Part = r.part
			if _, err := record.Unseal(at, r.v, true); err == nil {
				n++
			}
		}
		return n > 0 && (!all || n == len(recs))
	}
	if len(recs) == 0 || holds(t.name, false) {
		return t.name, true
	}
	for i := range len(t.name) * 8 {
		cand := bytes.Clone(t.name)
		cand[i/8] ^= 1 << (i % 8)
		if _, _, ok := layout.ParseThreadBucket(cand); ok && holds(cand, true) {
			s.problem(string(t.name), fmt.Sprintf("the bucket's name was damaged (one bit): it is %q", cand))
			return cand, true
		}
	}
	s.problem(string(t.name), "the seals of the bucket's first records fail: its name or they are damaged")
	return t.name, false
}

// namespaceCopy reads a namespace bucket of the current layout for sc.
func (s *Source) namespaceCopy(t topBucket, sc *Session) Bucket {
	fb := Bucket{Name: t.name, Seq: t.b.Seq}
	_, ns, _ := layout.ParseThreadBucket(t.name)
	where := "its record " // + the key, for what is left out
	if ns != "" {
		where = fmt.Sprintf("the record of namespace %q at ", ns)
	}
	s.walkNamespace(t, func(k, v []byte) {
		sc.Size += int64(len(k) + len(v))
		var kept []byte
		var err error
		if k[0] == layout.KHead && len(k) == 1 {
			var lost []string
			var hasRecord bool
			kept, lost, hasRecord = keepHead(t.name, string(sc.ID), ns == "", v, s.strict)
			sc.Record = sc.Record || hasRecord
			for _, l := range lost {
				sc.Left = append(sc.Left, fmt.Sprintf("%s (%s)", l, where+"h"))
			}
		} else {
			kept, err = keepRecord(t.name, k, v, s.strict)
			if err != nil {
				sc.Left = append(sc.Left, fmt.Sprintf("%s%x: %v", where, k, err))
			}
		}
		if kept != nil {
			fb.Entries = append(fb.Entries, Entry{Key: bytes.Clone(k), Value: kept})
		}
		if k[0] == layout.KItem && len(k) >= 10 {
			fb.Seq = max(fb.Seq, binary.BigEndian.Uint64(k[len(k)-8:]))
		}
	})
	return fb
}

// keepRecord returns the value to store for the record v at key k of the
// namespace bucket name, from a file whose records are all sealed when
// strict: v itself when its seal holds, v sealed now when it has no seal
// and its contents decode (a file of an earlier format). A record that
// fails is an error. A key of no kind the layout knows is kept as it is.
func keepRecord(name, k, v []byte, strict bool) ([]byte, error) {
	at := record.Place{Bucket: name, Key: k}
	switch k[0] {
	case layout.KItem, layout.KValue, layout.KPending:
	default:
		return bytes.Clone(v), nil
	}
	payload, err := record.Unseal(at, v, strict)
	if err != nil {
		return nil, err
	}
	if strict {
		return bytes.Clone(v), nil
	}
	body := payload
	if k[0] == layout.KItem {
		if _, parseItemOK := layout.ParseItemKey(k); !parseItemOK {
			return nil, fmt.Errorf("%w: the item's key cannot be read", record.ErrDamaged)
		}
		if _, body, err = layout.SplitItem(payload); err != nil {
			return nil, err
		}
	}
	raw, err := record.Decompress(body)
	if err != nil {
		return nil, err
	}
	if k[0] == layout.KPending {
		return pendingRecord(at, raw)
	}
	return record.Seal(at, payload), nil
}

// pendingRecord returns the pending write raw (decompressed) as stored at
// place at: in the graph's current encoding (rewritePending), compressed
// when that pays, sealed.
func pendingRecord(at record.Place, raw []byte) ([]byte, error) {
	raw, err := rewritePending(raw)
	if err != nil {
		return nil, err
	}
	return record.PackAt(at, raw), nil
}

// keepHead returns the head record to store for the head record v of the
// namespace bucket name of thread (root: its namespace ""), with the parts
// that fail left out and named in lost; record says it keeps a session
// record. Nil when no part is left.
func keepHead(name []byte, thread string, root bool, v []byte, strict bool) (kept []byte, lost []string, hasRecord bool) {
	h, sess, err := layout.SplitHead(v)
	if err != nil {
		return nil, []string{"the checkpoint's head and the session's record: " + err.Error()}, false
	}
	keep := func(part byte, raw []byte, check func([]byte) error) []byte {
		if len(raw) == 0 {
			return nil
		}
		at := layout.HeadPlace(name, part)
		payload, err := record.Unseal(at, raw, strict)
		if err == nil && !strict {
			if err = check(payload); err == nil {
				return record.Seal(at, payload)
			}
		}
		if err != nil {
			what := "the checkpoint's head"
			if part == layout.PartSession {
				what = "the session's record"
			}
			lost = append(lost, fmt.Sprintf("%s: %v", what, err))
			return nil
		}
		return bytes.Clone(raw)
	}
	h = keep(layout.PartHead, h, func(p []byte) error {
		var hd struct {
			Step int `json:"step"`
		}
		if err := json.Unmarshal(p, &hd); err != nil {
			return fmt.Errorf("%w: %v", record.ErrDamaged, err)
		}
		return nil
	})
	sess = keep(layout.PartSession, sess, func(p []byte) error {
		var s struct {
			ID string `json:"session"`
		}
		if err := json.Unmarshal(p, &s); err != nil {
			return fmt.Errorf("%w: the record cannot be decoded: %v", record.ErrDamaged, err)
		}
		if s.ID != thread {
			return fmt.Errorf("%w: the record names session %q", record.ErrDamaged, s.ID)
		}
		return nil
	})
	if h == nil && sess == nil {
		return nil, lost, false
	}
	return layout.EncodeHead(h, sess), lost, root && sess != nil
}

// legacySessions passes add the sessions of the buckets of formats 1 and
// 2, converted to the current layout (convertLegacy): every thread, and every
// session record without a thread.
func (s *Source) legacySessions(ctx context.Context, add func(Session) error) error {
	index, threads := s.top(legacySessions), s.top(legacyThreads)
	if index == nil && threads == nil {
		return nil
	}
	records := map[string][]byte{}
	var ids []string
	if index != nil {
		s.f.Walk(*index, string(legacySessions), func(k, v []byte, bucket bool) error {
			if !bucket {
				records[string(k)] = bytes.Clone(v)
				ids = append(ids, string(k))
			}
			return nil
		})
	}
	trees := map[string]boltfile.Bucket{}
	if threads != nil {
		s.f.Walk(*threads, string(legacyThreads), func(k, v []byte, bucket bool) error {
			if b, err := boltfile.ParseBucket(bytes.Clone(v)); bucket && err == nil {
				trees[string(k)] = b
				if _, ok := records[string(k)]; !ok {
					ids = append(ids, string(k))
				}
			}
			return nil
		})
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		sc := Session{ID: []byte(id), Record: records[id] != nil}
		before := s.problemCount()
		var thread *bucketCopy
		if b, ok := trees[id]; ok {
			thread = s.copyBucket(b, string(layout.ThreadBucket(id, "")), 0)
		}
		rec := records[id]
		sc.Size = int64(len(rec))
		sc.Buckets = convertLegacy([]byte(id), rec, thread, func(m string) { sc.Left = append(sc.Left, m) })
		sc.Damaged = s.problemCount() > before
		for _, fb := range sc.Buckets {
			for _, e := range fb.Entries {
				sc.Size += int64(len(e.Key) + len(e.Value))
			}
		}
		if err := add(sc); err != nil {
			return err
		}
	}
	return nil
}

// approvals returns the approvals of the Source that can be read, sealed.
func (s *Source) Approvals() (out []Entry, lost []string) {
	b := s.top(layout.Approvals)
	if b == nil {
		return nil, nil
	}
	s.f.Walk(*b, string(layout.Approvals), func(k, v []byte, bucket bool) error {
		if bucket {
			return nil
		}
		at := record.Place{Bucket: layout.Approvals, Key: k}
		payload, err := record.Unseal(at, v, s.strict)
		if err != nil {
			lost = append(lost, fmt.Sprintf("the approval %q: %v", k, err))
			return nil
		}
		out = append(out, Entry{Key: bytes.Clone(k), Value: record.Seal(at, payload)})
		return nil
	})
	return out, lost
}

// Describe says where problem p is and what it is, for people: a
// session's bucket by the session's name.
func Describe(p boltfile.Problem) string {
	if thread, ns, ok := layout.ParseThreadBucket([]byte(p.Where)); ok {
		p.Where = fmt.Sprintf("session %q", thread)
		if ns != "" {
			p.Where += fmt.Sprintf(", namespace %q", ns)
		}
	} else if p.Where != "" && p.Where != rootWhere {
		p.Where = fmt.Sprintf("the bucket %q", p.Where)
	}
	return p.Error()
}

// Close releases the file: nothing read from it is valid after.
func (s *Source) Close() error { return s.close() }

// Format returns the file's format (1 when it has no format record), and
// the damage of its format record, if any.
func (s *Source) Format() (uint64, error) { return s.format, s.formatErr }

// Newer reports whether the file's intact format record is of a format
// newer than this binary's.
func (s *Source) Newer() bool { return s.formatErr == nil && s.format > layout.Format }

// Unreached reports the pages no walk reached (boltfile.File.Unreached):
// call it once everything was read.
func (s *Source) Unreached() { s.f.Unreached() }

// DamagedBy says why a file with these problems is damaged, in a sentence.
func DamagedBy(problems []boltfile.Problem) string {
	var b strings.Builder
	for i, p := range problems[:min(3, len(problems))] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.ToValidUTF8(Describe(p), "?"))
	}
	if len(problems) > 3 {
		fmt.Fprintf(&b, " (and %d more problems)", len(problems)-3)
	}
	return b.String()
}

// problemCount is how much damage the Source found so far.
func (s *Source) problemCount() int { return len(s.f.Problems()) + len(s.problems) }

// unattributed returns the damage found that is not in a session's
// buckets: the file's own, its index's, the approvals'.
func (s *Source) Unattributed() []string {
	var out []string
	for _, p := range append(s.f.Problems(), s.problems...) {
		if _, _, ok := layout.ParseThreadBucket([]byte(p.Where)); !ok {
			out = append(out, Describe(p))
		}
	}
	return out
}

// Report says what a copy of a store file kept and left out.
type Report struct {
	Whole, Partial, Empty []string // sessions kept whole, in part, with nothing readable
	Left                  []string // what was left out, one sentence each
	Problems              []string // damage not tied to a session
}

// Add records the outcome of copying sc.
func (r *Report) Add(sc *Session) {
	id := string(sc.ID)
	kept := 0
	for _, fb := range sc.Buckets {
		kept += len(fb.Entries)
	}
	switch {
	case kept == 0 && (sc.Damaged || len(sc.Left) > 0):
		r.Empty = append(r.Empty, id)
	case sc.Damaged || len(sc.Left) > 0:
		r.Partial = append(r.Partial, id)
	default:
		r.Whole = append(r.Whole, id)
	}
	for _, l := range sc.Left {
		r.Left = append(r.Left, fmt.Sprintf("session %q: %s", id, l))
	}
}

// String says what the copy kept and lost, for the user.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d session(s) kept whole", len(r.Whole))
	if len(r.Partial) > 0 {
		fmt.Fprintf(&b, ", %d kept in part (%s)", len(r.Partial), names(r.Partial))
	}
	if len(r.Empty) > 0 {
		fmt.Fprintf(&b, ", %d lost (%s)", len(r.Empty), names(r.Empty))
	}
	if len(r.Left) > 0 {
		fmt.Fprintf(&b, "; %d damaged record(s) left out", len(r.Left))
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(&b, "; damage that no session could be named for (sessions in it may be lost): %s", strings.Join(r.Problems[:min(3, len(r.Problems))], "; "))
		if len(r.Problems) > 3 {
			fmt.Fprintf(&b, " and %d more", len(r.Problems)-3)
		}
	}
	return b.String()
}

// names lists session IDs, the first ten.
func names(ids []string) string {
	q := make([]string, 0, min(10, len(ids)))
	for _, id := range ids[:min(10, len(ids))] {
		q = append(q, fmt.Sprintf("%q", id))
	}
	s := strings.Join(q, ", ")
	if len(ids) > 10 {
		s += fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return s
}

// The layout of formats 1 and 2: a session index bucket, and a bucket per
// thread holding a bucket per namespace ("ns:" ns) with the head, and
// buckets of values, lists (each with its items, keyed by its sequence, and
// an index of their IDs) and pending writes.
var (
	legacySessions = []byte("sessions")
	legacyThreads  = []byte("threads")
	legacyHead     = []byte("head")
	legacyValues   = []byte("values")
	legacyLists    = []byte("lists")
	legacyPending  = []byte("pending")
	legacyItems    = []byte("items")
)

// Bucket is a namespace's bucket of the current layout, in memory: its
// records as stored (sealed).
type Bucket struct {
	Name    []byte
	Seq     uint64
	Entries []Entry
}

// Entry is one record of a Bucket, as stored.
type Entry struct{ Key, Value []byte }

// convertLegacy turns one session of the legacy layout into the buckets of
// the current one: record is its index record (nil if none), thread its
// thread bucket read into memory (nil if none). Records are sealed, and
// compressed where that pays (format 1's are raw); each list keeps its
// items' sequence numbers, and the namespace's sequence goes on after the
// highest.
//
// A record the current layout cannot hold (a damaged item key, a list name
// with a zero byte) is left out and described to skip: one bad record
// never keeps a store from opening.
func convertLegacy(id []byte, rec []byte, thread *bucketCopy, skip func(string)) []Bucket {
	var out []Bucket
	var root *Bucket // namespace "": the session record goes there
	if thread != nil {
		for _, e := range thread.entries {
			ns, ok := strings.CutPrefix(string(e.key), "ns:")
			if !ok || e.bucket == nil {
				continue // nothing else was ever stored here
			}
			out = append(out, convertNamespace(string(id), ns, e.bucket, skip))
		}
	}
	for i := range out {
		if t, ns, _ := layout.ParseThreadBucket(out[i].Name); t == string(id) && ns == "" {
			root = &out[i]
		}
	}
	if rec != nil {
		if root == nil {
			out = append(out, Bucket{Name: layout.ThreadBucket(string(id), "")})
			root = &out[len(out)-1]
		}
		root.setSession(rec)
	}
	return out
}

// setSession puts the session record rec into fb's head record.
func (fb *Bucket) setSession(rec []byte) {
	sealed := record.Seal(layout.HeadPlace(fb.Name, layout.PartSession), rec)
	for i, e := range fb.Entries {
		if bytes.Equal(e.Key, layout.KeyHead) {
			h, _, _ := layout.SplitHead(e.Value)
			fb.Entries[i].Value = layout.EncodeHead(h, sealed)
			return
		}
	}
	fb.Entries = append(fb.Entries, Entry{bytes.Clone(layout.KeyHead), layout.EncodeHead(nil, sealed)})
}

// convertNamespace converts one legacy namespace bucket (convertLegacy).
func convertNamespace(thread, ns string, n *bucketCopy, skip func(string)) Bucket {
	fb := Bucket{Name: layout.ThreadBucket(thread, ns)}
	put := func(key, v []byte) Entry {
		return Entry{key, record.PackAt(record.Place{Bucket: fb.Name, Key: key}, v)}
	}
	pending := func(key, v []byte) (Entry, error) {
		raw, err := record.Decompress(v)
		if err != nil {
			return Entry{}, err
		}
		sealed, err := pendingRecord(record.Place{Bucket: fb.Name, Key: key}, raw)
		return Entry{key, sealed}, err
	}
	for _, e := range n.entries {
		switch {
		case bytes.Equal(e.key, legacyHead) && e.bucket == nil:
			fb.Entries = append(fb.Entries, Entry{bytes.Clone(layout.KeyHead), layout.EncodeHead(record.Seal(layout.HeadPlace(fb.Name, layout.PartHead), e.value), nil)})
		case bytes.Equal(e.key, legacyValues) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					fb.Entries = append(fb.Entries, put(layout.ValueKey(string(v.key)), v.value))
				}
			}
		case bytes.Equal(e.key, legacyPending) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					e, err := pending(layout.PendingKey(string(v.key)), v.value)
					if err != nil {
						skip(fmt.Sprintf("session %q: the pending write %q was left out: %v", thread, v.key, err))
						continue
					}
					fb.Entries = append(fb.Entries, e)
				}
			}
		case bytes.Equal(e.key, legacyLists) && e.bucket != nil:
			for _, l := range e.bucket.entries {
				if l.bucket != nil {
					fb.Seq = max(fb.Seq, l.bucket.seq)
					fb.Entries = append(fb.Entries, convertList(fb.Name, thread, l, skip)...)
				}
			}
		}
	}
	return fb
}

// convertList converts the items of one legacy list l of a namespace
// bucket named name.
func convertList(name []byte, thread string, l entryCopy, skip func(string)) []Entry {
	if bytes.IndexByte(l.key, 0) >= 0 {
		skip(fmt.Sprintf("session %q: list %q was left out: its name holds a zero byte", thread, l.key))
		return nil
	}
	var out []Entry
	for _, sub := range l.bucket.entries {
		if !bytes.Equal(sub.key, legacyItems) || sub.bucket == nil {
			continue // the ID index: the current layout reads items for it
		}
		for _, it := range sub.bucket.entries {
			if it.bucket != nil || len(it.key) != 8 {
				skip(fmt.Sprintf("session %q: an item of list %q was left out: its key %x is damaged", thread, l.key, it.key))
				continue
			}
			id, body, err := layout.SplitItem(it.value)
			if err != nil {
				skip(fmt.Sprintf("session %q: an item of list %q was left out: %v", thread, l.key, err))
				continue
			}
			key := append(layout.ItemPrefix(string(l.key)), it.key...)
			out = append(out, Entry{key, layout.SealItem(name, key, string(id), body, true)}) // format 1's raw records compress now
		}
	}
	return out
}

// Paste writes fb into tx, into its bucket (created if absent), keys
// in order so that the bucket's pages fill.
func Paste(tx *bolt.Tx, fb Bucket) error {
	n, err := tx.CreateBucketIfNotExists(fb.Name)
	if err != nil {
		return err
	}
	n.FillPercent = layout.AppendFill
	slices.SortFunc(fb.Entries, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	for _, e := range fb.Entries {
		if err := n.Put(e.Key, e.Value); err != nil {
			return err
		}
	}
	if fb.Seq > n.Sequence() {
		return n.SetSequence(fb.Seq)
	}
	return nil
}
