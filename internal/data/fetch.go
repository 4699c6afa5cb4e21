package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Dataset is a set of GPT-2-tokenized shards on the Hugging Face hub, as
// the speedrun's data/cached_*.py scripts download them.
type Dataset struct {
	// Name is what the command line calls it ("fineweb10B").
	Name string
	// Repo is the hub's dataset repository.
	Repo string
	// Prefix starts the file names: <prefix>_val_000000.bin and
	// <prefix>_train_%06d.bin.
	Prefix string
	// TrainShards is how many training shards the repository holds.
	TrainShards int
}

// Datasets returns the datasets Fetch knows, as the speedrun names them.
func Datasets() []Dataset {
	return []Dataset{
		{Name: "fineweb10B", Repo: "kjj0/fineweb10B-gpt2", Prefix: "fineweb", TrainShards: 103},
		{Name: "finewebedu10B", Repo: "kjj0/finewebedu10B-gpt2", Prefix: "finewebedu", TrainShards: 99},
		{Name: "fineweb100B", Repo: "kjj0/fineweb100B-gpt2", Prefix: "fineweb", TrainShards: 1030},
	}
}

// LookupDataset returns the dataset called name.
func LookupDataset(name string) (Dataset, error) {
	var names []string
	for _, d := range Datasets() {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return Dataset{}, fmt.Errorf("unknown dataset %q: use one of %s", name, strings.Join(names, ", "))
}

// Files returns the validation shard's name and those of the first train
// training shards.
func (d Dataset) Files(train int) []string {
	out := []string{fmt.Sprintf("%s_val_%06d.bin", d.Prefix, 0)}
	for i := 1; i <= train; i++ {
		out = append(out, fmt.Sprintf("%s_train_%06d.bin", d.Prefix, i))
	}
	return out
}

// DefaultEndpoint is the Hugging Face hub; HF_ENDPOINT overrides it in the
// command.
const DefaultEndpoint = "https://huggingface.co"

// Fetch errors a caller may want to tell apart, for errors.Is.
var (
	// ErrUnauthorized: the hub refused access (HTTP 401 or 403).
	ErrUnauthorized = errors.New("access refused")
	// ErrNotFound: the file is not on the hub (HTTP 404).
	ErrNotFound = errors.New("not found")
)

// FetchError is a download that failed for good.
type FetchError struct {
	File string
	// URL is the address asked for; it never holds credentials.
	URL string
	// Status is the last HTTP status, 0 when there was no response.
	Status int
	Err    error
	// Hint says what to do.
	Hint string
}

func (e *FetchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fetch %s: %v", e.File, e.Err)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d from %s)", e.Status, e.URL)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *FetchError) Unwrap() error { return e.Err }

// FetchOptions configures Fetch.
type FetchOptions struct {
	Dataset Dataset
	// TrainShards is how many training shards to get, besides the
	// validation shard (0 for the validation shard alone).
	TrainShards int
	// Dir is where the shards go.
	Dir string
	// Endpoint is the hub's base URL (default DefaultEndpoint).
	Endpoint string
	// Revision is the branch, tag or commit (default "main").
	Revision string
	// Token is sent as "Authorization: Bearer" and never logged.
	Token string
	// Jobs is how many files download at once (default 4).
	Jobs int
	// Client makes the requests (default: one with connection timeouts
	// and no overall timeout, since a shard is 200 MB).
	Client *http.Client
	// Attempts is how many times in a row a file may fail without any
	// progress before Fetch gives up (default 8).
	Attempts int
	// BaseDelay and MaxDelay bound the exponential backoff between
	// attempts (defaults 1s and 1m); each delay is jittered.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After Fetch waits for (default
	// 10m); a server asking for more is an error.
	MaxRetryAfter time.Duration
	// StallTimeout ends an attempt that receives nothing for this long
	// (default 1m).
	StallTimeout time.Duration
	// Log receives retries and warnings; nil discards them.
	Log *slog.Logger
	// Progress, when set, is called every ProgressEvery (default 1s) and
	// once at the end with Final set.
	Progress      func(Progress)
	ProgressEvery time.Duration

	// sleep and free replace time.Sleep and freeSpace in tests.
	sleep func(context.Context, time.Duration) error
	free  func(dir string) int64
}

// FetchResult says what Fetch did.
type FetchResult struct {
	Manifest     *DataManifest
	ManifestPath string
	// Downloaded counts files fetched (wholly or in part) by this run,
	// Present those that were already complete.
	Downloaded, Present int
	// Bytes is what this run received.
	Bytes   int64
	Elapsed time.Duration
}

func (o *FetchOptions) normalize() error {
	if o.Dataset.Repo == "" || o.Dataset.Prefix == "" {
		return errors.New("fetch: no dataset")
	}
	if o.TrainShards < 0 || o.Dataset.TrainShards > 0 && o.TrainShards > o.Dataset.TrainShards {
		return fmt.Errorf("fetch %s: %d training shards asked for; the dataset has 0 to %d", o.Dataset.Name, o.TrainShards, o.Dataset.TrainShards)
	}
	if o.Dir == "" {
		return errors.New("fetch: no folder to download to")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if u, err := url.Parse(o.Endpoint); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("fetch: endpoint %q is not an http(s) URL: check HF_ENDPOINT", o.Endpoint)
	}
	if o.Revision == "" {
		o.Revision = "main"
	}
	if o.Jobs <= 0 {
		o.Jobs = 4
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: defaultTransport()}
	}
	if o.Attempts <= 0 {
		o.Attempts = 8
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = time.Second
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = time.Minute
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 10 * time.Minute
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.sleep == nil {
		o.sleep = sleepCtx
	}
	if o.free == nil {
		o.free = freeSpace
	}
	return nil
}

func defaultTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return t
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetcher is one run of Fetch.
type fetcher struct {
	o FetchOptions

	done  atomic.Int64 // bytes on disk of the files in the set
	moved atomic.Int64 // bytes received by this run
	files atomic.Int64 // files complete

	mu    sync.Mutex
	sizes map[string]int64 // known total size of each file
}

// Fetch downloads the validation shard and the first TrainShards training
// shards of a dataset into Dir, several files at once. Each file is
// downloaded to <file>.partial and resumed with a Range request when one
// is there; a server that ignores the range is handled by starting over.
// Network errors, 408, 429 and 5xx are retried with exponential backoff
// and jitter (Retry-After is honoured); 401, 403 and 404 are not. A file's
// header is checked as soon as it arrives, and the whole file (header
// against size, and SHA-256 against the hub's X-Linked-Etag when it sends
// one) before it is renamed into place, so Dir never holds a bad shard
// under a shard's name. Files already in place are checked and kept. It
// writes Dir/manifest.json with the SHA-256 of every file. On
// cancellation the .partial files stay, and the next run resumes them.
func Fetch(ctx context.Context, o FetchOptions) (*FetchResult, error) {
	start := time.Now()
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	f := &fetcher{o: o, sizes: map[string]int64{}}
	names := o.Dataset.Files(o.TrainShards)
	snap := func() (Progress, int64) {
		return Progress{Op: "fetch", Done: f.done.Load(), Total: f.total(len(names)), Files: len(names), FilesDone: int(f.files.Load())}, f.moved.Load()
	}
	progCtx, stopProgress := context.WithCancel(ctx)
	var progWG sync.WaitGroup
	progWG.Add(1)
	go func() {
		defer progWG.Done()
		reportProgress(progCtx, o.ProgressEvery, o.Progress, snap)
	}()

	shards := make([]ManifestShard, len(names))
	fresh := make([]bool, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Jobs)
	for i, name := range names {
		g.Go(func() error {
			s, downloaded, err := f.fetchFile(gctx, name)
			if err != nil {
				return err
			}
			shards[i], fresh[i] = s, downloaded
			f.files.Add(1)
			return nil
		})
	}
	err := g.Wait()
	stopProgress()
	progWG.Wait()
	if o.Progress != nil {
		p, moved := snap()
		p.Final, p.Elapsed = true, time.Since(start)
		if s := p.Elapsed.Seconds(); s > 0 {
			p.Rate = float64(moved) / s
		}
		o.Progress(p)
	}
	if err != nil {
		if ctx.Err() != nil {
			partials, _ := filepath.Glob(filepath.Join(o.Dir, "*.partial"))
			return nil, fmt.Errorf("fetch interrupted (%w): %d partial files kept in %s; run the same command again to resume", context.Cause(ctx), len(partials), o.Dir)
		}
		return nil, err
	}
	res := &FetchResult{Bytes: f.moved.Load()}
	for _, d := range fresh {
		if d {
			res.Downloaded++
		} else {
			res.Present++
		}
	}
	res.Manifest = &DataManifest{
		Source:    fmt.Sprintf("hf:%s@%s", o.Dataset.Repo, o.Revision),
		Dataset:   o.Dataset.Name,
		Tokenizer: TokenizerGPT2,
		VocabSize: GPT2VocabSize,
		BOS:       GPT2BOS,
		Train:     o.Dataset.Prefix + "_train_*.bin",
		Val:       names[0],
		Shards:    shards,
	}
	res.ManifestPath, err = WriteManifest(o.Dir, res.Manifest)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", diskErr(err))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// total is the expected size of the whole set: the known sizes, and for
// files not started yet, the mean of the known ones.
func (f *fetcher) total(files int) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sum int64
	for _, s := range f.sizes {
		sum += s
	}
	if len(f.sizes) == 0 {
		return 0
	}
	return sum + sum/int64(len(f.sizes))*int64(files-len(f.sizes))
}

func (f *fetcher) setSize(name string, n int64) {
	f.mu.Lock()
	f.sizes[name] = n
	f.mu.Unlock()
}

func (f *fetcher) fileURL(name string) string {
	return f.o.Endpoint + "/datasets/" + f.o.Dataset.Repo + "/resolve/" + url.PathEscape(f.o.Revision) + "/" + url.PathEscape(name)
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// retryable is an error worth another attempt, with the server's wish.
type retryable struct {
	err        error
	retryAfter time.Duration
	status     int
}

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// fetchFile makes sure name is in place and returns its pin, and whether
// this run downloaded any of it.
func (f *fetcher) fetchFile(ctx context.Context, name string) (ManifestShard, bool, error) {
	final := filepath.Join(f.o.Dir, name)
	if st, err := os.Stat(final); err == nil {
		cerr := CheckShardFile(final, 0)
		if cerr == nil {
			f.setSize(name, st.Size())
			sum, err := HashFile(ctx, final)
			if err != nil {
				return ManifestShard{}, false, err
			}
			f.done.Add(st.Size())
			return ManifestShard{File: name, Tokens: (st.Size() - HeaderBytes) / TokenBytes, SHA256: sum, Bytes: st.Size()}, false, nil
		}
		f.o.Log.Warn("file in place is not a valid shard; downloading it again", "file", final, "problem", cerr)
		if err := os.Remove(final); err != nil {
			return ManifestShard{}, false, fmt.Errorf("fetch %s: %w", name, err)
		}
	}
	u := f.fileURL(name)
	partial := final + ".partial"
	failures := 0
	restarted := false
	for {
		s, progressed, err := f.attempt(ctx, name, u, partial)
		if err == nil {
			return s, true, nil
		}
		if ctx.Err() != nil {
			return ManifestShard{}, false, ctx.Err()
		}
		var pe permanent
		if errors.As(err, &pe) {
			if errors.Is(err, ErrHashMismatch) && !restarted {
				// A resumed partial from another revision of the file:
				// start over once.
				restarted = true
				f.o.Log.Warn("downloaded file does not match the hub's SHA-256; downloading it again from the start", "file", name)
				continue
			}
			return ManifestShard{}, false, pe.err
		}
		if progressed {
			failures = 0
		}
		failures++
		var re retryable
		errors.As(err, &re)
		if failures >= f.o.Attempts {
			return ManifestShard{}, false, &FetchError{File: name, URL: u, Status: re.status, Err: fmt.Errorf("giving up after %d attempts in a row without progress: %w", failures, err), Hint: "check the network and the endpoint, then run the same command again: it resumes"}
		}
		delay := backoff(failures, f.o.BaseDelay, f.o.MaxDelay)
		if re.retryAfter > f.o.MaxRetryAfter {
			return ManifestShard{}, false, &FetchError{File: name, URL: u, Status: re.status, Err: fmt.Errorf("the server asks to retry in %s, longer than the %s this command waits", re.retryAfter, f.o.MaxRetryAfter), Hint: "try again later"}
		}
		delay = max(delay, re.retryAfter)
		f.o.Log.Warn("download failed; retrying", "file", name, "attempt", failures, "of", f.o.Attempts, "in", delay.Round(time.Millisecond), "error", err)
		if err := f.o.sleep(ctx, delay); err != nil {
			return ManifestShard{}, false, err
		}
	}
}

// backoff is the delay before attempt n+1 after n failures: exponential,
// capped, with equal jitter so that parallel downloads do not retry in
// step.
func backoff(n int, base, maxDelay time.Duration) time.Duration {
	d := base << min(n-1, 30)
	if d <= 0 || d > maxDelay {
		d = maxDelay
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 1<<31)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// hubInfo is what the hub says about the file it redirects to: its
// SHA-256 (X-Linked-Etag, for files stored with LFS or Xet) and size.
type hubInfo struct {
	sha256 string
	size   int64
}

func (h *hubInfo) read(hdr http.Header) {
	if e := strings.Trim(strings.TrimPrefix(hdr.Get("X-Linked-Etag"), "W/"), `"`); len(e) == 2*sha256.Size {
		if _, err := hex.DecodeString(e); err == nil {
			h.sha256 = strings.ToLower(e)
		}
	}
	if s, err := strconv.ParseInt(hdr.Get("X-Linked-Size"), 10, 64); err == nil && s >= 0 {
		h.size = s
	}
}

// attempt makes one request for name and appends what it receives to
// partial. It returns the pin when the file is complete and in place;
// progressed says whether any bytes arrived.
func (f *fetcher) attempt(ctx context.Context, name, u, partial string) (ManifestShard, bool, error) {
	fail := func(status int, err error, hint string) error {
		return permanent{&FetchError{File: name, URL: u, Status: status, Err: err, Hint: hint}}
	}
	var off int64
	if st, err := os.Stat(partial); err == nil {
		off = st.Size()
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return ManifestShard{}, false, fail(0, err, "check HF_ENDPOINT")
	}
	req.Header.Set("User-Agent", "frontier")
	if f.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+f.o.Token)
	}
	if off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
	}
	var hub hubInfo
	client := *f.o.Client
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		if r.Response != nil {
			hub.read(r.Response.Header)
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return ManifestShard{}, false, retryable{err: err}
	}
	defer resp.Body.Close()
	hub.read(resp.Header)

	total := int64(-1)
	whole := false // the partial file is already the whole file
	switch st := resp.StatusCode; {
	case st == http.StatusOK:
		if off > 0 {
			f.o.Log.Info("server ignored the range request; downloading the file from the start", "file", name, "had", off)
			off = 0
		}
		total = resp.ContentLength
	case st == http.StatusPartialContent:
		first, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || first != off {
			os.Remove(partial)
			return ManifestShard{}, false, retryable{err: fmt.Errorf("server answered a request from byte %d with Content-Range %q; starting over", off, resp.Header.Get("Content-Range")), status: st}
		}
		total = size
	case st == http.StatusRequestedRangeNotSatisfiable:
		// The partial file may already be whole.
		_, size, _ := parseContentRange(resp.Header.Get("Content-Range"))
		if size != off || off == 0 {
			os.Remove(partial)
			return ManifestShard{}, false, retryable{err: fmt.Errorf("the partial file (%d bytes) does not fit the file on the server (%d bytes); starting over", off, size), status: st}
		}
		total, whole = size, true
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		hint := "this dataset needs a Hugging Face token: set HF_TOKEN to a read token (huggingface.co/settings/tokens)"
		if f.o.Token != "" {
			hint = "the token in HF_TOKEN was refused: check that it is valid and may read " + f.o.Dataset.Repo
		}
		return ManifestShard{}, false, fail(st, ErrUnauthorized, hint)
	case st == http.StatusNotFound:
		return ManifestShard{}, false, fail(st, fmt.Errorf("%w: %s is not in %s at revision %s", ErrNotFound, name, f.o.Dataset.Repo, f.o.Revision), "check the dataset, the revision and the number of training shards (HF_ENDPOINT, if set, must point to a mirror of the hub)")
	case st == http.StatusRequestTimeout || st == http.StatusTooManyRequests || st >= 500:
		return ManifestShard{}, false, retryable{err: fmt.Errorf("HTTP %d %s", st, http.StatusText(st)), retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()), status: st}
	default:
		return ManifestShard{}, false, fail(st, fmt.Errorf("unexpected HTTP status %d %s", st, http.StatusText(st)), "")
	}
	if total < 0 && hub.size > 0 {
		total = hub.size
	}
	if total >= 0 {
		f.setSize(name, total)
		if free := f.o.free(f.o.Dir); free >= 0 && free < total-off {
			return ManifestShard{}, false, fail(0, fmt.Errorf("%w: %d bytes to write, %d free in %s", ErrDiskFull, total-off, free, f.o.Dir), "free some space or choose another --dir; the partial file is kept and the next run resumes it")
		}
	}

	flags := os.O_CREATE | os.O_RDWR
	if off == 0 {
		flags |= os.O_TRUNC
	}
	file, err := os.OpenFile(partial, flags, 0o644)
	if err != nil {
		return ManifestShard{}, false, fail(0, diskErr(err), "")
	}
	defer file.Close()
	h := sha256.New()
	if off > 0 {
		// The hash covers the whole file: what was there, then what comes.
		if _, err := io.Copy(h, io.NewSectionReader(file, 0, off)); err != nil {
			return ManifestShard{}, false, fail(0, err, "")
		}
		f.done.Add(off)
	}
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return ManifestShard{}, false, fail(0, err, "")
	}
	var got int64
	if !whole {
		got, err = f.receive(actx, cancel, resp.Body, file, h, name, off, total)
	}
	progressed := got > 0
	if err != nil {
		f.done.Add(-(off + got))
		if ctx.Err() != nil {
			return ManifestShard{}, progressed, ctx.Err()
		}
		var se *ShardError
		if errors.As(err, &se) || errors.Is(err, ErrDiskFull) {
			if se != nil {
				file.Close()
				os.Remove(partial)
			}
			return ManifestShard{}, progressed, fail(0, err, "")
		}
		return ManifestShard{}, progressed, retryable{err: err, status: resp.StatusCode}
	}
	size := off + got
	if total >= 0 && size < total {
		f.done.Add(-size)
		return ManifestShard{}, progressed, retryable{err: fmt.Errorf("connection closed after %d of %d bytes", size, total), status: resp.StatusCode}
	}
	if err := file.Sync(); err != nil {
		return ManifestShard{}, progressed, fail(0, diskErr(err), "")
	}
	if err := file.Close(); err != nil {
		return ManifestShard{}, progressed, fail(0, diskErr(err), "")
	}
	// The whole file: header against size, then against the hub's hash.
	if err := CheckShardFile(partial, 0); err != nil {
		os.Remove(partial)
		f.done.Add(-size)
		return ManifestShard{}, progressed, fail(0, fmt.Errorf("the downloaded file is not a valid shard, so it was deleted: %w", err), "")
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if hub.sha256 != "" && sum != hub.sha256 {
		os.Remove(partial)
		f.done.Add(-size)
		return ManifestShard{}, progressed, fail(0, fmt.Errorf("%w: the hub's SHA-256 is %s, the downloaded file's %s; it was deleted", ErrHashMismatch, hub.sha256, sum), "")
	}
	final := strings.TrimSuffix(partial, ".partial")
	if err := os.Rename(partial, final); err != nil {
		return ManifestShard{}, progressed, fail(0, err, "")
	}
	syncDir(f.o.Dir)
	return ManifestShard{File: name, Tokens: (size - HeaderBytes) / TokenBytes, SHA256: sum, Bytes: size}, progressed, nil
}

// receive copies body to file and into h, and returns how many bytes it
// wrote. It checks the shard's header as soon as the first HeaderBytes of
// the file are there, and cancels the request when nothing arrives for
// the stall timeout.
func (f *fetcher) receive(ctx context.Context, cancel context.CancelCauseFunc, body io.Reader, file *os.File, h hash.Hash, name string, off, total int64) (int64, error) {
	errStalled := fmt.Errorf("no data for %s", f.o.StallTimeout)
	stall := time.AfterFunc(f.o.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	buf := make([]byte, 256<<10)
	var got int64
	headerChecked := off >= HeaderBytes
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			stall.Reset(f.o.StallTimeout)
			if _, err := file.Write(buf[:n]); err != nil {
				return got, fmt.Errorf("write %s: %w", file.Name(), diskErr(err))
			}
			h.Write(buf[:n])
			got += int64(n)
			f.done.Add(int64(n))
			f.moved.Add(int64(n))
			if !headerChecked && off+got >= HeaderBytes {
				headerChecked = true
				if err := checkHeaderAt(file, name, total); err != nil {
					return got, err
				}
			}
		}
		if rerr == io.EOF {
			// A file too short for a header fails the whole-file check.
			return got, nil
		}
		if rerr != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
				return got, errStalled
			}
			return got, rerr
		}
	}
}

// checkHeaderAt reads the header of the file being written and checks it
// against the file's final size when known: a file that is not a shard is
// rejected without downloading the rest.
func checkHeaderAt(file *os.File, name string, total int64) error {
	hb := make([]byte, HeaderBytes)
	if _, err := file.ReadAt(hb, 0); err != nil {
		return err
	}
	hdr, _ := DecodeHeader(hb)
	return hdr.Check(name, total)
}

// parseContentRange parses "bytes first-last/size" or "bytes */size"; size
// is -1 when the server does not know it.
func parseContentRange(s string) (first, size int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		n, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		size = n
	}
	if rng == "*" {
		return 0, size, true
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first < 0 {
		return 0, 0, false
	}
	return first, size, true
}
