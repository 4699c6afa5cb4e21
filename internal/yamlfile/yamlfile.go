// Package yamlfile locates problems in a YAML file for people to fix them:
// every unknown key, first to last, and the line and column of an invalid
// value, so that each error reads "file:line:col: path: message". The
// track spec and frontier.yaml report their errors through it.
package yamlfile

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Error is one problem, located in the source file.
type Error struct {
	File   string
	Line   int // 0 when unknown
	Column int
	Path   string // dotted YAML path, e.g. "data.val_tokens"
	Msg    string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// decodeError is what the YAML decoder's errors (syntax, type, overflow)
// carry: the token they are about.
type decodeError interface {
	GetToken() *token.Token
	GetMessage() string
}

// DecodeError locates an error of the YAML decoder (src's) as
// file:line:col, named by the key on that line. Other errors are returned
// with the file name in front.
func DecodeError(file string, src []byte, err error) error {
	var de decodeError
	if errors.As(err, &de) && de.GetToken() != nil {
		pos := de.GetToken().Position
		return &Error{File: file, Line: pos.Line, Column: pos.Column, Path: keyOnLine(src, pos.Line), Msg: de.GetMessage()}
	}
	return fmt.Errorf("%s: %w", file, err)
}

// keyOnLine returns the mapping key that line n (1-based) of src starts
// with, or "".
func keyOnLine(src []byte, n int) string {
	if n < 1 {
		return ""
	}
	// Walk to line n without splitting src: the file may be large.
	for ; n > 1; n-- {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			return ""
		}
		src = src[i+1:]
	}
	line, _, _ := bytes.Cut(src, []byte("\n"))
	l := bytes.TrimLeft(bytes.TrimSpace(line), "- ")
	key, _, ok := bytes.Cut(l, []byte(":"))
	if !ok || bytes.ContainsAny(key, " {}[]\"'") || len(key) > 200 {
		return ""
	}
	return string(key)
}

// MaxErrors is the most errors Join lists: a file with thousands of
// unknown keys (the wrong file, or one written by a program) would bury
// the first of them, which is the one to fix.
const MaxErrors = 20

// Join returns errs as one error, one per line, the first MaxErrors of
// them and a line that counts the rest; nil when there are none.
func Join(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	n := min(len(errs), MaxErrors)
	joined := make([]error, n, n+1)
	for i, e := range errs[:n] {
		joined[i] = e
	}
	if more := len(errs) - n; more > 0 {
		joined = append(joined, &Error{File: errs[n].File, Msg: fmt.Sprintf("and %d more (%d in all): fix the ones above first; this may be the wrong file", more, len(errs))})
	}
	return errors.Join(joined...)
}

// Locate fills in the file, line and column of each error from the YAML
// source and sorts them by line. A path whose key is missing points at the
// nearest parent that exists.
func Locate(file string, src []byte, errs []*Error) {
	for _, e := range errs {
		e.File = file
		// A path may be followed by words ("models[0] (gpt)"); the first
		// field is the key.
		start, _, _ := strings.Cut(e.Path, " ")
		for p := start; p != ""; p = parentPath(p) {
			yp, err := yaml.PathString("$." + p)
			if err != nil {
				continue
			}
			n, err := yp.ReadNode(bytes.NewReader(src))
			if err != nil || n == nil || n.GetToken() == nil {
				continue
			}
			pos := n.GetToken().Position
			e.Line, e.Column = pos.Line, pos.Column
			break
		}
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
}

// parentPath drops the last component of a dotted path ("a.b[2].c" -> "a.b[2]").
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// Inspect returns, in the order they appear, every key of src that v (a
// pointer to the struct the file decodes into) has no field for, and every
// number with a fraction written for a whole-number field (the decoder
// would drop the fraction: top_k: 15.9 would be 15). Fields are matched by
// their yaml tags; a map takes any key; a type that unmarshals itself from
// text is a leaf. A file that does not parse gives no errors: decoding it
// reports the syntax error. Call Check first: this walks the whole file.
func Inspect(file string, src []byte, v any) []*Error {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil
	}
	var errs []*Error
	for _, doc := range f.Docs {
		walk(file, doc.Body, reflect.TypeOf(v), "", &errs)
	}
	return errs
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func walk(file string, n ast.Node, t reflect.Type, path string, errs *[]*Error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nil {
		return
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		textValue(file, n, t, path, errs)
		return
	}
	switch x := n.(type) {
	case *ast.FloatNode:
		if isWhole(t) && x.Value != math.Trunc(x.Value) {
			pos := x.GetToken().Position
			*errs = append(*errs, &Error{File: file, Line: pos.Line, Column: pos.Column, Path: path,
				Msg: fmt.Sprintf("%s: want a whole number", x.GetToken().Value)})
		}
	case *ast.AnchorNode:
		walk(file, x.Value, t, path, errs)
	case *ast.TagNode:
		walk(file, x.Value, t, path, errs)
	case *ast.MappingNode:
		for _, mv := range x.Values {
			walkEntry(file, mv, t, path, errs)
		}
	case *ast.MappingValueNode:
		walkEntry(file, x, t, path, errs)
	case *ast.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return
		}
		for i, el := range x.Values {
			walk(file, el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	}
}

// textValue decodes a scalar into a type that reads itself from text (a
// duration, a size) the way the decoder will, so that an invalid value is
// reported with its line, column and key (the decoder's own error has
// neither) and every such value is, not the first.
func textValue(file string, n ast.Node, t reflect.Type, path string, errs *[]*Error) {
	var text string
	switch x := n.(type) {
	case *ast.StringNode:
		text = x.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		text = x.GetToken().Value
	default:
		return // null, or not a scalar: the decoder says what is wrong
	}
	u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
	if err := u.UnmarshalText([]byte(text)); err != nil {
		pos := n.GetToken().Position
		*errs = append(*errs, &Error{File: file, Line: pos.Line, Column: pos.Column, Path: path, Msg: err.Error()})
	}
}

// isWhole says whether t holds whole numbers only.
func isWhole(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func walkEntry(file string, mv *ast.MappingValueNode, t reflect.Type, path string, errs *[]*Error) {
	if mv.Key == nil || mv.Key.IsMergeKey() {
		return
	}
	key := keyText(mv.Key)
	child := key
	if path != "" {
		child = path + "." + key
	}
	switch t.Kind() {
	case reflect.Map:
		walk(file, mv.Value, t.Elem(), child, errs)
	case reflect.Struct:
		ft, ok := fieldType(t, key)
		if !ok {
			pos := mv.Key.GetToken().Position
			*errs = append(*errs, &Error{File: file, Line: pos.Line, Column: pos.Column, Path: child,
				Msg: "unknown key" + known(t, path)})
			return
		}
		walk(file, mv.Value, ft, child, errs)
	}
}

func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	return strings.TrimSpace(k.String())
}

// fieldType returns the type of t's field whose yaml name is key; embedded
// structs with ",inline" are searched too.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			if ft, ok := fieldType(f.Type, key); ok {
				return ft, true
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// known lists the keys a struct accepts, for the message.
func known(t reflect.Type, path string) string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "-" && name != "" && f.IsExported() {
			names = append(names, name)
		}
	}
	where := "here"
	if path != "" {
		where = "under " + path
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the keys %s: %s)", where, strings.Join(names, ", "))
}

// Decode reads src (file's) into v strictly, reporting every problem a
// person must fix with its line and column: the size, nesting and
// aliases first (listing tracks or suites reads every file), then every
// unknown key first to last, then the decoder's first error. empty says
// what a file with nothing in it lacks.
func Decode(file string, src []byte, v any, empty string) error {
	if err := Check(file, src); err != nil {
		return err
	}
	if err := Join(Inspect(file, src, v)); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(src), yaml.Strict(), yaml.DisallowUnknownField())
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %s", file, empty)
		}
		return DecodeError(file, src, err)
	}
	return nil
}
