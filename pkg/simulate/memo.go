package simulate

import (
	"crypto/sha256"
	"encoding/binary"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// Memo remembers the apiserver model's answers during one run. An answer
// is reused for exactly the same question (the operation, the object's
// content, the write's JSON), and, where the resource allows it, for a
// question alike in all the apiserver can tell apart: an abstract
// question, whose generations are moved to the old object's
// (apiserver.Resource.ShiftsGenerations) and whose strings at the places
// of apiserver.Resource.Values are written as their order of first
// appearance, each valid by its own schema (invalid ones are kept as they
// are). The answer to an abstract question is kept with the values of the
// question it was computed for and handed out with the new question's
// values put in their places and its generations moved back. A refusal,
// whose message may name a value, is reused only for its own question.
//
// An object's encoding is computed once: objects are immutable values (a
// write makes a new one), so the encoding is keyed by the identity of its
// maps. A Memo is not safe for concurrent use.
type Memo struct {
	answers map[digest]memoEntry
	keys    map[ObjectID]digest
	syncs   map[digest]syncEntry
	// abstract are the answers of abstract questions; abstractKeys are
	// objects' abstract encodings; valid caches Values.Valid.
	abstract     map[digest]memoEntry
	abstractKeys map[ObjectID]abstractKey
	valid        map[leafValue]bool
	// defaultOC is the empty OperatorCondition OLM's generator creates.
	defaultOC *Object
	// others are OperatorConditions' other writers (Config.otherWriter).
	others map[ObjectID]string
	// byIdentity are an exploration's answers by the identity of the
	// question's maps (ask).
	byIdentity map[identityKey]memoEntry
	// keepHits also remembers an abstract hit as an exact answer (explore
	// meets the same question again in other interleavings; a replay
	// meets each once).
	keepHits bool
	// maxAnswers bounds each answer map, maxKeys the encodings kept.
	maxAnswers, maxKeys int
	// buf is where questions are written (frame).
	buf framed
	// hits counts the answers reused for abstract questions.
	hits int
}

// NewMemo returns an empty Memo for an exploration, where the same
// questions come back in many interleavings.
func NewMemo() *Memo { return newMemo(true, maxMemo, 4*maxMemo) }

// NewReplayMemo returns an empty Memo for a replay (Replay makes its own):
// a trace asks each question once, so only abstract answers help, and
// little is kept (memory stays flat however long the trace).
func NewReplayMemo() *Memo { return newMemo(false, maxReplayMemo, maxReplayKeys) }

func newMemo(keepHits bool, maxAnswers, maxKeys int) *Memo {
	return &Memo{answers: map[digest]memoEntry{}, keys: map[ObjectID]digest{}, syncs: map[digest]syncEntry{},
		abstract: map[digest]memoEntry{}, abstractKeys: map[ObjectID]abstractKey{}, valid: map[leafValue]bool{}, others: map[ObjectID]string{},
		byIdentity: map[identityKey]memoEntry{}, keepHits: keepHits, maxAnswers: maxAnswers, maxKeys: maxKeys}
}

const (
	// maxMemo bounds the answers an exploration remembers (a few hundred
	// bytes each).
	maxMemo = 200_000
	// maxReplayMemo and maxReplayKeys bound a replay's.
	maxReplayMemo = 10_000
	maxReplayKeys = 4096
)

type memoEntry struct {
	obj     Object
	deleted bool
	rf      *apiserver.Refusal
	// An abstract answer is kept as its Object's parts with its
	// generations moved by the old object's (gen, and the status's);
	// values numbers the strings it was computed with.
	meta, body, status map[string]interface{}
	gen                int64
	values             map[leafValue]int
	// next is the abstract key of the answer itself, which is the old
	// object of the next write, with each of its numbers as a number of
	// the question (from): an answer's strings are the question's, so the
	// answer handed out for another question has the same key, with that
	// question's strings.
	next *answerKey
}

type answerKey struct {
	d    digest
	from []int
}

// digest is a fixed-size key: the SHA-256 of a question's encoding, so
// that what the memo keeps per answer does not grow with the object.
type digest [sha256.Size]byte

// framed is the text digestOf hashes, written in one buffer: each part
// after its length (8 bytes, little-endian). A Memo writes its questions
// so, in a buffer it keeps, and hashes them with sha256.Sum256 (the same
// digest as digestOf of the parts, without a hasher or a buffer a part).
type framed struct {
	b     []byte
	start int
}

// part starts a part: what is appended to f.b until the next part or sum
// is in it.
func (f *framed) part() {
	f.end()
	f.b = append(f.b, 0, 0, 0, 0, 0, 0, 0, 0)
	f.start = len(f.b)
}

func (f *framed) end() {
	if f.start > 0 {
		binary.LittleEndian.PutUint64(f.b[f.start-8:f.start], uint64(len(f.b)-f.start))
		f.start = 0
	}
}

func (f *framed) sum() digest {
	f.end()
	return sha256.Sum256(f.b)
}

// frame starts a question in the memo's buffer.
func (m *Memo) frame() *framed {
	m.buf.b, m.buf.start = m.buf.b[:0], 0
	return &m.buf
}

func digestOf(parts ...[]byte) digest {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// encodeValue appends an encoding of a decoded JSON value that tells
// apart any two values JSON tells apart (map keys sorted, strings and keys
// written with their length,
// each kind tagged; an integer and a float are told apart even when JSON
// would write them alike, which only costs a reuse). It is the memo's
// question, written without encoding/json's reflection; false for a type
// a decoded object does not hold.
func encodeValue(b []byte, v interface{}) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if v {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		return appendString(append(b, 's'), v), true
	case int64:
		return strconv.AppendInt(append(b, 'i'), v, 10), true
	case int:
		return strconv.AppendInt(append(b, 'i'), int64(v), 10), true
	case float64:
		return strconv.AppendFloat(append(b, 'd'), v, 'g', -1, 64), true
	case map[string]interface{}:
		if v == nil {
			return append(b, 'N'), true // not {}: the apiserver tells them apart
		}
		var buf [16]string
		b = append(b, '{')
		for _, k := range sortedKeys(buf[:0], v) {
			var ok bool
			if b, ok = encodeValue(appendKey(b, k), v[k]); !ok {
				return nil, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	case []interface{}:
		if v == nil {
			return append(b, 'L'), true
		}
		b = append(b, '[')
		for _, e := range v {
			var ok bool
			if b, ok = encodeValue(b, e); !ok {
				return nil, false
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	}
	return nil, false
}

func sortedKeys(keys []string, v map[string]interface{}) []string {
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendKey(b []byte, k string) []byte { return appendString(b, k) }

// appendString writes s with its length before it, which tells any two
// strings apart without quoting.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// leafValue is a string at one of Values' places; values are numbered
// per place, the only place the apiserver compares them.
type leafValue struct {
	node *apiserver.Values
	s    string
}

// numbering numbers a question's strings in order of first appearance:
// the old object's (base, shared by every question about it) then the
// write's (own).
type numbering struct {
	base *numbered
	own  numbered
}

type numbered struct {
	index map[leafValue]int
	keys  []leafValue
}

var noValues = &numbered{}

func (n *numbering) number(v leafValue) int {
	if i, ok := n.base.find(v); ok {
		return i
	}
	if i, ok := n.own.find(v); ok {
		return len(n.base.keys) + i
	}
	n.own.add(v)
	return len(n.base.keys) + len(n.own.keys) - 1
}

// smallNumbered is the count below which a numbered set is searched
// rather than indexed.
const smallNumbered = 16

func (n *numbered) find(v leafValue) (int, bool) {
	if n.index != nil {
		i, ok := n.index[v]
		return i, ok
	}
	for i, k := range n.keys {
		if k == v {
			return i, true
		}
	}
	return 0, false
}

func (n *numbered) add(v leafValue) {
	n.keys = append(n.keys, v)
	switch {
	case n.index != nil:
		n.index[v] = len(n.keys) - 1
	case len(n.keys) > smallNumbered:
		n.index = make(map[leafValue]int, len(n.keys))
		for i, k := range n.keys {
			n.index[k] = i
		}
	}
}

func (n *numbering) value(i int) string { return n.key(i).s }

func (n *numbering) key(i int) leafValue {
	if i < len(n.base.keys) {
		return n.base.keys[i]
	}
	return n.own.keys[i-len(n.base.keys)]
}

// all is every number given, for the answer computed for this question.
func (n *numbering) all() map[leafValue]int {
	out := make(map[leafValue]int, len(n.base.keys)+len(n.own.keys))
	for i, k := range n.base.keys {
		out[k] = i
	}
	for i, k := range n.own.keys {
		out[k] = len(n.base.keys) + i
	}
	return out
}

// validLeaf is node.Valid(s), remembered where it runs a schema
// validator (reasons, messages and enums come back; timestamps are new).
func (m *Memo) validLeaf(node *apiserver.Values, s string) bool {
	if !node.Checked() {
		return true
	}
	if node.FormatOnly() {
		return node.Valid(s)
	}
	k := leafValue{node, s}
	if v, ok := m.valid[k]; ok {
		return v
	}
	v := node.Valid(s)
	m.valid[k] = v
	return v
}

// encodeAbstract is encodeValue with the strings at node's places that
// their own schema finds valid written as their number.
func (m *Memo) encodeAbstract(b []byte, v interface{}, node *apiserver.Values, n *numbering) ([]byte, bool) {
	if node == nil {
		return encodeValue(b, v)
	}
	if node.Leaf() {
		if s, ok := v.(string); ok && m.validLeaf(node, s) {
			return strconv.AppendInt(append(b, 'r'), int64(n.number(leafValue{node, s})), 10), true
		}
		return encodeValue(b, v)
	}
	switch v := v.(type) {
	case map[string]interface{}:
		if v == nil {
			return append(b, 'N'), true
		}
		var buf [16]string
		b = append(b, '{')
		for _, k := range sortedKeys(buf[:0], v) {
			var ok bool
			if b, ok = m.encodeAbstract(appendKey(b, k), v[k], node.Child(k), n); !ok {
				return nil, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	case []interface{}:
		if v == nil {
			return append(b, 'L'), true
		}
		item := node.Item()
		b = append(b, '[')
		for _, e := range v {
			var ok bool
			if b, ok = m.encodeAbstract(b, e, item, n); !ok {
				return nil, false
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	}
	return encodeValue(b, v)
}

// substitute puts the values numbered by n where values has numbered the
// strings of v, at node's places, in a copy of what changes; false when
// nothing does.
func substitute(v interface{}, node *apiserver.Values, values map[leafValue]int, n *numbering) (interface{}, bool) {
	if node == nil {
		return v, false
	}
	if node.Leaf() {
		if s, ok := v.(string); ok {
			if i, ok := values[leafValue{node, s}]; ok {
				if ns := n.value(i); ns != s {
					return ns, true
				}
			}
		}
		return v, false
	}
	switch v := v.(type) {
	case map[string]interface{}:
		var out map[string]interface{}
		for k, e := range v {
			if ne, changed := substitute(e, node.Child(k), values, n); changed {
				if out == nil {
					out = make(map[string]interface{}, len(v))
					for k, e := range v {
						out[k] = e
					}
				}
				out[k] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []interface{}:
		item := node.Item()
		var out []interface{}
		for i, e := range v {
			if ne, changed := substitute(e, item, values, n); changed {
				if out == nil {
					out = slices.Clone(v)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// moveStatus is shiftGenerations(st, delta) with substitute's strings at
// node's places, in one copy: a remembered answer's status for the new
// question (node nil: the generations alone).
func moveStatus(st map[string]interface{}, delta int64, node *apiserver.Values, values map[leafValue]int, n *numbering) (map[string]interface{}, bool) {
	if st == nil {
		return nil, true
	}
	move := func(v interface{}) (interface{}, bool) {
		g, ok := generationValue(v)
		if !ok || (delta <= 0 && !inShiftRange(g)) {
			return nil, false
		}
		return g + delta, true
	}
	out := make(map[string]interface{}, len(st))
	for k, v := range st {
		switch k {
		case "observedGeneration":
			g, ok := move(v)
			if !ok {
				return nil, false
			}
			out[k] = g
		case "conditions":
			list, isList := v.([]interface{})
			if !isList {
				return nil, false
			}
			item := node.Child(k).Item()
			conds := make([]interface{}, len(list))
			for i, c := range list {
				cm, isMap := c.(map[string]interface{})
				if !isMap {
					return nil, false
				}
				cc := make(map[string]interface{}, len(cm))
				for ck, cv := range cm {
					if ck == "observedGeneration" {
						g, ok := move(cv)
						if !ok {
							return nil, false
						}
						cc[ck] = g
						continue
					}
					cc[ck], _ = substitute(cv, item.Child(ck), values, n)
				}
				conds[i] = cc
			}
			out[k] = conds
		default:
			out[k], _ = substitute(v, node.Child(k), values, n)
		}
	}
	return out, true
}

type abstractKey struct {
	d      digest
	ok     bool
	values *numbered
}

// ObjectID is an Object's identity: its maps (never written to once in an
// Object) and its generation. Two Objects with one ID hold one content,
// so it keys what is computed from an object once (a map keyed by it
// keeps its objects' maps alive).
type ObjectID struct {
	meta, body, status unsafe.Pointer
	gen                int64
}

// ID is o's identity.
func (o *Object) ID() ObjectID { return idOf(o) }

func mapPointer(m map[string]interface{}) unsafe.Pointer {
	if m == nil {
		return nil
	}
	return reflect.ValueOf(m).UnsafePointer()
}

func idOf(o *Object) ObjectID {
	return ObjectID{mapPointer(o.Meta), mapPointer(o.Body), mapPointer(o.Status), o.Generation}
}

// key is the digest of o's content, computed once per object.
func (m *Memo) key(o *Object) (digest, bool) {
	if o == nil || !o.Exists {
		return digest{}, true
	}
	id := idOf(o)
	if k, ok := m.keys[id]; ok {
		return k, true
	}
	f := m.frame()
	f.part()
	f.b = strconv.AppendInt(f.b, o.Generation, 10)
	for _, part := range []map[string]interface{}{o.Meta, o.Body, o.Status} {
		f.part()
		var ok bool
		if f.b, ok = encodeValue(f.b, part); !ok {
			f.b = nil
			return digest{}, false
		}
	}
	k := f.sum()
	m.keys[id] = k
	return k, true
}

// abstractKey is the encoding of o with its generations moved by its own
// (which becomes 0) and its strings at tree's places numbered, or false
// where a generation is not an integer between 1 and 2^62.
func (m *Memo) abstractKey(o *Object, tree *apiserver.Values) abstractKey {
	id := idOf(o)
	if k, ok := m.abstractKeys[id]; ok {
		return k
	}
	var k abstractKey
	if inShiftRange(o.Generation) {
		n := &numbering{base: noValues}
		f := m.frame()
		f.part()
		b, ok := encodeValue(f.b, o.Meta)
		if ok {
			f.b = b
			f.part()
			b, ok = m.encodeAbstract(f.b, o.Body, tree, n)
		}
		if ok {
			f.b = b
			f.part()
			b, ok = m.encodeStatus(f.b, o.Status, -o.Generation, tree.Child("status"), n)
		}
		if ok {
			f.b = b
			own := n.own
			k = abstractKey{f.sum(), true, &own}
		}
	}
	m.abstractKeys[id] = k
	return k
}

// maxShifted bounds the generations a shift may move: far from int64's
// end, where ObjectMeta validation and the int64 format tell values apart.
const maxShifted = 1 << 62

func inShiftRange(g int64) bool { return g >= 1 && g < maxShifted }

// generationValue reads a generation a shift may move: an int64, as the
// apiserver's decoding and the trace reader give integers. Not
// jsonobj.Int, which would take "4" and 4.0 for 4: the CRD refuses the
// string and keeps the float, so they are not the integer's question.
func generationValue(v interface{}) (int64, bool) {
	g, ok := v.(int64)
	return g, ok
}

// shiftGenerations moves status.observedGeneration and every
// status.conditions[].observedGeneration by delta, in a copy. Moving back
// (delta > 0) takes any value; moving an original (delta <= 0) needs each
// between 1 and 2^62, else false.
func shiftGenerations(status map[string]interface{}, delta int64) (map[string]interface{}, bool) {
	return moveStatus(status, delta, nil, nil, nil)
}

// annotationsOnly: the write's metadata is annotations alone (the
// bridge's digest of its entry). Metadata is no place of
// apiserver.Resource.Values, so the question holds them exactly, as it
// holds the old object's metadata: the answer's metadata is the same
// for every question of the key.
func annotationsOnly(arg map[string]interface{}) bool {
	md, ok := arg["metadata"].(map[string]interface{})
	if !ok || len(md) != 1 || md["annotations"] == nil {
		return false
	}
	_, apiVersion := arg["apiVersion"]
	_, kind := arg["kind"]
	return !apiVersion && !kind
}

// question is an abstract question: its key and its strings' numbers.
type question struct {
	key    digest
	values *numbering
}

// ask runs f on the object old (nil: none) and the write arg to res, or
// returns a remembered answer, as the Object the answer is (see Memo).
// res is nil for a create, which is asked only exactly. An exploration
// asks the same write of the same object in many interleavings, with the
// same maps (objects and the explorer's step values are never written
// to): it remembers answers by identity too, before any encoding.
func (c *Config) ask(op string, old *Object, arg map[string]interface{}, res *apiserver.Resource, f func() (map[string]interface{}, bool, *apiserver.Refusal)) (Object, bool, *apiserver.Refusal) {
	m := c.Memo
	if m == nil || !m.keepHits || arg == nil {
		return c.askContent(op, old, arg, res, f)
	}
	k := identityKey{op: op, arg: mapPointer(arg)}
	if old != nil {
		k.old = old.ID()
	}
	if e, hit := m.byIdentity[k]; hit {
		return e.obj, e.deleted, e.rf
	}
	obj, deleted, rf := c.askContent(op, old, arg, res, f)
	if len(m.byIdentity) >= m.maxAnswers/4 {
		clear(m.byIdentity)
	}
	m.byIdentity[k] = memoEntry{obj: obj, deleted: deleted, rf: rf}
	return obj, deleted, rf
}

// identityKey is a question by the identity of its maps.
type identityKey struct {
	op  string
	old ObjectID
	arg unsafe.Pointer
}

// askContent is ask by content: the exact question's digest, and the
// abstract question where the resource allows one.
func (c *Config) askContent(op string, old *Object, arg map[string]interface{}, res *apiserver.Resource, f func() (map[string]interface{}, bool, *apiserver.Refusal)) (Object, bool, *apiserver.Refusal) {
	answer := func() (map[string]interface{}, Object, bool, *apiserver.Refusal) {
		out, deleted, rf := f()
		if out == nil || deleted || rf != nil {
			return out, Object{}, deleted, rf
		}
		return out, NewObject(out), false, nil
	}
	m := c.Memo
	if m == nil {
		_, obj, deleted, rf := answer()
		return obj, deleted, rf
	}
	if len(m.answers) >= m.maxAnswers || len(m.abstract) >= m.maxAnswers {
		// A very deep search or a long trace: start over rather than
		// grow without end.
		clear(m.answers)
		clear(m.byIdentity)
		clear(m.keys)
		clear(m.syncs)
		clear(m.abstract)
		clear(m.abstractKeys)
		clear(m.valid)
	}
	if len(m.keys)+len(m.abstractKeys)+len(m.valid)+len(m.others) >= m.maxKeys {
		clear(m.others)
		clear(m.keys)
		clear(m.abstractKeys)
		clear(m.valid)
	}
	var tree *apiserver.Values
	abstract := res != nil && res.ShiftsGenerations()
	if abstract {
		tree = res.Values()
	}
	var q question
	asked := false
	// A replay asks the abstract question first: its exact one has never
	// been asked before, unless it was refused (a refusal is remembered
	// only exactly). Without an abstract question there is nothing to ask.
	if !m.keepHits {
		if abstract {
			q, abstract = m.abstractQuestion(op, old, arg, tree)
		}
		if !abstract {
			_, obj, deleted, rf := answer()
			return obj, deleted, rf
		}
		asked = true
		if obj, deleted, hit := m.reuse(q, old, tree); hit {
			return obj, deleted, nil
		}
	}
	oldKey, good := m.key(old)
	var key digest
	if good {
		f := m.frame()
		f.part()
		f.b = append(f.b, op...)
		f.part()
		f.b = append(f.b, oldKey[:]...)
		f.part()
		var b []byte
		if b, good = encodeValue(f.b, arg); good {
			f.b = b
			key = f.sum()
		}
	}
	if !good {
		_, obj, deleted, rf := answer()
		return obj, deleted, rf
	}
	if e, hit := m.answers[key]; hit {
		return e.obj, e.deleted, e.rf
	}
	if abstract && !asked {
		if q, abstract = m.abstractQuestion(op, old, arg, tree); abstract {
			if obj, deleted, hit := m.reuse(q, old, tree); hit {
				m.answers[key] = memoEntry{obj: obj, deleted: deleted}
				return obj, deleted, nil
			}
		}
	}
	_, obj, deleted, rf := answer()
	if m.keepHits || rf != nil {
		m.answers[key] = memoEntry{obj: obj, deleted: deleted, rf: rf}
	}
	if abstract && rf == nil {
		e := memoEntry{deleted: deleted, values: q.values.all()}
		ok := true
		if !deleted {
			e.meta, e.body, e.gen = obj.Meta, obj.Body, obj.Generation-old.Generation
			e.status, ok = shiftGenerations(obj.Status, -old.Generation)
			e.next = m.nextKey(&obj, tree, e.values)
		}
		if ok {
			m.abstract[q.key] = e
		}
	}
	return obj, deleted, rf
}

// nextKey is the answer's abstract key with its numbers as the
// question's, or nil where one of its strings is not the question's.
func (m *Memo) nextKey(obj *Object, tree *apiserver.Values, values map[leafValue]int) *answerKey {
	k := m.abstractKey(obj, tree)
	if !k.ok {
		return nil
	}
	from := make([]int, len(k.values.keys))
	for j, v := range k.values.keys {
		i, ok := values[v]
		if !ok {
			return nil
		}
		from[j] = i
	}
	return &answerKey{k.d, from}
}

// Hits counts the answers reused for abstract questions (other
// generations, other strings).
func (m *Memo) Hits() int { return m.hits }

// reuse hands out the remembered answer of q, if there is one.
func (m *Memo) reuse(q question, old *Object, tree *apiserver.Values) (Object, bool, bool) {
	e, hit := m.abstract[q.key]
	if !hit {
		return Object{}, false, false
	}
	if e.deleted {
		m.hits++
		return Object{}, true, true
	}
	obj := Object{Exists: true, Generation: e.gen + old.Generation, Meta: e.meta}
	if b, ok := substitute(e.body, tree, e.values, q.values); ok {
		obj.Body = b.(map[string]interface{})
	} else {
		obj.Body = e.body
	}
	st, ok := moveStatus(e.status, old.Generation, tree.Child("status"), e.values, q.values)
	if !ok {
		return Object{}, false, false
	}
	obj = obj.withStatus(st)
	m.hits++
	if e.next != nil && inShiftRange(obj.Generation) {
		// Its key is the first answer's, with this question's strings
		// (its generations are this question's too, so in range).
		n := &numbered{keys: make([]leafValue, 0, len(e.next.from))}
		for _, i := range e.next.from {
			n.add(q.values.key(i))
		}
		m.abstractKeys[idOf(&obj)] = abstractKey{e.next.d, true, n}
	}
	return obj, false, true
}

// abstractQuestion is the abstract question of a write, or false where
// the write cannot be asked so: no old object, a write of metadata, a
// generation out of range.
func (m *Memo) abstractQuestion(op string, old *Object, arg map[string]interface{}, tree *apiserver.Values) (question, bool) {
	if old == nil || !old.Exists || touchesMetadata(arg) && !annotationsOnly(arg) {
		return question{}, false
	}
	k := m.abstractKey(old, tree)
	if !k.ok {
		return question{}, false
	}
	// The generations a write carries: a status write's
	// observedGenerations; a patch of spec carries none.
	n := &numbering{base: k.values}
	f := m.frame()
	f.part()
	f.b = append(append(f.b, "abstract "...), op...)
	f.part()
	f.b = append(f.b, k.d[:]...)
	f.part()
	var b []byte
	good := false
	switch {
	case op == "status" || op == "oc-status":
		b, good = m.encodeStatus(f.b, arg, -old.Generation, tree.Child("status"), n)
	case op == "update" || strings.HasPrefix(op, ocUpdate):
		// An OperatorCondition update's op names its field manager.
		if _, has := arg["status"]; !has {
			b, good = m.encodeAbstract(f.b, arg, tree, n)
		}
	}
	if !good {
		return question{}, false
	}
	f.b = b
	return question{f.sum(), n}, true
}

// encodeStatus is encodeAbstract(shiftGenerations(st, delta)) without
// the copy: status.observedGeneration and each
// status.conditions[].observedGeneration written moved by delta, false
// where shiftGenerations is.
func (m *Memo) encodeStatus(b []byte, st map[string]interface{}, delta int64, node *apiserver.Values, n *numbering) ([]byte, bool) {
	if st == nil {
		return append(b, 'N'), true
	}
	generation := func(b []byte, v interface{}) ([]byte, bool) {
		g, ok := generationValue(v)
		if !ok || !inShiftRange(g) {
			return nil, false
		}
		return strconv.AppendInt(append(b, 'i'), g+delta, 10), true
	}
	var buf [16]string
	b = append(b, '{')
	for _, k := range sortedKeys(buf[:0], st) {
		b = appendKey(b, k)
		v := st[k]
		ok := false
		switch k {
		case "observedGeneration":
			b, ok = generation(b, v)
		case "conditions":
			list, isList := v.([]interface{})
			if !isList {
				return nil, false
			}
			item := node.Child(k).Item()
			b = append(b, '[')
			for _, c := range list {
				cm, isMap := c.(map[string]interface{})
				if !isMap {
					return nil, false
				}
				var cbuf [16]string
				b = append(b, '{')
				for _, ck := range sortedKeys(cbuf[:0], cm) {
					b = appendKey(b, ck)
					if ck == "observedGeneration" {
						b, ok = generation(b, cm[ck])
					} else {
						b, ok = m.encodeAbstract(b, cm[ck], item.Child(ck), n)
					}
					if !ok {
						return nil, false
					}
					b = append(b, ',')
				}
				b = append(b, '}', ',')
			}
			b, ok = append(b, ']'), true
		default:
			b, ok = m.encodeAbstract(b, v, node.Child(k), n)
		}
		if !ok {
			return nil, false
		}
		b = append(b, ',')
	}
	return append(b, '}'), true
}
