package store

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Programs, prompts and answers are stored by content, in chunks: a
// content is cut where a rolling hash of its last 64 bytes hits a pattern
// (content-defined chunking, as backup tools do), so that two contents
// that differ in a few lines share every chunk but the ones around the
// difference, wherever it lies, and however the text is wrapped (a
// program, or the same program escaped inside a prompt's JSON). Each chunk
// is stored once, compressed (deflate), under the SHA-256 of its bytes; a
// content is the list of its chunks' hashes, under the SHA-256 of its
// bytes, against which it is checked when it is read back.
//
// Chunks are 512 bytes to 16 KiB, about 2.5 KiB on average: large enough
// that a content's list of hashes (32 bytes a chunk) and each chunk's row
// cost little, small enough that a three-line change rewrites a few KiB.
// The sizes were chosen by measurement (BenchmarkChildren).
const (
	chunkMin  = 512
	chunkBits = 11 // a cut after 1 in 2^11 bytes past the minimum
	chunkMax  = 16 << 10
	// hashLen is the length of a chunk's hash in a content's list.
	hashLen = sha256.Size
)

// Chunk codecs: the first byte of a stored chunk.
const (
	codecRaw     = 0
	codecDeflate = 1
)

// ErrDamaged: a database file that is empty, truncated, not SQLite, or
// that SQLite finds corrupt; or a stored content that does not match its
// hash. frontier never re-creates or repairs it.
var ErrDamaged = errors.New("the database is damaged")

// gear is the rolling hash's table: a pseudo-random number per byte
// value, fixed for ever (changing it would cut new contents elsewhere
// than old ones, and share nothing with them).
var gear = func() (t [256]uint64) {
	x := uint64(0x6a09e667f3bcc908)
	for i := range t {
		// SplitMix64.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}()

// cut returns the end offsets of b's chunks.
func cut(b []byte) []int {
	ends := make([]int, 0, len(b)/(chunkMin+1<<chunkBits)+1)
	for start := 0; start < len(b); {
		start = nextCut(b, start)
		ends = append(ends, start)
	}
	return ends
}

// nextCut returns the end of the chunk of b that starts at start. The hash
// rolls over all of the chunk (its high bits depend on the last 64 bytes
// only), so where a cut falls depends on the bytes around it, not on where
// the chunk began.
//
// Since the hash at a byte depends on the last 64 bytes only, and no cut
// falls in a chunk's first chunkMin bytes, each chunk's hash starts 64
// bytes before the first place it may cut: the same cuts as rolling over
// every byte, for a fifth less work.
func nextCut(b []byte, start int) int {
	const mask = (1<<chunkBits - 1) << (64 - chunkBits)
	end := min(start+chunkMax, len(b))
	var h uint64
	i := start + chunkMin - 64
	for ; i < start+chunkMin-1 && i < end; i++ {
		h = h<<1 + gear[b[i]]
	}
	for ; i < end; i++ {
		h = h<<1 + gear[b[i]]
		if h&mask == 0 {
			return i + 1
		}
	}
	return end
}

// codec compresses and decompresses chunks, reusing its (large) deflate
// state across calls.
type codec struct {
	writers sync.Pool // *flate.Writer
	readers sync.Pool // io.ReadCloser that is a flate.Resetter
}

// encode returns a chunk as it is stored: compressed when that is smaller.
func (c *codec) encode(chunk []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(chunk)/2 + 16)
	buf.WriteByte(codecDeflate)
	w, _ := c.writers.Get().(*flate.Writer)
	if w == nil {
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	} else {
		w.Reset(&buf)
	}
	_, err := w.Write(chunk)
	if err == nil {
		err = w.Close()
	}
	c.writers.Put(w)
	if err != nil || buf.Len() >= len(chunk)+1 {
		return append([]byte{codecRaw}, chunk...)
	}
	return buf.Bytes()
}

// decode appends a stored chunk's bytes to dst.
func (c *codec) decode(dst, stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return dst, errors.New("empty chunk")
	}
	switch stored[0] {
	case codecRaw:
		return append(dst, stored[1:]...), nil
	case codecDeflate:
		src := bytes.NewReader(stored[1:])
		r, _ := c.readers.Get().(io.ReadCloser)
		if r == nil {
			r = flate.NewReader(src)
		} else if err := r.(flate.Resetter).Reset(src, nil); err != nil {
			return dst, err
		}
		buf := bytes.NewBuffer(dst)
		_, err := io.Copy(buf, r)
		c.readers.Put(r)
		return buf.Bytes(), err
	}
	return dst, fmt.Errorf("unknown chunk codec %d", stored[0])
}

// pendingContent is a content ready to be written: its chunks that the
// database lacks are compressed already, so that the transaction that
// writes them holds the database's lock only for the inserts.
type pendingContent struct {
	hash     string
	size     int
	manifest []byte
	// exists: the database has the content already.
	exists bool
	// newChunks are the chunks the database lacked: hash, stored bytes.
	newChunks [][2][]byte
	// src and ends are the content and its cuts, for recent once the
	// content is stored.
	src    []byte
	ends   []int
	recent *layouts
}

// Hash is the content address of a program, or of any stored text: the
// SHA-256 of its bytes.
func Hash(src []byte) string {
	h := sha256.Sum256(src)
	return hex.EncodeToString(h[:])
}

// prepareContent cuts b into chunks and compresses those the database
// does not hold yet.
func (s *sqlStore) prepareContent(ctx context.Context, q querier, b []byte) (*pendingContent, error) {
	return s.prepareHashed(ctx, q, b, Hash(b), nil)
}

// prepareHashed is prepareContent for b whose hash h the caller has. With
// known, the chunks known to be stored are not looked up again, and those
// found are added to it: q must then be the database, not a transaction
// that may yet roll back what it wrote.
func (s *sqlStore) prepareHashed(ctx context.Context, q querier, b []byte, h string, known *chunkSet) (*pendingContent, error) {
	p := &pendingContent{hash: h, size: len(b)}
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM contents WHERE hash = $1`, p.hash).Scan(&one)
	switch {
	case err == nil:
		p.exists = true
		return p, nil
	case !notFound(err):
		return nil, err
	}
	ends, manifest, stored := s.recent.chunks(b)
	if manifest == nil {
		manifest = []byte{} // an empty content: no chunks, not NULL
	}
	p.manifest, p.src, p.ends, p.recent = manifest, b, ends, &s.recent
	chunks := make(map[string][]byte, len(ends))
	var order []string
	start := 0
	for i, end := range ends {
		k := string(manifest[i*hashLen : (i+1)*hashLen])
		if _, ok := chunks[k]; !ok && !stored[i] && !known.has(k) {
			chunks[k] = b[start:end]
			order = append(order, k)
		}
		start = end
	}
	have, err := s.haveChunks(ctx, q, order)
	if err != nil {
		return nil, err
	}
	found := make([]string, 0, len(have))
	for _, k := range order {
		if have[k] {
			found = append(found, k)
		} else {
			p.newChunks = append(p.newChunks, [2][]byte{[]byte(k), s.codec.encode(chunks[k])})
		}
	}
	known.add(found...)
	return p, nil
}

// chunkSet remembers hashes of chunks the database holds, so that a
// content that repeats most of one stored before (a child and its parent)
// looks up only its new chunks: the lookup was the largest part of storing
// a program (BenchmarkEngine). Chunks are never deleted; a set that grows
// past its bound starts again empty.
type chunkSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// chunkSetMax bounds a chunkSet: about 4 MB of hashes, the chunks of
// thousands of distinct programs of 100 KB.
const chunkSetMax = 1 << 16

func (c *chunkSet) has(k string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[k]
	return ok
}

func (c *chunkSet) add(ks ...string) {
	if c == nil || len(ks) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(ks) > chunkSetMax {
		c.m = make(map[string]struct{}, len(ks))
	}
	for _, k := range ks {
		c.m[k] = struct{}{}
	}
}

// stored adds the chunks p wrote to known, once the transaction that
// wrote them committed.
func (p *pendingContent) stored(known *chunkSet) {
	if p == nil {
		return
	}
	for _, c := range p.newChunks {
		known.add(string(c[0]))
	}
	if !p.exists {
		p.recent.remember(p.src, p.ends, p.manifest)
	}
}

// maxParams bounds the parameters of one statement (SQLite allows 32766,
// PostgreSQL 65535).
const maxParams = 1000

// haveChunks says which of the chunk hashes the database holds.
func (s *sqlStore) haveChunks(ctx context.Context, q querier, hashes []string) (map[string]bool, error) {
	have := make(map[string]bool, len(hashes))
	keys := make([]any, len(hashes))
	for i, h := range hashes {
		keys[i] = []byte(h)
	}
	err := eachIn(ctx, q, `SELECT hash FROM chunks WHERE hash IN (`, keys, func(rows *sql.Rows) error {
		var h []byte
		err := rows.Scan(&h)
		have[string(h)] = true
		return err
	})
	return have, err
}

// eachIn runs query, which ends in "IN (", on keys in batches of
// maxParams, and calls scan on every row.
func eachIn(ctx context.Context, q querier, query string, keys []any, scan func(*sql.Rows) error) error {
	for len(keys) > 0 {
		n := min(len(keys), maxParams)
		rows, err := q.QueryContext(ctx, query+placeholders(1, n)+`)`, keys[:n]...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// write inserts the content's new chunks and its row; what another
// process inserted meanwhile is kept.
func (p *pendingContent) write(ctx context.Context, q querier) error {
	if p.exists {
		return nil
	}
	for rest := p.newChunks; len(rest) > 0; {
		n := min(len(rest), maxParams/2)
		args := make([]any, 0, 2*n)
		var vals strings.Builder
		for i, c := range rest[:n] {
			if i > 0 {
				vals.WriteString(", ")
			}
			fmt.Fprintf(&vals, "($%d, $%d)", 2*i+1, 2*i+2)
			args = append(args, c[0], c[1])
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO chunks (hash, data) VALUES `+vals.String()+` ON CONFLICT (hash) DO NOTHING`, args...); err != nil {
			return fmt.Errorf("store chunks: %w", err)
		}
		rest = rest[n:]
	}
	_, err := q.ExecContext(ctx, `INSERT INTO contents (hash, size, chunks) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING`,
		p.hash, p.size, p.manifest)
	if err != nil {
		return fmt.Errorf("store content: %w", err)
	}
	return nil
}

// contentText prepares a text for a row that refers to it: nil for "".
func (s *sqlStore) contentText(ctx context.Context, text string) (*pendingContent, error) {
	if text == "" {
		return nil, nil
	}
	b := []byte(text)
	return s.prepareHashed(ctx, s.db, b, Hash(b), &s.known)
}

// hashOf is the content hash a row records: "" for none.
func (p *pendingContent) hashOf() string {
	if p == nil {
		return ""
	}
	return p.hash
}

// writeIf writes p when there is one.
func (p *pendingContent) writeIf(ctx context.Context, q querier) error {
	if p == nil {
		return nil
	}
	return p.write(ctx, q)
}

// content returns the content with hash h, checked against it. With
// remember, its layout is kept for the contents written next (q must then
// read only what is committed).
func (s *sqlStore) content(ctx context.Context, q querier, h string, remember bool) ([]byte, error) {
	m, err := s.readContents(ctx, q, []string{h}, remember)
	if err != nil {
		return nil, err
	}
	b, ok := m[h]
	if !ok {
		return nil, ErrNotFound
	}
	return b, nil
}

// contents returns the contents with the given hashes ("" is no bytes),
// each checked against its hash; a hash the database lacks is missing
// from the map.
func (s *sqlStore) contents(ctx context.Context, q querier, hashes []string) (map[string][]byte, error) {
	return s.readContents(ctx, q, hashes, false)
}

// readContents is contents; with remember, the layouts of what it read
// are kept.
func (s *sqlStore) readContents(ctx context.Context, q querier, hashes []string, remember bool) (map[string][]byte, error) {
	out := make(map[string][]byte, len(hashes))
	type entry struct {
		size     int
		manifest []byte
	}
	entries := map[string]entry{}
	var want []string
	for _, h := range hashes {
		if h == "" {
			out[h] = []byte{}
			continue
		}
		if _, ok := entries[h]; !ok {
			entries[h] = entry{}
			want = append(want, h)
		}
	}
	clear(entries)
	keys := make([]any, len(want))
	for i, h := range want {
		keys[i] = h
	}
	err := eachIn(ctx, q, `SELECT hash, size, chunks FROM contents WHERE hash IN (`, keys, func(rows *sql.Rows) error {
		var h string
		var e entry
		err := rows.Scan(&h, &e.size, &e.manifest)
		entries[h] = e
		return err
	})
	if err != nil {
		return nil, err
	}
	var need []string
	seen := map[string]bool{}
	for _, e := range entries {
		if len(e.manifest)%hashLen != 0 {
			continue // reported below
		}
		for i := 0; i < len(e.manifest); i += hashLen {
			k := string(e.manifest[i : i+hashLen])
			if !seen[k] {
				seen[k] = true
				need = append(need, k)
			}
		}
	}
	data := make(map[string][]byte, len(need))
	keys = make([]any, len(need))
	for i, k := range need {
		keys[i] = []byte(k)
	}
	err = eachIn(ctx, q, `SELECT hash, data FROM chunks WHERE hash IN (`, keys, func(rows *sql.Rows) error {
		var k, d []byte
		err := rows.Scan(&k, &d)
		data[string(k)] = d
		return err
	})
	if err != nil {
		return nil, err
	}
	for h, e := range entries {
		b := make([]byte, 0, e.size)
		ends := make([]int, 0, len(e.manifest)/hashLen)
		var err error
		if len(e.manifest)%hashLen != 0 {
			err = fmt.Errorf("its list of chunks is %d bytes long", len(e.manifest))
		}
		for i := 0; err == nil && i < len(e.manifest); i += hashLen {
			d, ok := data[string(e.manifest[i:i+hashLen])]
			if !ok {
				err = fmt.Errorf("its chunk %x is missing", e.manifest[i:i+hashLen])
				break
			}
			b, err = s.codec.decode(b, d)
			ends = append(ends, len(b))
		}
		if err == nil && (len(b) != e.size || Hash(b) != h) {
			err = fmt.Errorf("what its chunks hold (%d bytes) does not match its hash", len(b))
		}
		if err != nil {
			return nil, fmt.Errorf("content %.12s in %s cannot be read: %v: %w", h, s.loc, err, ErrDamaged)
		}
		if remember {
			s.recent.remember(b, ends, e.manifest)
		}
		out[h] = b
	}
	return out, nil
}

// placeholders returns "$from, ..., $(from+n-1)".
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", from+i)
	}
	return b.String()
}
