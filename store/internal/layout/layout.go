// Package layout is the bbolt file's layout of format 4: the buckets and
// keys a store keeps its records under, and how a head record and a list
// item are encoded. The store writes and reads it; store/internal/convert
// writes it from files of earlier formats.
package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// Format is the store format this layout is: 2 compressed records; 3 kept
// each thread's namespace in one bucket; 4 seals every record. A file
// without a format record is of format 1 (records raw).
const Format = 4

// The top-level buckets of the store's own, and the meta bucket's keys: the
// format record (8 bytes, big-endian) and its CRC32C (4 bytes,
// little-endian, formats 4 and later).
var (
	Approvals    = []byte("approvals")
	Meta         = []byte("meta")
	FormatKey    = []byte("format")
	FormatSumKey = []byte("format-sum")
)

// FormatSum is the checksum kept beside the format record rec.
func FormatSum(rec []byte) uint32 { return record.Place{Bucket: Meta, Key: FormatKey}.Sum(rec) }

// FormatRecords returns the format record of format f and its checksum.
func FormatRecords(f uint64) (rec, sum []byte) {
	rec = U64(f)
	return rec, binary.LittleEndian.AppendUint32(nil, FormatSum(rec))
}

// ItemSeq returns an item key's sequence number (ParseItemKey said it is
// one).
func ItemSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// The bbolt file's layout. A step's commit rewrites the path
// from the root to every page it changes (bbolt copies on write), so the
// layout keeps what a step writes on as few pages as it can: each thread's
// namespace is one top-level bucket, and in it what every step writes (the
// new list items, and one record of the head and the session) sorts at the
// bucket's end, on its last page.
//
// Top-level buckets:
//
//	meta                    format: the store's format version; format-sum
//	approvals               key: the user's answer
//	ThreadPrefix thread ns  a thread's namespace (name: ThreadBucket)
//
// Keys of a namespace's bucket, in their order:
//
//	KPending task           a finished task's pending writes
//	KValue name             a last-value channel's value
//	KItem list 0x00 seq8    a list item: uvarint(len(id)) id body (EncodeItem)
//	KHead                   the head: the checkpoint's head and the session
//	                        record (EncodeHead)
//
// The head is the bucket's last key, written at every step, and a list's
// items' seq8 are the bucket's NextSequence, big-endian: an append lands
// just before the head. bbolt leaves at least two keys on the right of a
// page it splits, so the head always shares its page with the newest
// items, and a step that appends a message and moves the head rewrites
// one leaf. (Had the session record a key of its own, a split between the
// two would put every later step on two leaves.) Values and pending writes,
// written by few steps, sort first. Values, pending writes and item bodies
// are records (store/internal/record): compressed when that pays.
//
// Format 4 seals every record (record.Seal): the value of each key above, and
// each part of the head record on its own, carries a CRC32C of its bytes and
// of its place (the bucket's name and the key), so damage anywhere in it,
// its key or its bucket's name is found when it is read. The approvals'
// values are sealed too; the format record stays 8 bytes, with its own
// checksum beside it (FormatSumKey), so that a binary of format 3 still reads
// the version and refuses the file. Format 3 kept records without seals.
//
// Formats 1 and 2 kept the session index in a bucket of its own and each
// namespace as nested buckets (values, lists, each list's items and an ID
// index, pending): twelve pages per commit. Open converts files of
// earlier formats (store/internal/convert).
const (
	ThreadPrefix = 0x01
	KPending     = 'P'
	KValue       = 'V'
	KItem        = 'a'
	KHead        = 'h'
)

// ThreadBucket is the name of the bucket of thread's namespace ns:
// ThreadPrefix uvarint(len(thread)) thread ns. The thread's length makes
// the name unambiguous, and the names of one thread's namespaces share the
// prefix ThreadBucketPrefix(thread), namespace "" first.
func ThreadBucket(thread, ns string) []byte {
	return append(ThreadBucketPrefix(thread), ns...)
}

// ThreadBucketPrefix is the prefix of the names of thread's buckets.
func ThreadBucketPrefix(thread string) []byte {
	out := binary.AppendUvarint(append(make([]byte, 0, len(thread)+12), ThreadPrefix), uint64(len(thread)))
	return append(out, thread...)
}

// ParseThreadBucket splits a top-level bucket name into its thread and
// namespace; ok is false for a name of another kind.
func ParseThreadBucket(name []byte) (thread, ns string, ok bool) {
	if len(name) == 0 || name[0] != ThreadPrefix {
		return "", "", false
	}
	n, k := binary.Uvarint(name[1:])
	if k <= 0 || uint64(len(name)-1-k) < n {
		return "", "", false
	}
	rest := name[1+k:]
	return string(rest[:n]), string(rest[n:]), true
}

// KeyHead is the key of a namespace's head.
var KeyHead = []byte{KHead}

// The parts of a head record, which are sealed on their own.
const (
	PartHead    = 0
	PartSession = 1
)

// HeadPlace is the place of a part of namespace bucket's head record.
func HeadPlace(bucket []byte, part byte) record.Place {
	return record.Place{Bucket: bucket, Key: KeyHead, Part: part}
}

// EncodeHead makes the head record of a namespace: uvarint(len(head)) head
// session, where head is the checkpoint's head (JSON, sealed at PartHead),
// empty when the namespace has no checkpoint yet, and session the session
// record (JSON, sealed at PartSession), kept in namespace "" only, empty
// when there is none.
func EncodeHead(head, session []byte) []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(head)+len(session)+3), uint64(len(head)))
	return append(append(out, head...), session...)
}

// SplitHead splits a head record (nil: no record) into its parts, still
// sealed.
func SplitHead(v []byte) (head, session []byte, err error) {
	if v == nil {
		return nil, nil, nil
	}
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, nil, fmt.Errorf("%w: the head record's parts cannot be told apart", record.ErrDamaged)
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

func ValueKey(name string) []byte   { return append([]byte{KValue}, name...) }
func PendingKey(task string) []byte { return append([]byte{KPending}, task...) }

// ItemPrefix is the prefix of list's item keys: KItem list 0x00. A list
// name never holds a zero byte (checked by Put), so one list's prefix is
// never another's.
func ItemPrefix(list string) []byte {
	return append(append(append(make([]byte, 0, len(list)+10), KItem), list...), 0)
}

func ItemKey(list string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(ItemPrefix(list), seq)
}

// ParseItemKey splits an item key into its list's name; ok is false for a
// key of another kind.
func ParseItemKey(k []byte) (list string, ok bool) {
	if len(k) < 10 || k[0] != KItem || k[len(k)-9] != 0 {
		return "", false
	}
	return string(k[1 : len(k)-9]), true
}

// AppendFill is the fill percent of the namespaces' buckets: their keys
// are appended (items at the end of their range, the step's records after
// them), so a page that splits keeps 95% of it and the rest moves on
// (bbolt's default splits at half, for random inserts, which left every
// page of a session's history half empty).
const AppendFill = 0.95

func U64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// EncodeItem makes an item's record, to be sealed: uvarint(len(id)) id
// body, where body is stored as compress returns it.
func EncodeItem(id string, body []byte) []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(id)+len(body)+2), uint64(len(id)))
	out = append(out, id...)
	return append(out, body...)
}

// SplitItem splits an item's record (unsealed) into its ID and its stored
// body, without reading the body.
func SplitItem(v []byte) (id, body []byte, err error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, nil, fmt.Errorf("%w: the list item's ID cannot be read", record.ErrDamaged)
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

// SealItem returns the stored value of an item at key k of bucket, sealed
// when strict.
func SealItem(bucket, k []byte, id string, body []byte, strict bool) []byte {
	return record.SealAs(strict, record.Place{Bucket: bucket, Key: k}, EncodeItem(id, record.Compress(body)))
}

// OpenItem returns the ID and the stored body of the item value v at place
// at, checking its seal (strict: it must have one).
func OpenItem(at record.Place, v []byte, strict bool) (id, body []byte, err error) {
	payload, err := record.Unseal(at, v, strict)
	if err != nil {
		return nil, nil, err
	}
	return SplitItem(payload)
}

// DecodeItem reads the item value v at place at: its ID and its body.
func DecodeItem(at record.Place, v []byte, strict bool) (id string, body []byte, err error) {
	rawID, stored, err := OpenItem(at, v, strict)
	if err != nil {
		return "", nil, err
	}
	if body, err = record.Decompress(stored); err != nil {
		return "", nil, err
	}
	return string(rawID), body, nil
}
