package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// TextSplit says where the documents of a .txt input begin and end.
type TextSplit string

// How .txt inputs are cut into documents.
const (
	// SplitFile makes each .txt file one document, its bytes verbatim.
	SplitFile TextSplit = "file"
	// SplitBlank makes each run of non-blank lines one document; blank
	// lines (empty, or only spaces, tabs, CR, VT, FF) separate documents
	// and are dropped, as is the line ending after a document's last line.
	SplitBlank TextSplit = "blank"
	// SplitLine makes each non-empty line one document, without its line
	// ending.
	SplitLine TextSplit = "line"
)

// ParseTextSplit checks a --txt-split value.
func ParseTextSplit(s string) (TextSplit, error) {
	switch t := TextSplit(s); t {
	case SplitFile, SplitBlank, SplitLine:
		return t, nil
	}
	return "", fmt.Errorf("unknown .txt split %q: use %q (one document per file), %q (documents separated by blank lines) or %q (one document per line)", s, SplitFile, SplitBlank, SplitLine)
}

// inputKind is the format of an input file, from its name.
type inputKind int

const (
	kindUnknown inputKind = iota
	kindTxt
	kindJSONL
)

// kindOf returns the format of name and whether it is gzip-compressed.
func kindOf(name string) (inputKind, bool) {
	lower := strings.ToLower(name)
	gz := strings.HasSuffix(lower, ".gz")
	lower = strings.TrimSuffix(lower, ".gz")
	switch {
	case strings.HasSuffix(lower, ".txt"):
		return kindTxt, gz
	case strings.HasSuffix(lower, ".jsonl"):
		return kindJSONL, gz
	}
	return kindUnknown, gz
}

// ExpandInputs turns the --input arguments into the list of files to
// read, in order: a file stands for itself (whatever its name, so that a
// bad name is reported by Prepare), a folder for every .txt, .jsonl,
// .txt.gz and .jsonl.gz file under it in lexical order, and a pattern with
// *, ? or [ that names no file for the files it matches, sorted. A file
// named twice is read once, where it first appears.
func ExpandInputs(args []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if key := filepath.Clean(p); !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	for _, arg := range args {
		if arg == "" {
			continue
		}
		var paths []string
		if _, err := os.Stat(arg); err != nil && strings.ContainsAny(arg, "*?[") {
			m, err := filepath.Glob(arg)
			if err != nil {
				return nil, fmt.Errorf("input pattern %q: %w", arg, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("input pattern %q matches no file", arg)
			}
			slices.Sort(m)
			paths = m
		} else {
			paths = []string{arg}
		}
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("input %s: no such file or folder", p)
				}
				return nil, fmt.Errorf("input %s: %w", p, err)
			}
			if !st.IsDir() {
				add(p)
				continue
			}
			n := len(out)
			err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if k, _ := kindOf(d.Name()); !d.IsDir() && k != kindUnknown {
					add(path)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("input folder %s: %w", p, err)
			}
			if len(out) == n {
				return nil, fmt.Errorf("input folder %s holds no .txt, .jsonl, .txt.gz or .jsonl.gz file", p)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no input files: name .txt or .jsonl files (or .gz of either), folders of them, or patterns")
	}
	return out, nil
}

// checkInputs makes sure every input can be opened and has a known format
// before any output is written.
func checkInputs(paths []string) error {
	var errs []error
	for _, p := range paths {
		if k, _ := kindOf(p); k == kindUnknown {
			errs = append(errs, fmt.Errorf("input %s: unknown format: name it .txt (text) or .jsonl (one JSON object with a text field per line), optionally with .gz", p))
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = errors.New("no such file")
			}
			errs = append(errs, fmt.Errorf("input %s: %w", p, err))
			continue
		}
		st, err := f.Stat()
		f.Close()
		if err == nil && st.IsDir() {
			err = errors.New("is a folder (pass it to ExpandInputs)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("input %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// InputError is a problem with one place in an input file.
type InputError struct {
	File string
	// Line is 1-based; 0 when the problem is with the whole file.
	Line int64
	Err  error
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// ErrInvalidUTF8 is what an input with invalid UTF-8 fails with under
// strict UTF-8 checking.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// docSink receives documents as a sequence of begin, write..., end; the
// bytes written are valid UTF-8.
type docSink interface {
	begin() error
	write(p []byte) error
	end() error
}

// readerOptions are what the format readers need from PrepareOptions.
type readerOptions struct {
	split      TextSplit
	textField  string
	strictUTF8 bool
	maxRecord  int
}

// utf8Fixer makes a stream of chunks valid UTF-8: a rune cut between two
// chunks is carried over, and invalid bytes are replaced by U+FFFD (each
// run of them by one) or, when strict, reported with their line.
type utf8Fixer struct {
	strict   bool
	line     int64 // line of the next byte, 1-based
	carry    []byte
	joined   []byte
	fixed    []byte
	replaced int64 // runs of invalid bytes replaced
}

// fix returns p (after what was carried) as valid UTF-8, holding back an
// incomplete rune at the end unless final. The result is valid until the
// next call.
func (u *utf8Fixer) fix(p []byte, final bool) ([]byte, error) {
	if u.line == 0 {
		u.line = 1
	}
	if len(u.carry) > 0 {
		u.joined = append(append(u.joined[:0], u.carry...), p...)
		u.carry = u.carry[:0]
		p = u.joined
	}
	if !final {
		// Hold back a rune whose bytes are not all here yet.
		for k := 1; k < utf8.UTFMax && k <= len(p); k++ {
			c := p[len(p)-k]
			if c < utf8.RuneSelf {
				break
			}
			if utf8.RuneStart(c) {
				if !utf8.FullRune(p[len(p)-k:]) {
					u.carry = append(u.carry, p[len(p)-k:]...)
					p = p[:len(p)-k]
				}
				break
			}
		}
	}
	line := u.line
	u.line += int64(bytes.Count(p, []byte{'\n'}))
	if utf8.Valid(p) {
		return p, nil
	}
	fixed := u.fixed[:0]
	invalid := false
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			if u.strict {
				return nil, &InputError{Line: line + int64(bytes.Count(p[:i], []byte{'\n'})), Err: fmt.Errorf("%w (byte %#02x): convert the file to UTF-8, or leave out --strict-utf8 to replace invalid bytes with U+FFFD", ErrInvalidUTF8, p[i])}
			}
			if !invalid {
				fixed = append(fixed, "\uFFFD"...)
				u.replaced++
			}
			invalid = true
			i++
			continue
		}
		invalid = false
		fixed = append(fixed, p[i:i+size]...)
		i += size
	}
	u.fixed = fixed
	return fixed, nil
}

// named fills in the file of an *InputError that lacks one.
func named(name string, err error) error {
	var ie *InputError
	if errors.As(err, &ie) && ie.File == "" {
		ie.File = name
	}
	return err
}

// readInput reads one input file into sink according to its format, and
// returns how many runs of invalid UTF-8 it replaced.
func readInput(name string, r io.Reader, kind inputKind, o readerOptions, sink docSink) (int64, error) {
	fx := &utf8Fixer{strict: o.strictUTF8}
	var err error
	switch {
	case kind == kindJSONL:
		err = readJSONL(r, o, sink)
	case o.split == SplitFile:
		err = readTxtFile(r, fx, sink)
	default:
		err = readTxtLines(r, fx, o.split, sink)
	}
	return fx.replaced, named(name, err)
}

// readTxtFile makes the whole file one document.
func readTxtFile(r io.Reader, fx *utf8Fixer, sink docSink) error {
	buf := make([]byte, 1<<20)
	if err := sink.begin(); err != nil {
		return err
	}
	for {
		n, rerr := io.ReadFull(r, buf)
		final := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !final {
			return &InputError{Line: fx.line, Err: rerr}
		}
		p, err := fx.fix(buf[:n], final)
		if err != nil {
			return err
		}
		if err := sink.write(p); err != nil {
			return err
		}
		if final {
			return sink.end()
		}
	}
}

// isBlank reports whether a line (without its ending) is blank.
func isBlank(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// maxLineChunk is the most of one line handed on at a time: longer lines
// come in several chunks, so no line is ever held whole.
const maxLineChunk = 1 << 20

// lineChunks calls fn with each line of r, or each chunk of a line longer
// than maxLineChunk: text is valid UTF-8 without the line ending, eol is
// "\n" or "\r\n" on the chunk that ends a line (nil otherwise, also for a
// last line without an ending).
func lineChunks(r io.Reader, fx *utf8Fixer, fn func(text, eol []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var acc []byte
	for {
		chunk, rerr := br.ReadSlice('\n')
		if rerr != nil && rerr != bufio.ErrBufferFull && rerr != io.EOF {
			return &InputError{Line: fx.line, Err: rerr}
		}
		acc = append(acc, chunk...)
		complete := len(acc) > 0 && acc[len(acc)-1] == '\n'
		final := rerr == io.EOF
		if !complete && !final && len(acc) < maxLineChunk {
			continue
		}
		var hold []byte
		if !complete && !final && acc[len(acc)-1] == '\r' {
			// It may be the first half of "\r\n".
			acc, hold = acc[:len(acc)-1], []byte{'\r'}
		}
		p, err := fx.fix(acc, complete || final)
		if err != nil {
			return err
		}
		var eol []byte
		if complete {
			p, eol = p[:len(p)-1], []byte{'\n'}
			if len(p) > 0 && p[len(p)-1] == '\r' {
				p, eol = p[:len(p)-1], []byte{'\r', '\n'}
			}
		}
		if len(p) > 0 || eol != nil {
			if err := fn(p, eol); err != nil {
				return err
			}
		}
		acc = append(acc[:0], hold...)
		if final {
			return nil
		}
	}
}

// readTxtLines cuts a .txt file into documents by lines (SplitLine) or by
// blank lines (SplitBlank).
func readTxtLines(r io.Reader, fx *utf8Fixer, split TextSplit, sink docSink) error {
	inDoc := false
	if split == SplitLine {
		err := lineChunks(r, fx, func(text, eol []byte) error {
			if len(text) > 0 && !inDoc {
				if err := sink.begin(); err != nil {
					return err
				}
				inDoc = true
			}
			if len(text) > 0 {
				if err := sink.write(text); err != nil {
					return err
				}
			}
			if eol != nil && inDoc {
				inDoc = false
				return sink.end()
			}
			return nil
		})
		if err == nil && inDoc {
			err = sink.end()
		}
		return err
	}
	// Whether a line is blank is known only once it shows a character
	// that is not blank, or ends; until then its blank prefix is held.
	atLineStart := true
	lineText := false // the current line is part of a document
	var held []byte   // the blank prefix of the current line
	var eol []byte    // the ending of the document's last line, written if another line joins it
	err := lineChunks(r, fx, func(text, end []byte) error {
		if atLineStart {
			lineText, held = false, held[:0]
		}
		switch {
		case lineText:
			if err := sink.write(text); err != nil {
				return err
			}
		case isBlank(text) && len(held) < maxLineChunk:
			held = append(held, text...)
		default:
			lineText = true
			if !inDoc {
				if err := sink.begin(); err != nil {
					return err
				}
				inDoc = true
			} else if err := sink.write(eol); err != nil {
				return err
			}
			if err := sink.write(held); err != nil {
				return err
			}
			if err := sink.write(text); err != nil {
				return err
			}
		}
		atLineStart = end != nil
		if end == nil {
			return nil
		}
		if lineText {
			eol = append(eol[:0], end...)
		} else if inDoc {
			inDoc = false
			return sink.end()
		}
		return nil
	})
	if err == nil && inDoc {
		err = sink.end()
	}
	return err
}

// readJSONL reads one JSON object per line and makes its text field a
// document. Blank lines are skipped; a line that is not an object with a
// string text field is an error naming the file and line.
func readJSONL(r io.Reader, o readerOptions, sink docSink) error {
	dec := newTextDecoder(o.textField)
	br := bufio.NewReaderSize(r, 1<<16)
	var rec []byte
	line := int64(0)
	for {
		rec = rec[:0]
		var rerr error
		for {
			chunk, err := br.ReadSlice('\n')
			rec = append(rec, chunk...)
			if len(rec) > o.maxRecord {
				return &InputError{Line: line + 1, Err: fmt.Errorf("line longer than %d bytes: split the record or raise the limit", o.maxRecord)}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			rerr = err
			break
		}
		if rerr != nil && rerr != io.EOF {
			return &InputError{Line: line + 1, Err: rerr}
		}
		if len(rec) > 0 {
			line++
			if !isBlank(bytes.TrimSuffix(rec, []byte{'\n'})) {
				text, err := dec.text(rec)
				if err != nil {
					return &InputError{Line: line, Err: err}
				}
				if err := sink.begin(); err != nil {
					return err
				}
				if err := sink.write(text); err != nil {
					return err
				}
				if err := sink.end(); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// textDecoder takes the text field out of JSON records. Decoding into a
// struct whose only field is the text is two passes over a record (check,
// then decode); a map of raw messages would take four. The struct type is
// built at run time because the field's name is an option.
type textDecoder struct {
	field string
	typ   reflect.Type
}

func newTextDecoder(field string) *textDecoder {
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "Text",
		Type: reflect.TypeFor[*string](),
		Tag:  reflect.StructTag(`json:"` + strings.ReplaceAll(field, `"`, `\"`) + `"`),
	}})
	return &textDecoder{field: field, typ: typ}
}

// text returns the record's text. encoding/json also matches keys that
// differ from the field's name in case, so the fast result is taken only
// when the record spells the key exactly and no other way; anything else
// goes the slow, exact way, which also explains what is wrong.
func (d *textDecoder) text(rec []byte) ([]byte, error) {
	v := reflect.New(d.typ)
	if err := json.Unmarshal(rec, v.Interface()); err == nil {
		if p := v.Elem().Field(0).Interface().(*string); p != nil && onlyExactKey(rec, d.field) {
			return []byte(*p), nil
		}
	}
	return jsonText(rec, d.field)
}

// onlyExactKey reports whether rec holds "name" in quotes and no quoted
// string equal to name but for case.
func onlyExactKey(rec []byte, name string) bool {
	exact := false
	for i := 0; ; {
		j := bytes.IndexByte(rec[i:], '"')
		if j < 0 {
			return exact
		}
		i += j + 1
		if end := i + len(name); end < len(rec) && rec[end] == '"' {
			if w := rec[i:end]; string(w) == name {
				exact = true
			} else if bytes.EqualFold(w, []byte(name)) {
				return false
			}
		}
	}
}

// jsonText returns the string field of the JSON object rec. JSON strings
// are always valid UTF-8 once decoded: encoding/json turns invalid bytes
// and lone surrogate escapes into U+FFFD.
func jsonText(rec []byte, field string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(rec, &obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("expected a JSON object per line, found a JSON %s", te.Value)
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	raw, ok := obj[field]
	if !ok {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("no %q field (the object has %s): name the field that holds the text with --text-field", field, strings.Join(quoteAll(keys), ", "))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || len(raw) > 0 && raw[0] != '"' {
		return nil, fmt.Errorf("field %q is %s, not a string", field, jsonKind(raw))
	}
	return []byte(s), nil
}

func quoteAll(keys []string) []string {
	if len(keys) == 0 {
		return []string{"no fields"}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%q", k)
	}
	return out
}

func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	}
	return "a number"
}

// openInput opens path for reading, decompressing .gz files; count sees
// the raw bytes as they are read, for progress.
func openInput(path string, count func(int)) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("input %s: %w", path, err)
	}
	var r io.Reader = countingReader{f, count}
	if _, gz := kindOf(path); gz {
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
		if err != nil {
			f.Close()
			return nil, nil, &InputError{File: path, Err: fmt.Errorf("not a valid gzip file: %w", err)}
		}
		return gzipReader{zr}, func() error { zr.Close(); return f.Close() }, nil
	}
	return r, f.Close, nil
}

type countingReader struct {
	r     io.Reader
	count func(int)
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.count != nil {
		c.count(n)
	}
	return n, err
}

// gzipReader says in its errors that decompression failed; readInput
// adds the file's name.
type gzipReader struct {
	zr *gzip.Reader
}

func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip: %w (the file is corrupt or truncated)", err)
	}
	return n, err
}
