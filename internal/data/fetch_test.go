package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// behaviour is what the fake hub does for one request of a file.
type behaviour struct {
	status     int    // answer with this status and no body
	retryAfter string // Retry-After header with status
	cutAt      int64  // close the connection once the file's first cutAt bytes are sent
	stall      bool   // after cutAt bytes, send nothing until the client gives up
}

type seenRequest struct {
	path, rng, auth string
}

// fakeHub serves files as the Hugging Face hub does: /datasets/<repo>/
// resolve/<rev>/<file>, optionally through a redirect that carries
// X-Linked-Etag and X-Linked-Size, with Range support.
type fakeHub struct {
	repo        string
	files       map[string][]byte
	token       string            // a request without "Bearer <token>" gets 401
	redirect    bool              // resolve answers 302 to /cdn/<file>
	etag        map[string]string // X-Linked-Etag to send instead of the true SHA-256
	ignoreRange bool

	mu       sync.Mutex
	script   map[string][]behaviour
	requests []seenRequest
}

func newFakeHub(t *testing.T, files map[string][]byte) (*fakeHub, *httptest.Server) {
	h := &fakeHub{repo: "someone/fineweb-test", files: files, script: map[string][]behaviour{}, etag: map[string]string{}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) then(file string, b ...behaviour) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.script[file] = append(h.script[file], b...)
}

func (h *fakeHub) seen() []seenRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]seenRequest(nil), h.requests...)
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, seenRequest{r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
	h.mu.Unlock()
	prefix := "/datasets/" + h.repo + "/resolve/main/"
	var name string
	switch {
	case strings.HasPrefix(r.URL.Path, prefix):
		name = strings.TrimPrefix(r.URL.Path, prefix)
		if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if data, ok := h.files[name]; ok && h.redirect {
			sum := sha256.Sum256(data)
			etag := hex.EncodeToString(sum[:])
			if e, ok := h.etag[name]; ok {
				etag = e
			}
			w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
			http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
			return
		}
	case h.redirect && strings.HasPrefix(r.URL.Path, "/cdn/"):
		name = strings.TrimPrefix(r.URL.Path, "/cdn/")
	default:
		http.NotFound(w, r)
		return
	}
	data, ok := h.files[name]
	if !ok {
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	var b behaviour
	h.mu.Lock()
	if q := h.script[name]; len(q) > 0 {
		b, h.script[name] = q[0], q[1:]
	}
	h.mu.Unlock()
	if b.status != 0 {
		if b.retryAfter != "" {
			w.Header().Set("Retry-After", b.retryAfter)
		}
		http.Error(w, http.StatusText(b.status), b.status)
		return
	}
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" && !h.ignoreRange {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		if err != nil {
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		if n >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(data)-1, len(data)))
		w.Header().Set("Content-Length", strconv.FormatInt(int64(len(data))-n, 10))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
	}
	end := int64(len(data))
	if b.cutAt > 0 {
		end = max(start, min(end, b.cutAt))
	}
	w.Write(data[start:end])
	if b.cutAt > 0 {
		w.(http.Flusher).Flush()
		if b.stall {
			<-r.Context().Done()
		}
		panic(http.ErrAbortHandler)
	}
}

// testShard is a valid shard of n random tokens.
func testShard(t testing.TB, seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	toks := make([]uint16, n)
	for i := range toks {
		toks[i] = uint16(rng.IntN(GPT2VocabSize))
	}
	b, err := EncodeShard(toks)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var testDataset = Dataset{Name: "fineweb-test", Repo: "someone/fineweb-test", Prefix: "fineweb", TrainShards: 5}

// testFiles are a validation shard and five training shards.
func testFiles(t testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for i, name := range testDataset.Files(5) {
		files[name] = testShard(t, uint64(i), 20000+1000*i)
	}
	return files
}

// sleeps records the delays Fetch asked for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func fetchOpts(srv *httptest.Server, dir string, train int, sl *sleeps) FetchOptions {
	return FetchOptions{Dataset: testDataset, TrainShards: train, Dir: dir, Endpoint: srv.URL + "/", Jobs: 2, BaseDelay: time.Millisecond, StallTimeout: 5 * time.Second, sleep: sl.sleep}
}

// checkFetched checks that dir holds exactly the wanted files with the
// hub's bytes, no partial files, and a manifest that pins them.
func checkFetched(t *testing.T, dir string, files map[string][]byte, res *FetchResult, names []string) {
	t.Helper()
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s: content differs (%d bytes, want %d)", name, len(got), len(files[name]))
		}
	}
	if p, _ := filepath.Glob(filepath.Join(dir, "*.partial")); len(p) > 0 {
		t.Errorf("partial files left: %v", p)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != len(names) || len(res.Manifest.Shards) != len(names) {
		t.Fatalf("manifest lists %d shards, want %d", len(m.Shards), len(names))
	}
	for i, s := range m.Shards {
		sum := sha256.Sum256(files[names[i]])
		if s.File != names[i] || s.SHA256 != hex.EncodeToString(sum[:]) || s.Bytes != int64(len(files[names[i]])) || s.Tokens != (s.Bytes-HeaderBytes)/2 {
			t.Errorf("manifest entry %d: %+v", i, s)
		}
	}
	if _, err := Verify(context.Background(), dir, m.Pins(), GPT2VocabSize); err != nil {
		t.Errorf("verify against the manifest: %v", err)
	}
}

func TestFetchFull(t *testing.T) {
	for _, redirect := range []bool{false, true} {
		t.Run(fmt.Sprint("redirect=", redirect), func(t *testing.T) {
			files := testFiles(t)
			hub, srv := newFakeHub(t, files)
			hub.redirect = redirect
			dir := filepath.Join(t.TempDir(), "fineweb10B")
			var sl sleeps
			o := fetchOpts(srv, dir, 3, &sl)
			var last Progress
			o.Progress = func(p Progress) { last = p }
			o.ProgressEvery = time.Millisecond
			res, err := Fetch(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			names := testDataset.Files(3)
			checkFetched(t, dir, files, res, names)
			if res.Downloaded != 4 || res.Present != 0 || len(sl.all()) != 0 {
				t.Errorf("downloaded %d present %d sleeps %v", res.Downloaded, res.Present, sl.all())
			}
			var total int64
			for _, n := range names {
				total += int64(len(files[n]))
			}
			if !last.Final || last.Done != total || last.Total != total || last.FilesDone != 4 || res.Bytes != total {
				t.Errorf("final progress %+v, result bytes %d, want %d", last, res.Bytes, total)
			}
			y := res.Manifest.YAML()
			if !strings.Contains(y, "val: fineweb_val_000000.bin") || !strings.Contains(y, "train: fineweb_train_*.bin") || strings.Count(y, "sha256:") != 4 {
				t.Errorf("YAML:\n%s", y)
			}
			if res.Manifest.Source != "hf:someone/fineweb-test@main" {
				t.Errorf("source %q", res.Manifest.Source)
			}

			// A second run finds everything in place and downloads nothing.
			before := len(hub.seen())
			res, err = Fetch(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Present != 4 || res.Downloaded != 0 || len(hub.seen()) != before {
				t.Errorf("second run: present %d downloaded %d, %d new requests", res.Present, res.Downloaded, len(hub.seen())-before)
			}
			checkFetched(t, dir, files, res, names)
		})
	}
}

func TestFetchResumesTruncatedTransfer(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.then("fineweb_val_000000.bin", behaviour{cutAt: 3000}, behaviour{cutAt: 9000})
	dir := t.TempDir()
	var sl sleeps
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sl))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	var ranges []string
	for _, r := range hub.seen() {
		ranges = append(ranges, r.rng)
	}
	if want := []string{"", "bytes=3000-", "bytes=9000-"}; strings.Join(ranges, ",") != strings.Join(want, ",") {
		t.Errorf("ranges %q, want %q", ranges, want)
	}
	if len(sl.all()) != 2 {
		t.Errorf("sleeps %v", sl.all())
	}
}

func TestFetchResumesPartialFileFromEarlierRun(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.redirect = true
	dir := t.TempDir()
	name := "fineweb_train_000001.bin"
	writeFile(t, filepath.Join(dir, name+".partial"), files[name][:5000])
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 1, &sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(1))
	found := false
	for _, r := range hub.seen() {
		if strings.HasSuffix(r.path, name) && r.rng == "bytes=5000-" {
			found = true
		}
	}
	if !found {
		t.Errorf("no range request for %s: %v", name, hub.seen())
	}
}

func TestFetchPartialAlreadyWhole(t *testing.T) {
	files := testFiles(t)
	_, srv := newFakeHub(t, files)
	dir := t.TempDir()
	name := "fineweb_val_000000.bin"
	writeFile(t, filepath.Join(dir, name+".partial"), files[name])
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
}

func TestFetchServerIgnoresRange(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.ignoreRange = true
	dir := t.TempDir()
	name := "fineweb_val_000000.bin"
	// Bytes that are not the file's: they must not survive the restart.
	writeFile(t, filepath.Join(dir, name+".partial"), bytes.Repeat([]byte{0xAB}, 7000))
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	if r := hub.seen(); len(r) != 1 || r[0].rng != "bytes=7000-" {
		t.Errorf("requests %v", r)
	}
}

func TestFetchNotFound(t *testing.T) {
	files := testFiles(t)
	delete(files, "fineweb_train_000002.bin")
	hub, srv := newFakeHub(t, files)
	dir := t.TempDir()
	_, err := Fetch(context.Background(), fetchOpts(srv, dir, 2, &sleeps{}))
	var fe *FetchError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &fe) || fe.Status != 404 {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"fineweb_train_000002.bin", srv.URL + "/datasets/someone/fineweb-test/resolve/main/fineweb_train_000002.bin", "HTTP 404", "revision main"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	n := 0
	for _, r := range hub.seen() {
		if strings.HasSuffix(r.path, "000002.bin") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d requests for the missing file; a 404 is not retried", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "fineweb_train_000002.bin")); err == nil {
		t.Error("missing file exists")
	}
}

func TestFetchRetries5xxAndHonoursRetryAfter(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.then("fineweb_val_000000.bin", behaviour{status: 500}, behaviour{status: 503}, behaviour{status: 429, retryAfter: "7"})
	dir := t.TempDir()
	var sl sleeps
	var logs bytes.Buffer
	o := fetchOpts(srv, dir, 0, &sl)
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := Fetch(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	d := sl.all()
	if len(d) != 3 || d[2] < 7*time.Second || d[0] > time.Millisecond || d[1] > 2*time.Millisecond {
		t.Errorf("delays %v: want two short backoffs, then the 7s Retry-After", d)
	}
	if strings.Count(logs.String(), "retrying") != 3 || !strings.Contains(logs.String(), "HTTP 429") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

func TestFetchGivesUp(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	for range 10 {
		hub.then("fineweb_val_000000.bin", behaviour{status: 502})
	}
	o := fetchOpts(srv, t.TempDir(), 0, &sleeps{})
	o.Attempts = 3
	_, err := Fetch(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || !strings.Contains(err.Error(), "HTTP 502") {
		t.Fatalf("error %v", err)
	}
	hub2, srv2 := newFakeHub(t, files)
	hub2.then("fineweb_val_000000.bin", behaviour{status: 429, retryAfter: time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)})
	_, err = Fetch(context.Background(), fetchOpts(srv2, t.TempDir(), 0, &sleeps{}))
	if err == nil || !strings.Contains(err.Error(), "asks to retry in") {
		t.Fatalf("error %v", err)
	}
}

func TestFetchRejectsBadShard(t *testing.T) {
	good := testFiles(t)
	badMagic := bytes.Clone(good["fineweb_val_000000.bin"])
	badMagic[0] ^= 0xFF
	trailing := append(bytes.Clone(good["fineweb_val_000000.bin"]), 0, 0)
	short, _ := EncodeHeader(100)
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"wrong magic", badMagic, ErrBadMagic},
		{"size does not match header", trailing, ErrTrailingBytes},
		{"header only", short, ErrTruncated},
		{"html page", []byte("<html>" + strings.Repeat("x", 2000) + "</html>"), ErrBadMagic},
		{"tiny file", []byte("oops"), ErrShortFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := testFiles(t)
			files["fineweb_val_000000.bin"] = c.data
			_, srv := newFakeHub(t, files)
			dir := t.TempDir()
			var sl sleeps
			_, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sl))
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), "fineweb_val_000000.bin") {
				t.Errorf("error does not name the file: %v", err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "fineweb_val*")); len(left) > 0 {
				t.Errorf("left in place: %v", left)
			}
			if len(sl.all()) != 0 {
				t.Errorf("a bad shard was retried: %v", sl.all())
			}
		})
	}
}

func TestFetchHashMismatch(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.redirect = true
	hub.etag["fineweb_val_000000.bin"] = strings.Repeat("ab", 32)
	dir := t.TempDir()
	_, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("error %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "fineweb_val*")); len(left) > 0 {
		t.Errorf("left in place: %v", left)
	}
}

func TestFetchToken(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.token = "hf_secret123"
	hub.then("fineweb_val_000000.bin", behaviour{status: 500})
	dir := t.TempDir()

	_, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "set HF_TOKEN") {
		t.Fatalf("without a token: %v", err)
	}
	o := fetchOpts(srv, dir, 0, &sleeps{})
	o.Token = "hf_wrong"
	_, err = Fetch(context.Background(), o)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "was refused") || strings.Contains(err.Error(), "hf_wrong") {
		t.Fatalf("with a wrong token: %v", err)
	}

	var logs bytes.Buffer
	o.Token = "hf_secret123"
	o.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := Fetch(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	r := hub.seen()
	if last := r[len(r)-1]; last.auth != "Bearer hf_secret123" {
		t.Errorf("Authorization %q", last.auth)
	}
	if !strings.Contains(logs.String(), "retrying") || strings.Contains(logs.String(), "secret") {
		t.Errorf("logs:\n%s", logs.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if strings.Contains(string(b), "secret") {
		t.Error("the token is in the manifest")
	}
}

func TestFetchCancelKeepsPartial(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	name := "fineweb_val_000000.bin"
	hub.then(name, behaviour{cutAt: 6000, stall: true})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel, as Ctrl-C would, once the first bytes are on disk.
		for range 2000 {
			if st, err := os.Stat(filepath.Join(dir, name+".partial")); err == nil && st.Size() >= 6000 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Fetch(ctx, fetchOpts(srv, dir, 0, &sleeps{}))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 partial files kept") || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("error %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, name+".partial"))
	if err != nil || st.Size() != 6000 {
		t.Fatalf("partial file: %v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
		t.Fatal("an incomplete file is in place")
	}
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	if r := hub.seen(); r[len(r)-1].rng != "bytes=6000-" {
		t.Errorf("resumed with %q", r[len(r)-1].rng)
	}
}

func TestFetchStalledTransferIsRetried(t *testing.T) {
	files := testFiles(t)
	hub, srv := newFakeHub(t, files)
	hub.then("fineweb_val_000000.bin", behaviour{cutAt: 4000, stall: true})
	dir := t.TempDir()
	var sl sleeps
	o := fetchOpts(srv, dir, 0, &sl)
	o.StallTimeout = 200 * time.Millisecond
	res, err := Fetch(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	if r := hub.seen(); len(r) != 2 || r[1].rng != "bytes=4000-" {
		t.Errorf("requests %v", r)
	}
}

func TestFetchDiskFull(t *testing.T) {
	files := testFiles(t)
	_, srv := newFakeHub(t, files)
	dir := t.TempDir()
	var sl sleeps
	o := fetchOpts(srv, dir, 0, &sl)
	o.free = func(string) int64 { return 1000 }
	_, err := Fetch(context.Background(), o)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "1000 free") || len(sl.all()) != 0 {
		t.Fatalf("error %v, sleeps %v", err, sl.all())
	}
	if got := diskErr(fmt.Errorf("write: %w", os.ErrClosed)); errors.Is(got, ErrDiskFull) {
		t.Error("diskErr misclassifies")
	}
}

func TestFetchReplacesBadFileInPlace(t *testing.T) {
	files := testFiles(t)
	_, srv := newFakeHub(t, files)
	dir := t.TempDir()
	name := "fineweb_val_000000.bin"
	writeFile(t, filepath.Join(dir, name), files[name][:len(files[name])-10])
	res, err := Fetch(context.Background(), fetchOpts(srv, dir, 0, &sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, dir, files, res, testDataset.Files(0))
	if res.Downloaded != 1 {
		t.Errorf("downloaded %d", res.Downloaded)
	}
}

func TestFetchOptionErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		o    FetchOptions
		want string
	}{
		{FetchOptions{Dataset: testDataset, TrainShards: 6, Dir: "x"}, "0 to 5"},
		{FetchOptions{Dataset: testDataset, TrainShards: -1, Dir: "x"}, "0 to 5"},
		{FetchOptions{Dataset: testDataset, Dir: "x", Endpoint: "ftp://x"}, "HF_ENDPOINT"},
		{FetchOptions{Dataset: testDataset}, "no folder"},
	} {
		if _, err := Fetch(ctx, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := LookupDataset("fineweb1T"); err == nil || !strings.Contains(err.Error(), "fineweb10B, finewebedu10B") {
		t.Errorf("LookupDataset: %v", err)
	}
	d, err := LookupDataset("finewebedu10B")
	if err != nil || d.Repo != "kjj0/finewebedu10B-gpt2" || d.Files(2)[2] != "finewebedu_train_000002.bin" || d.Files(0)[0] != "finewebedu_val_000000.bin" {
		t.Errorf("finewebedu10B: %+v %v", d, err)
	}
}

func TestParseHelpers(t *testing.T) {
	for _, c := range []struct {
		in          string
		first, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes */200", 0, 200, true},
		{"bytes 5-9/*", 5, -1, true},
		{"items 1-2/3", 0, 0, false},
		{"bytes x-1/2", 0, 0, false},
	} {
		first, size, ok := parseContentRange(c.in)
		if first != c.first || size != c.size || ok != c.ok {
			t.Errorf("parseContentRange(%q) = %d %d %v", c.in, first, size, ok)
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := retryAfter("120", now); d != 2*time.Minute {
		t.Errorf("retryAfter seconds: %v", d)
	}
	if d := retryAfter(now.Add(30*time.Second).Format(http.TimeFormat), now); d != 30*time.Second {
		t.Errorf("retryAfter date: %v", d)
	}
	if d := retryAfter("soon", now); d != 0 {
		t.Errorf("retryAfter junk: %v", d)
	}
	for n := 1; n < 40; n++ {
		d := backoff(n, time.Second, time.Minute)
		want := min(time.Second<<min(n-1, 30), time.Minute)
		if d < want/2 || d > want {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", n, d, want/2, want)
		}
	}
}
