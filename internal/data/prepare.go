package data

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
)

// Defaults of Prepare.
const (
	// DefaultShardTokens is the speedrun's shard size.
	DefaultShardTokens = 100_000_000
	// DefaultPrefix starts the names of prepared shards.
	DefaultPrefix = "corpus"
	// DefaultTextField is the JSONL field that holds a document's text.
	DefaultTextField = "text"
	// MaxRecordBytes is the longest JSONL line Prepare reads: a record
	// must be held whole to be parsed.
	MaxRecordBytes = 1 << 30
)

// Batching: the reader hands text to the workers in batches of about
// batchBytes, each cut at a document boundary or, inside a long document,
// at a place where cutting does not change the tokens (safeSplit).
const (
	defaultBatchBytes = 1 << 20
	// defaultMaxSegment is how much of one document is gathered before it
	// is cut at a safe place, so a document of any size streams through.
	defaultMaxSegment = 4 << 20
	// hardCutBytes is how far a document may run without a safe place
	// (ASCII white space after a character that is not white space)
	// before it is cut anyway, at a character boundary: the tokens there
	// may then differ from tiktoken's.
	hardCutBytes = 64 << 20
)

// PrepareOptions configures Prepare.
type PrepareOptions struct {
	// Inputs are the files to read, in order (ExpandInputs resolves
	// folders and patterns): .txt, .jsonl, and .gz of either.
	Inputs []string
	// Out is the folder the shards and manifest.json are written to.
	Out string
	// Prefix starts every shard's name: <prefix>_val_000000.bin,
	// <prefix>_train_000001.bin, ... (default "corpus").
	Prefix string
	// Tokenizer is required (NewTokenizer).
	Tokenizer Tokenizer
	// ValTokens is the size of the validation shard: the first ValTokens
	// tokens of the stream (default ShardTokens, the speedrun's layout).
	ValTokens int64
	// ShardTokens is the size of each training shard but the last
	// (default 100,000,000).
	ShardTokens int64
	// Workers tokenize in parallel (default GOMAXPROCS). The output does
	// not depend on it.
	Workers int
	// Split says how .txt files are cut into documents (default SplitFile).
	Split TextSplit
	// TextField is the JSONL field with the text (default "text").
	TextField string
	// StrictUTF8 makes invalid UTF-8 in .txt inputs an error; otherwise
	// each run of invalid bytes becomes U+FFFD.
	StrictUTF8 bool
	// Force replaces shards with the same prefix already in Out.
	Force bool
	// Log receives warnings; nil discards them.
	Log *slog.Logger
	// Progress, when set, is called every ProgressEvery (default 1s) and
	// once more at the end with Final set.
	Progress      func(Progress)
	ProgressEvery time.Duration

	// batchBytes, maxSegment and hardCut override the batching sizes in
	// tests.
	batchBytes, maxSegment, hardCut int
}

// PrepareResult says what Prepare wrote.
type PrepareResult struct {
	Manifest     *DataManifest
	ManifestPath string
	// Docs counts documents written; EmptyDocs those skipped for having
	// no text (they would be a lone BOS).
	Docs, EmptyDocs int64
	// TextBytes is the UTF-8 text tokenized; InputBytes the bytes read
	// from the input files (compressed, for .gz).
	TextBytes, InputBytes int64
	Tokens                int64
	// InvalidUTF8 counts runs of invalid bytes replaced by U+FFFD.
	InvalidUTF8 int64
	// ForcedCuts counts documents cut where no white space allowed an
	// exact cut (see hardCutBytes).
	ForcedCuts int64
	Elapsed    time.Duration
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)

func (o *PrepareOptions) normalize() error {
	if o.Tokenizer == nil {
		return errors.New("prepare: no tokenizer")
	}
	if o.Out == "" {
		return errors.New("prepare: no output folder: name one with --out")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(o.Prefix) {
		return fmt.Errorf("prepare: prefix %q: use letters, digits, dots and dashes (no underscores: they separate the parts of a shard's name)", o.Prefix)
	}
	if o.ShardTokens == 0 {
		o.ShardTokens = DefaultShardTokens
	}
	if o.ShardTokens < 1 || o.ShardTokens > MaxTokens {
		return fmt.Errorf("prepare: shard size %d tokens: use 1 to %d", o.ShardTokens, int64(MaxTokens))
	}
	if o.ValTokens == 0 {
		o.ValTokens = o.ShardTokens
	}
	if o.ValTokens < 1 || o.ValTokens > MaxTokens {
		return fmt.Errorf("prepare: validation size %d tokens: use 1 to %d", o.ValTokens, int64(MaxTokens))
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Split == "" {
		o.Split = SplitFile
	}
	if _, err := ParseTextSplit(string(o.Split)); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if o.TextField == "" {
		o.TextField = DefaultTextField
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.batchBytes <= 0 {
		o.batchBytes = defaultBatchBytes
	}
	if o.maxSegment <= 0 {
		o.maxSegment = defaultMaxSegment
	}
	if o.hardCut <= 0 {
		o.hardCut = hardCutBytes
	}
	if len(o.Inputs) == 0 {
		return errors.New("prepare: no input files")
	}
	return checkInputs(o.Inputs)
}

// ShardName is the name of shard i of a prepared set: i = 0 is the
// validation shard, the rest are training shards, as in the speedrun.
func ShardName(prefix string, i int) string {
	if i == 0 {
		return fmt.Sprintf("%s_val_%06d.bin", prefix, 0)
	}
	return fmt.Sprintf("%s_train_%06d.bin", prefix, i)
}

// Prepare tokenizes the input documents into speedrun shards in o.Out:
// every document is BOS followed by its tokens, the first ValTokens tokens
// of the stream form the validation shard, and the rest fill training
// shards of ShardTokens (the last one holds what is left). Documents
// straddle shard boundaries, as in the speedrun. The input is streamed:
// memory does not grow with the corpus (the batches in flight and the
// workers' caches are bounded), except that a JSONL record is held whole. The output is the same bytes
// for any number of workers. It writes manifest.json with every shard's
// SHA-256. On error or cancellation, nothing it wrote is left behind.
func Prepare(ctx context.Context, o PrepareOptions) (_ *PrepareResult, err error) {
	start := time.Now()
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(o.Out); errors.Is(err, fs.ErrNotExist) {
		// A folder made here for nothing would look like a result.
		defer func() {
			if err != nil {
				os.Remove(o.Out) // only when empty
			}
		}()
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := clearOldShards(o.Out, o.Prefix, o.Force); err != nil {
		return nil, err
	}
	var totalIn int64
	for _, p := range o.Inputs {
		if st, err := os.Stat(p); err == nil {
			totalIn += st.Size()
		}
	}

	var readBytes, tokens atomic.Int64
	var filesDone atomic.Int64
	snap := func() (Progress, int64) {
		n := readBytes.Load()
		return Progress{Op: "prepare", Done: n, Total: totalIn, Files: len(o.Inputs), FilesDone: int(filesDone.Load()), Tokens: tokens.Load()}, n
	}
	progCtx, stopProgress := context.WithCancel(ctx)
	var progWG sync.WaitGroup
	progWG.Add(1)
	go func() {
		defer progWG.Done()
		reportProgress(progCtx, o.ProgressEvery, o.Progress, snap)
	}()
	finish := func() {
		stopProgress()
		progWG.Wait()
		if o.Progress != nil {
			p, _ := snap()
			p.Final, p.Elapsed = true, time.Since(start)
			if s := p.Elapsed.Seconds(); s > 0 {
				p.Rate = float64(p.Done) / s
			}
			o.Progress(p)
		}
	}

	sw := &shardWriter{dir: o.Out, prefix: o.Prefix, valTokens: o.ValTokens, shardTokens: o.ShardTokens, written: &tokens}
	res := &PrepareResult{}
	err = o.run(ctx, sw, res, &readBytes, &filesDone)
	if err == nil {
		err = sw.finish()
	}
	if err == nil {
		switch total := tokens.Load(); {
		case total == 0:
			err = fmt.Errorf("prepare: the inputs hold no text (%d empty documents)", res.EmptyDocs)
		case total <= o.ValTokens:
			err = fmt.Errorf("prepare: the inputs make %d tokens, all of them the validation shard (--val-tokens %d), and none are left for training: lower --val-tokens or add input", total, o.ValTokens)
		}
	}
	finish()
	if err != nil {
		sw.abort()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("prepare interrupted, output removed: %w", context.Cause(ctx))
		}
		return nil, err
	}
	res.Tokens = tokens.Load()
	res.InputBytes = readBytes.Load()
	res.Manifest = &DataManifest{
		Source:    "prepare",
		Inputs:    o.Inputs,
		Tokenizer: o.Tokenizer.Name(),
		VocabSize: o.Tokenizer.VocabSize(),
		BOS:       int(o.Tokenizer.BOS()),
		Train:     o.Prefix + "_train_*.bin",
		Val:       ShardName(o.Prefix, 0),
		Shards:    sw.done,
	}
	res.ManifestPath, err = WriteManifest(o.Out, res.Manifest)
	if err != nil {
		sw.abort()
		return nil, fmt.Errorf("prepare: %w", err)
	}
	res.Elapsed = time.Since(start)
	if res.ForcedCuts > 0 {
		o.Log.Warn("documents ran without white space and were cut anyway; the tokens at each cut may differ from an uncut encoding", "cuts", res.ForcedCuts, "run_bytes", o.hardCut)
	}
	return res, nil
}

// clearOldShards refuses to mix a new set with an old one: shards with
// the prefix already in dir are an error, or removed with force.
func clearOldShards(dir, prefix string, force bool) error {
	var old []string
	for _, pat := range []string{prefix + "_val_*.bin", prefix + "_train_*.bin"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		old = append(old, m...)
	}
	if len(old) == 0 {
		return nil
	}
	if !force {
		return fmt.Errorf("prepare: %s already holds %d shards named %s_*: pass --force to replace them, or choose another --out or --prefix", dir, len(old), prefix)
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("prepare: remove old shard: %w", err)
		}
	}
	return nil
}

// segment is one stretch of a batch's text: a whole document, or a part
// of one; bos marks the start of a document.
type segment struct {
	off int
	bos bool
}

// batch is the unit of work: text in, tokens out, in sequence order.
type batch struct {
	seq    int64
	text   []byte
	segs   []segment
	tokens []uint16
}

func (o *PrepareOptions) run(ctx context.Context, sw *shardWriter, res *PrepareResult, readBytes, filesDone *atomic.Int64) error {
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan *batch)
	results := make(chan *batch, o.Workers)
	// slots bounds the batches between the reader and the writer, and so
	// the memory, whatever the order in which workers finish.
	slots := make(chan struct{}, 2*o.Workers+2)
	// free recycles batches, whose buffers are a few MB: allocating them
	// anew would keep the garbage collector busy.
	free := make(chan *batch, cap(slots)+1)

	g.Go(func() error {
		defer close(batches)
		b := &batcher{ctx: gctx, out: batches, slots: slots, free: free, target: o.batchBytes, maxSegment: o.maxSegment, hardCut: o.hardCut, cur: &batch{}}
		ro := readerOptions{split: o.Split, textField: o.TextField, strictUTF8: o.StrictUTF8, maxRecord: MaxRecordBytes}
		for _, path := range o.Inputs {
			r, closeFile, err := openInput(path, func(n int) { readBytes.Add(int64(n)) })
			if err != nil {
				return err
			}
			kind, _ := kindOf(path)
			replaced, err := readInput(path, r, kind, ro, b)
			closeFile()
			if err != nil {
				return err
			}
			if replaced > 0 {
				o.Log.Warn("invalid UTF-8 replaced by U+FFFD", "file", path, "runs", replaced)
				res.InvalidUTF8 += replaced
			}
			filesDone.Add(1)
		}
		if err := b.flush(); err != nil {
			return err
		}
		res.Docs, res.EmptyDocs, res.ForcedCuts, res.TextBytes = b.docs, b.empty, b.cuts, b.textBytes
		return nil
	})

	var workers sync.WaitGroup
	bos := o.Tokenizer.BOS()
	for range o.Workers {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			enc := o.Tokenizer.NewEncoder()
			for bt := range batches {
				bt.tokens = encodeBatch(enc, bos, bt)
				select {
				case results <- bt:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	go func() {
		workers.Wait()
		close(results)
	}()

	g.Go(func() error {
		pending := map[int64]*batch{}
		next := int64(0)
		for bt := range results {
			pending[bt.seq] = bt
			for {
				b, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				if err := sw.write(b.tokens); err != nil {
					return err
				}
				select {
				case free <- b:
				default:
				}
				<-slots
				next++
			}
		}
		if len(pending) > 0 && gctx.Err() == nil {
			return fmt.Errorf("prepare: internal error: %d batches out of order", len(pending))
		}
		return nil
	})
	return g.Wait()
}

// encodeBatch tokenizes each segment, a document's start with BOS first,
// into the batch's token buffer.
func encodeBatch(enc Encoder, bos uint16, bt *batch) []uint16 {
	toks := bt.tokens[:0]
	for i, s := range bt.segs {
		end := len(bt.text)
		if i+1 < len(bt.segs) {
			end = bt.segs[i+1].off
		}
		if s.bos {
			toks = append(toks, bos)
		}
		toks = enc.Encode(toks, bt.text[s.off:end])
	}
	return toks
}

// batcher gathers documents into batches (it is the readers' docSink). A
// batch is handed on at a document boundary once it holds target bytes;
// a document longer than maxSegment is cut at a safe place and continues
// in the next batch without a BOS.
type batcher struct {
	ctx        context.Context
	out        chan<- *batch
	slots      chan struct{}
	free       chan *batch // recycled batches, if any
	target     int
	maxSegment int
	hardCut    int

	cur      *batch
	seq      int64
	segStart int   // where the current segment starts in cur.text
	noSafe   int   // no safe cut exists in cur.text before this
	docBytes int64 // bytes of the current document so far

	docs, empty, cuts, textBytes int64
}

func (b *batcher) begin() error {
	b.cur.segs = append(b.cur.segs, segment{off: len(b.cur.text), bos: true})
	b.segStart, b.noSafe, b.docBytes = len(b.cur.text), len(b.cur.text)+1, 0
	return nil
}

func (b *batcher) write(p []byte) error {
	b.cur.text = append(b.cur.text, p...)
	b.docBytes += int64(len(p))
	b.textBytes += int64(len(p))
	if len(b.cur.text)-b.segStart > b.maxSegment {
		return b.cut()
	}
	return nil
}

func (b *batcher) end() error {
	if b.docBytes == 0 {
		// Nothing to say: drop the document rather than write a lone BOS.
		b.cur.segs = b.cur.segs[:len(b.cur.segs)-1]
		b.empty++
		return nil
	}
	b.docs++
	if len(b.cur.text) >= b.target {
		return b.flush()
	}
	return nil
}

// cut hands on the batch up to the last safe place in the current
// segment, and carries the rest of the segment into the next batch.
func (b *batcher) cut() error {
	text := b.cur.text
	k := -1
	for i := len(text) - 1; i >= max(b.noSafe, b.segStart+1); i-- {
		if safeSplit(text, i) {
			k = i
			break
		}
	}
	b.noSafe = len(text)
	if k < 0 {
		if len(text)-b.segStart < b.hardCut {
			return nil
		}
		// No white space for hardCut bytes: cut before the last character.
		_, size := utf8.DecodeLastRune(text)
		k = len(text) - size
		b.cuts++
	}
	rest := append([]byte(nil), text[k:]...)
	b.cur.text = text[:k]
	if err := b.flush(); err != nil {
		return err
	}
	b.cur.text = append(b.cur.text, rest...)
	b.cur.segs = append(b.cur.segs, segment{off: 0})
	b.segStart, b.noSafe = 0, 1
	return nil
}

// flush hands the current batch to the workers.
func (b *batcher) flush() error {
	if len(b.cur.segs) == 0 {
		return nil
	}
	select {
	case b.slots <- struct{}{}:
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	b.cur.seq = b.seq
	b.seq++
	select {
	case b.out <- b.cur:
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	select {
	case b.cur = <-b.free:
		b.cur.text, b.cur.segs, b.cur.tokens = b.cur.text[:0], b.cur.segs[:0], b.cur.tokens[:0]
	default:
		b.cur = &batch{text: make([]byte, 0, b.target+b.target/4)}
	}
	return nil
}

// shardWriter streams tokens into consecutive shards: the validation
// shard of valTokens, then training shards of shardTokens.
type shardWriter struct {
	dir, prefix            string
	valTokens, shardTokens int64
	written                *atomic.Int64

	cur   *shardOut
	index int
	done  []ManifestShard
	paths []string // shards renamed into place, removed by abort
	buf   []byte
}

func (w *shardWriter) capacity(i int) int64 {
	if i == 0 {
		return w.valTokens
	}
	return w.shardTokens
}

func (w *shardWriter) write(tokens []uint16) error {
	for len(tokens) > 0 {
		if w.cur == nil {
			s, err := createShard(filepath.Join(w.dir, ShardName(w.prefix, w.index)), w.capacity(w.index))
			if err != nil {
				return err
			}
			w.cur = s
		}
		k := int(min(w.cur.planned-w.cur.n, int64(len(tokens))))
		if err := w.cur.append(tokens[:k], &w.buf); err != nil {
			return err
		}
		w.written.Add(int64(k))
		tokens = tokens[k:]
		if w.cur.n == w.cur.planned {
			if err := w.closeCur(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *shardWriter) closeCur() error {
	ms, err := w.cur.close()
	w.cur = nil
	if err != nil {
		return err
	}
	w.done = append(w.done, ms)
	w.paths = append(w.paths, filepath.Join(w.dir, ms.File))
	w.index++
	return nil
}

// finish closes the last, partly filled shard.
func (w *shardWriter) finish() error {
	if w.cur == nil {
		return nil
	}
	if w.cur.n == 0 {
		w.cur.abort()
		w.cur = nil
		return nil
	}
	return w.closeCur()
}

// abort removes everything written.
func (w *shardWriter) abort() {
	if w.cur != nil {
		w.cur.abort()
		w.cur = nil
	}
	for _, p := range w.paths {
		os.Remove(p)
	}
	w.paths, w.done = nil, nil
}

// shardOut is one shard being written to a temporary file. Its header
// claims planned tokens; if fewer come, close rewrites the header.
type shardOut struct {
	path, tmp  string
	f          *os.File
	bw         *bufio.Writer
	h          hash.Hash
	planned, n int64
}

func createShard(path string, planned int64) (*shardOut, error) {
	hdr, err := EncodeHeader(int(planned))
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write shard: %w", err)
	}
	s := &shardOut{path: path, tmp: f.Name(), f: f, bw: bufio.NewWriterSize(f, 1<<20), h: sha256.New(), planned: planned}
	if err := s.put(hdr); err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

func (s *shardOut) put(b []byte) error {
	s.h.Write(b)
	if _, err := s.bw.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", s.path, diskErr(err))
	}
	return nil
}

func (s *shardOut) append(tokens []uint16, buf *[]byte) error {
	for len(tokens) > 0 {
		n := min(len(tokens), chunkTokens)
		if cap(*buf) < TokenBytes*n {
			*buf = make([]byte, TokenBytes*chunkTokens)
		}
		b := (*buf)[:TokenBytes*n]
		for i, t := range tokens[:n] {
			binary.LittleEndian.PutUint16(b[TokenBytes*i:], t)
		}
		if err := s.put(b); err != nil {
			return err
		}
		s.n += int64(n)
		tokens = tokens[n:]
	}
	return nil
}

// close completes the shard and renames it into place.
func (s *shardOut) close() (ManifestShard, error) {
	fail := func(err error) (ManifestShard, error) {
		s.abort()
		return ManifestShard{}, fmt.Errorf("write %s: %w", s.path, diskErr(err))
	}
	if err := s.bw.Flush(); err != nil {
		return fail(err)
	}
	sum := hex.EncodeToString(s.h.Sum(nil))
	if s.n != s.planned {
		// The last shard: its count is known only now.
		hdr, err := EncodeHeader(int(s.n))
		if err != nil {
			return fail(err)
		}
		if _, err := s.f.WriteAt(hdr, 0); err != nil {
			return fail(err)
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return fail(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, s.f); err != nil {
			return fail(err)
		}
		sum = hex.EncodeToString(h.Sum(nil))
	}
	if err := s.f.Sync(); err != nil {
		return fail(err)
	}
	if err := s.f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chmod(s.tmp, 0o644); err != nil {
		return fail(err)
	}
	if err := os.Rename(s.tmp, s.path); err != nil {
		return fail(err)
	}
	syncDir(filepath.Dir(s.path))
	return ManifestShard{File: filepath.Base(s.path), Tokens: s.n, SHA256: sum, Bytes: HeaderBytes + TokenBytes*s.n}, nil
}

func (s *shardOut) abort() {
	s.f.Close()
	os.Remove(s.tmp)
}

// syncDir makes a rename in dir durable; some file systems refuse to sync
// a folder, which is no reason to fail.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
