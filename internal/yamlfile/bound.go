package yamlfile

import (
	"bytes"
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/frontier-bench/frontier/internal/bounded"
)

// What a YAML file may cost before it is decoded. The decoder's time and
// memory grow much faster than the file with nesting (a 208 KB file nested
// 100,000 levels deep took 15 GB and minutes) and exponentially with
// aliases of aliases, while a track spec or frontier.yaml needs a few
// levels and a few kilobytes: the 1,030 shard pins of the largest dataset
// take 130 KB.
const (
	// MaxBytes is the largest file read.
	MaxBytes = 256 << 10
	// MaxDepth is the deepest nesting of collections.
	MaxDepth = 64
	// MaxNodes is the most nodes a file may hold once its aliases are
	// expanded.
	MaxNodes = 1 << 18
)

// ReadFile reads the YAML file at path, which must be a regular file of at
// most MaxBytes. Opening never waits: a named pipe or a device is refused,
// not read.
func ReadFile(path string) ([]byte, error) { return bounded.ReadFile(path, MaxBytes) }

// Check refuses src, the bytes of file, when it is larger than MaxBytes,
// nests collections deeper than MaxDepth, or expands through its aliases
// to more than MaxNodes nodes, before anything decodes it. A hostile file
// costs a pass over its bytes: the common shapes (brackets or dashes
// nested thousands deep) are refused by a first look that allocates
// nothing; the YAML scanner's own tokens, linear in the file, then give
// the exact count, and only a file with aliases is parsed to count what
// they expand to. Syntax errors are left to the decoder.
func Check(file string, src []byte) error {
	if len(src) > MaxBytes {
		return &bounded.TooLargeError{Name: file, Size: int64(len(src)), Limit: MaxBytes}
	}
	if line, col, deep := quickDepth(src, MaxDepth); deep {
		return depthError(file, src, line, col)
	}
	tokens := lexer.Tokenize(string(src))
	tk, deep, aliases := tokenDepth(tokens, MaxDepth)
	if deep {
		return depthError(file, src, tk.Position.Line, tk.Position.Column)
	}
	if !aliases {
		return nil
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil // the decoder reports the syntax error
	}
	if tk := expansion(f, MaxNodes); tk != nil {
		pos := tk.Position
		return &Error{File: file, Line: pos.Line, Column: pos.Column, Path: keyOnLine(src, pos.Line),
			Msg: fmt.Sprintf("the aliases expand the file to more than %d values: a file like this needs few aliases, not aliases of aliases", MaxNodes)}
	}
	return nil
}

func depthError(file string, src []byte, line, col int) error {
	return &Error{File: file, Line: line, Column: col, Path: keyOnLine(src, line),
		Msg: fmt.Sprintf("nested deeper than %d levels: a file like this needs a few; is it the right file?", MaxDepth)}
}

// quickDepth is the first look at src's nesting: one pass over the lines,
// and a stack of at most limit+1 columns. It reads YAML's structure roughly:
// the indentation of block collections and compact sequences ("- - x"),
// and flow brackets outside what it takes for quoted scalars, comments and
// block scalars. Where it is unsure it counts less (it skips every line
// more indented than a block scalar's indicator), so that it refuses only
// what is deep; tokenDepth, exact, follows. It returns the position where
// the nesting passed limit.
func quickDepth(src []byte, limit int) (line, col int, deep bool) {
	var stack [MaxDepth + 2]int
	limit = min(limit, MaxDepth)
	n, flow := 0, 0
	var quote byte // '"' or '\'' inside a quoted scalar
	block := -1    // the indentation above which lines are a block scalar's
	push := func(c int) bool {
		for n > 0 && stack[n-1] >= c {
			n--
		}
		stack[n] = c
		n++
		return n > limit
	}
	for lineNo := 1; len(src) > 0; lineNo++ {
		var ln []byte
		ln, src, _ = bytes.Cut(src, []byte("\n"))
		ln = bytes.TrimSuffix(ln, []byte("\r"))
		indent := 0
		for indent < len(ln) && ln[indent] == ' ' {
			indent++
		}
		rest := ln[indent:]
		if block >= 0 {
			if len(bytes.TrimSpace(rest)) == 0 || indent > block {
				continue
			}
			block = -1
		}
		i := indent
		if quote == 0 && flow == 0 {
			switch {
			case len(rest) == 0 || rest[0] == '#':
				continue
			case indent == 0 && rest[0] == '%':
				continue // a directive
			case indent == 0 && (bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("..."))):
				n, i = 0, 3 // a new document
			default:
				if push(indent) {
					return lineNo, indent + 1, true
				}
				// Compact nested sequences and complex keys: "- - x", "? - x".
				for i < len(ln) && (ln[i] == '-' || ln[i] == '?') && (i+1 == len(ln) || ln[i+1] == ' ') {
					i++
					for i < len(ln) && ln[i] == ' ' {
						i++
					}
					if i < len(ln) && push(i) {
						return lineNo, i + 1, true
					}
				}
			}
		}
		nodeStart := true // a node may begin here: a quote, a bracket, an indicator
		for ; i < len(ln); i++ {
			c := ln[i]
			switch quote {
			case '"':
				if c == '\\' {
					i++
				} else if c == '"' {
					quote, nodeStart = 0, false
				}
				continue
			case '\'':
				if c == '\'' {
					if i+1 < len(ln) && ln[i+1] == '\'' {
						i++
					} else {
						quote, nodeStart = 0, false
					}
				}
				continue
			}
			switch {
			case c == ' ' || c == '\t':
			case c == '#' && (i == 0 || ln[i-1] == ' ' || ln[i-1] == '\t'):
				i = len(ln) // a comment
			case nodeStart && (c == '"' || c == '\''):
				quote = c
			case nodeStart && flow == 0 && (c == '|' || c == '>'):
				block, i = indent, len(ln)
			case nodeStart && (c == '&' || c == '!'):
				// An anchor or a tag: the node follows it.
				for i+1 < len(ln) && ln[i+1] != ' ' {
					i++
				}
			case c == '[' || c == '{':
				if flow == 0 && !nodeStart {
					break // inside a plain scalar
				}
				flow++
				if n+flow > limit {
					return lineNo, i + 1, true
				}
				nodeStart = true
			case (c == ']' || c == '}') && flow > 0:
				flow--
				nodeStart = false
			case c == ',' && flow > 0:
				nodeStart = true
			case c == ':' && (i+1 == len(ln) || ln[i+1] == ' ' || flow > 0 && bytes.IndexByte([]byte(",[]{}"), ln[i+1]) >= 0):
				nodeStart = true
			default:
				nodeStart = false
			}
		}
	}
	return 0, 0, false
}

// tokenDepth measures the nesting of the scanner's tokens exactly as the
// parser will meet it: flow collections by their brackets, block
// collections by the columns their lines (and compact entries, "- - x")
// start at. It returns the token where the nesting passed limit, and whether
// the file has aliases.
func tokenDepth(tokens token.Tokens, limit int) (at *token.Token, deep, aliases bool) {
	var cols []int
	flow := 0
	var prev *token.Token
	for _, tk := range tokens {
		switch tk.Type {
		case token.CommentType, token.SpaceType:
			continue
		case token.AliasType:
			aliases = true
		case token.DocumentHeaderType, token.DocumentEndType:
			cols, flow, prev = cols[:0], 0, tk
			continue
		}
		if flow == 0 {
			first := prev == nil || prev.Position.Line != tk.Position.Line
			entry := !first && (prev.Type == token.SequenceEntryType || prev.Type == token.MappingKeyType)
			if first || entry {
				c := tk.Position.Column
				for len(cols) > 0 && cols[len(cols)-1] >= c {
					cols = cols[:len(cols)-1]
				}
				cols = append(cols, c)
				if len(cols) > limit {
					return tk, true, aliases
				}
			}
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
			if len(cols)+flow > limit {
				return tk, true, aliases
			}
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		prev = tk
	}
	return nil, false, aliases
}

// expansion counts the nodes of f with every alias expanded, stopping
// past limit; it returns the alias that took the count past limit, nil when
// it stayed within.
func expansion(f *ast.File, limit int) *token.Token {
	anchors := map[string]int{}
	var culprit *token.Token
	add := func(a, b int) int { return min(a+b, limit+1) }
	var size func(n ast.Node) int
	size = func(n ast.Node) int {
		switch x := n.(type) {
		case nil:
			return 0
		case *ast.AnchorNode:
			s := size(x.Value)
			if x.Name != nil {
				anchors[x.Name.GetToken().Value] = s
			}
			return s
		case *ast.AliasNode:
			s := 1
			if x.Value != nil {
				if v, ok := anchors[x.Value.GetToken().Value]; ok {
					s = v
				}
			}
			if s > limit && culprit == nil {
				culprit = x.GetToken()
			}
			return s
		case *ast.TagNode:
			return size(x.Value)
		case *ast.MappingNode:
			return sumSizes(x.Values, size, add)
		case *ast.MappingValueNode:
			return add(add(1, size(x.Key)), size(x.Value))
		case *ast.MappingKeyNode:
			return size(x.Value)
		case *ast.SequenceNode:
			return sumSizes(x.Values, size, add)
		}
		return 1
	}
	total := 0
	var last *token.Token
	for _, doc := range f.Docs {
		total = add(total, size(doc.Body))
		if total > limit && culprit == nil {
			last = doc.GetToken()
		}
	}
	if total <= limit {
		return nil
	}
	if culprit != nil {
		return culprit
	}
	return last
}

// sumSizes is the size of a collection: itself and its values.
func sumSizes[N ast.Node](values []N, size func(ast.Node) int, add func(a, b int) int) int {
	s := 1
	for _, v := range values {
		s = add(s, size(v))
	}
	return s
}

// ReadInside reads name, a regular file of at most limit bytes that lies
// inside dir (symbolic links are followed only while they stay inside).
// Opening never waits: a named pipe is refused, not read.
func ReadInside(dir, name string, limit int64) ([]byte, error) {
	return bounded.ReadInside(dir, name, limit)
}
