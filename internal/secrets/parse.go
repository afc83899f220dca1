package secrets

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxFileSize bounds a secrets file: anything larger is certainly not one,
// and reading it whole must not cost unbounded memory.
const MaxFileSize = 8 << 20

const (
	maxDepth  = 64
	maxErrors = 10
)

// Error is one positioned problem in a secrets file. Its message says what
// was expected and what kind of token was found, never the text of a value
// (a value may be a secret), and shows no source line for the same reason.
type Error struct {
	File string
	Line int
	Col  int
	Msg  string
}

// Error renders "file:line:col: message".
func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// ErrorList is every problem found in one file (up to a small limit), in
// source order.
type ErrorList []*Error

// Error renders one problem per line.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap exposes the individual errors to errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// File is one parsed secrets file.
type File struct {
	// Path is the name the file was parsed under.
	Path string
	// Flat holds the `KEY = value` lines outside any config block.
	Flat map[string]Value
	// Blocks holds each `config NAME { … }` block; a block written twice
	// in one file is merged, later keys winning.
	Blocks map[string]map[string]Value
}

// Format prints the file's shape (path, block names, key counts), never its
// values.
func (f *File) Format(s fmt.State, _ rune) {
	if f == nil {
		_, _ = io.WriteString(s, "<nil secrets.File>")
		return
	}
	_, _ = fmt.Fprintf(s, "secrets.File{%s: %d flat keys, blocks %v}", f.Path, len(f.Flat), sortedKeys(f.Blocks))
}

// ParseFile reads and parses the secrets file at path.
func ParseFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open secrets file: %w", err)
	}
	defer fh.Close()
	src, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read secrets file %s: %w", path, err)
	}
	if len(src) > MaxFileSize {
		return nil, fmt.Errorf("secrets file %s is larger than %d bytes", path, MaxFileSize)
	}
	return Parse(path, src)
}

// Parse parses src as a secrets file named name (used in error positions).
//
// Syntax (docs/reference/language.md#secrets-files, plus what 2.x files in the wild contain):
//
//	// line comment, /* block comment */, # line comment
//	KEY = "value"                      flat entry
//	config NAME { KEY = "v", K2 = 3 }  block; commas and semicolons optional
//	MODEL_NAME = { "strong": "m1", weak: "m2" }   map (`:` or `=`)
//	LIST = ["a", "b"]                  list
//
// Values: "double" or 'single' quoted strings (may span lines; the escapes
// \" \' \\ \n \t are decoded, any other backslash is kept literally, as a
// 2.x file expects of a Windows path), """triple""" strings (raw), numbers
// (kept as written), true/false, null/none, maps, lists, and bare words
// (`BASE_URL = https://host/v1`, `KEY = abc==`): a run of characters up to
// whitespace or one of , ; { } [ ] " '. Keys are identifiers; `=` or `:`
// separates key and value. A key given twice keeps the later value.
//
// On error Parse returns a nil File and an ErrorList.
func Parse(name string, src []byte) (*File, error) {
	p := &parser{
		lx:   &lexer{src: src, line: 1, col: 1},
		name: name,
		file: &File{Path: name, Flat: map[string]Value{}, Blocks: map[string]map[string]Value{}},
	}
	p.parseFile()
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return p.file, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tBool
	tNull
	tBare
	tLBrace
	tRBrace
	tLBrack
	tRBrack
	tAssign // = or :
	tComma
	tSemi
	tBad
)

type token struct {
	kind      tokKind
	text      string
	line, col int
	// bad is the lexical problem of a tBad token (never quoting the text).
	bad string
}

// describe names a token for an error message without quoting any text
// that could be part of a value.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tIdent:
		return "a name"
	case tString:
		return "a string"
	case tNumber:
		return "a number"
	case tBool:
		return "a boolean"
	case tNull:
		return "null"
	case tBare:
		return "an unquoted word"
	case tLBrace:
		return "`{`"
	case tRBrace:
		return "`}`"
	case tLBrack:
		return "`[`"
	case tRBrack:
		return "`]`"
	case tAssign:
		return "`" + t.text + "`"
	case tComma:
		return "`,`"
	case tSemi:
		return "`;`"
	default:
		return "an unexpected character"
	}
}

type lexer struct {
	src       []byte
	off       int
	line, col int
}

type lexState struct{ off, line, col int }

func (l *lexer) save() lexState     { return lexState{l.off, l.line, l.col} }
func (l *lexer) restore(s lexState) { l.off, l.line, l.col = s.off, s.line, s.col }

func (l *lexer) peekByte(i int) byte {
	if l.off+i < len(l.src) {
		return l.src[l.off+i]
	}
	return 0
}

// advance moves over one rune, keeping line and column (in runes).
func (l *lexer) advance() {
	if l.off >= len(l.src) {
		return
	}
	if l.src[l.off] == '\n' {
		l.off++
		l.line++
		l.col = 1
		return
	}
	_, size := utf8.DecodeRune(l.src[l.off:])
	l.off += size
	l.col++
}

// skipLine moves past the next newline: error recovery.
func (l *lexer) skipLine() {
	for l.off < len(l.src) && l.src[l.off] != '\n' {
		l.advance()
	}
	l.advance()
}

// skipSpace skips whitespace and comments. hashComments allows `#` line
// comments, only where a key is expected (a value may start with `#`).
func (l *lexer) skipSpace(hashComments bool) *token {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance()
		case c == '/' && l.peekByte(1) == '/', c == '#' && hashComments:
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance()
			}
		case c == '/' && l.peekByte(1) == '*':
			line, col := l.line, l.col
			l.advance()
			l.advance()
			for {
				if l.off >= len(l.src) {
					return &token{kind: tBad, line: line, col: col, bad: "unterminated /* comment"}
				}
				if l.src[l.off] == '*' && l.peekByte(1) == '/' {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		case c == 0xEF && l.off == 0 && l.peekByte(1) == 0xBB && l.peekByte(2) == 0xBF:
			l.off += 3 // UTF-8 byte order mark
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentByte(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// isBareStop ends a bare word.
func isBareStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', ',', ';', '{', '}', '[', ']', '"', '\'':
		return true
	}
	return false
}

var numberRE = regexp.MustCompile(`^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)

// next returns the next token. In value position a bare word is read and
// classified (number, boolean, null or word); elsewhere names are read.
func (l *lexer) next(value bool) token {
	if bad := l.skipSpace(!value); bad != nil {
		return *bad
	}
	tok := token{line: l.line, col: l.col}
	if l.off >= len(l.src) {
		tok.kind = tEOF
		return tok
	}
	c := l.src[l.off]
	punct := map[byte]tokKind{'{': tLBrace, '}': tRBrace, '[': tLBrack, ']': tRBrack, ',': tComma, ';': tSemi}
	if k, ok := punct[c]; ok {
		l.advance()
		tok.kind = k
		return tok
	}
	switch {
	case c == '"' && l.peekByte(1) == '"' && l.peekByte(2) == '"':
		return l.tripleString(tok)
	case c == '"' || c == '\'':
		return l.quotedString(tok, c)
	case !value && (c == '=' || c == ':'):
		l.advance()
		tok.kind, tok.text = tAssign, string(c)
		return tok
	case value:
		start := l.off
		for l.off < len(l.src) && !isBareStop(l.src[l.off]) {
			l.advance()
		}
		text := string(l.src[start:l.off])
		tok.text = text
		switch strings.ToLower(text) {
		case "true", "false":
			tok.kind, tok.text = tBool, strings.ToLower(text)
		case "null", "none":
			tok.kind = tNull
		default:
			if numberRE.MatchString(text) {
				tok.kind = tNumber
			} else {
				tok.kind = tBare
			}
		}
		return tok
	case isIdentStart(c):
		start := l.off
		for l.off < len(l.src) && isIdentByte(l.src[l.off]) {
			l.advance()
		}
		tok.kind, tok.text = tIdent, string(l.src[start:l.off])
		return tok
	case c >= '0' && c <= '9':
		start := l.off
		for l.off < len(l.src) && !isBareStop(l.src[l.off]) && l.src[l.off] != ':' && l.src[l.off] != '=' {
			l.advance()
		}
		tok.kind, tok.text = tNumber, string(l.src[start:l.off])
		return tok
	default:
		l.advance()
		tok.kind, tok.bad = tBad, "unexpected character"
		return tok
	}
}

func (l *lexer) tripleString(tok token) token {
	l.advance()
	l.advance()
	l.advance()
	start := l.off
	for l.off < len(l.src) {
		if l.src[l.off] == '"' && l.peekByte(1) == '"' && l.peekByte(2) == '"' {
			text := string(l.src[start:l.off])
			l.advance()
			l.advance()
			l.advance()
			tok.kind, tok.text = tString, text
			return tok
		}
		l.advance()
	}
	tok.kind, tok.bad = tBad, "unterminated \"\"\" string"
	return tok
}

func (l *lexer) quotedString(tok token, quote byte) token {
	l.advance()
	var sb strings.Builder
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == quote:
			l.advance()
			tok.kind, tok.text = tString, sb.String()
			return tok
		case c == '\\' && l.off+1 < len(l.src):
			switch n := l.src[l.off+1]; n {
			case '"', '\'', '\\':
				sb.WriteByte(n)
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			default:
				// Not an escape: the backslash is text, and the next
				// character is read normally.
				sb.WriteByte('\\')
				l.advance()
				continue
			}
			l.advance()
			l.advance()
		default:
			start := l.off
			l.advance()
			sb.Write(l.src[start:l.off])
		}
	}
	tok.kind, tok.bad = tBad, "unterminated string"
	return tok
}

type parser struct {
	lx    *lexer
	name  string
	file  *File
	errs  ErrorList
	depth int
}

func (p *parser) errorAt(t token, format string, args ...any) {
	if len(p.errs) >= maxErrors {
		return
	}
	p.errs = append(p.errs, &Error{File: p.name, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)})
}

// unexpected reports t where something else was expected.
func (p *parser) unexpected(t token, expected string) {
	if t.kind == tBad {
		p.errorAt(t, "%s (expected %s)", t.bad, expected)
		return
	}
	p.errorAt(t, "expected %s, found %s", expected, t.describe())
}

func (p *parser) tooMany() bool { return len(p.errs) >= maxErrors }

func (p *parser) parseFile() {
	for !p.tooMany() {
		tok := p.lx.next(false)
		switch tok.kind {
		case tEOF:
			return
		case tComma, tSemi:
		case tIdent:
			if tok.text == "config" {
				s := p.lx.save()
				name := p.lx.next(false)
				if name.kind == tIdent {
					p.block(tok, name)
					continue
				}
				if name.kind == tLBrace {
					p.unexpected(name, "a block name after `config`")
					p.skipBlock()
					continue
				}
				p.lx.restore(s)
			}
			p.entry(tok, p.file.Flat)
		default:
			p.unexpected(tok, "a key or `config NAME {`")
			p.recover(tok)
		}
	}
}

// recover skips the rest of the line of a bad token, unless the token
// already ended a line (EOF) or is a closing brace the caller handles.
func (p *parser) recover(t token) {
	if t.kind == tEOF {
		return
	}
	if t.line == p.lx.line {
		p.lx.skipLine()
	}
}

// skipBlock skips to the `}` that closes an unusable block.
func (p *parser) skipBlock() {
	for depth := 1; depth > 0; {
		switch tok := p.lx.next(true); tok.kind {
		case tEOF:
			return
		case tRBrace:
			depth--
		case tLBrace:
			depth++
		}
	}
}

func (p *parser) block(kw, name token) {
	open := p.lx.next(false)
	if open.kind != tLBrace {
		p.unexpected(open, "`{` after `config "+name.text+"`")
		p.recover(open)
		return
	}
	entries := p.file.Blocks[name.text]
	if entries == nil {
		entries = map[string]Value{}
		p.file.Blocks[name.text] = entries
	}
	for !p.tooMany() {
		tok := p.lx.next(false)
		switch tok.kind {
		case tRBrace:
			return
		case tEOF:
			p.errorAt(tok, "expected `}` to close config %s opened at %d:%d, found end of file", name.text, kw.line, kw.col)
			return
		case tComma, tSemi:
		case tIdent:
			p.entry(tok, entries)
		default:
			p.unexpected(tok, "a key or `}` in config "+name.text)
			p.recover(tok)
		}
	}
}

// entry parses `KEY = value` after its key and stores it in into.
func (p *parser) entry(key token, into map[string]Value) {
	assign := p.lx.next(false)
	if assign.kind != tAssign {
		p.unexpected(assign, "`=` after a key")
		p.recover(assign)
		return
	}
	v, ok := p.value(key.text, p.lx.next(true))
	if !ok {
		return
	}
	into[key.text] = v
}

// value parses the value whose first token is t; on error it reports,
// recovers and returns false.
func (p *parser) value(key string, t token) (Value, bool) {
	switch t.kind {
	case tString, tBare:
		return Value{kind: String, text: t.text}, true
	case tNumber:
		return Value{kind: Number, text: t.text}, true
	case tBool:
		return Value{kind: Bool, text: t.text}, true
	case tNull:
		return Value{kind: Null}, true
	case tLBrace, tLBrack:
		if p.depth >= maxDepth {
			p.errorAt(t, "value of %s is nested more than %d levels deep", key, maxDepth)
			p.lx.skipLine()
			return Value{}, false
		}
		p.depth++
		defer func() { p.depth-- }()
		if t.kind == tLBrace {
			return p.mapValue(key, t)
		}
		return p.listValue(key, t)
	default:
		p.unexpected(t, "a value (string, number, boolean, map or list) for "+key)
		p.recover(t)
		return Value{}, false
	}
}

func (p *parser) mapValue(key string, open token) (Value, bool) {
	items := map[string]Value{}
	for {
		tok := p.lx.next(false)
		switch tok.kind {
		case tRBrace:
			return Value{kind: Map, items: items}, true
		case tComma, tSemi:
		case tString, tIdent, tNumber:
			assign := p.lx.next(false)
			if assign.kind != tAssign {
				p.unexpected(assign, "`:` after a map key in "+key)
				p.recover(assign)
				return Value{}, false
			}
			v, ok := p.value(key+"."+tok.text, p.lx.next(true))
			if !ok {
				return Value{}, false
			}
			items[tok.text] = v
		case tEOF:
			p.errorAt(tok, "expected `}` to close the map of %s opened at %d:%d, found end of file", key, open.line, open.col)
			return Value{}, false
		default:
			p.unexpected(tok, "a map key or `}` in "+key)
			p.recover(tok)
			return Value{}, false
		}
	}
}

func (p *parser) listValue(key string, open token) (Value, bool) {
	var list []Value
	for {
		tok := p.lx.next(true)
		switch tok.kind {
		case tRBrack:
			return Value{kind: List, list: list}, true
		case tComma, tSemi:
		case tEOF:
			p.errorAt(tok, "expected `]` to close the list of %s opened at %d:%d, found end of file", key, open.line, open.col)
			return Value{}, false
		default:
			v, ok := p.value(key, tok)
			if !ok {
				return Value{}, false
			}
			list = append(list, v)
		}
	}
}
