package lang

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types produced by Lex, the values of Token.Type. They are untyped
// so that the same numbers serve as participle's token types (the grammar
// refers to them by the names of symbols: Ident, String, RawString,
// Number, Punct, Comment, Invalid).
const (
	EOF       = -1 // participle's lexer.EOF
	Ident     = -2
	String    = -3 // "…"; Value keeps the quotes and raw text
	RawString = -4 // """…"""; Value keeps the quotes
	Number    = -5
	Punct     = -6
	Comment   = -7
	Invalid   = -8
	// Sep ends one declaration in the token stream handed to participle:
	// no grammar element matches it, so to a declaration's parser it is
	// the end of input (see Parse).
	Sep = -9
)

// TokenType is the kind of a Token (one of the constants above).
type TokenType int

var symbols = map[string]lexer.TokenType{
	"EOF":       EOF,
	"Ident":     Ident,
	"String":    String,
	"RawString": RawString,
	"Number":    Number,
	"Punct":     Punct,
	"Comment":   Comment,
	"Invalid":   Invalid,
	"Sep":       Sep,
}

// multiPunct are the operators of more than one character, longest first so
// that the first match is the longest.
var multiPunct = []string{
	"|>>", "&>>", "...",
	"->", "=>", "==", "!=", "<=", ">=", "&&", "||", ">>", "|>", "??", "::", "..", "+=", "-=",
}

// Token is a lexed token: its type, its text (strings keep their quotes)
// and where it starts.
type Token struct {
	Type  TokenType
	Value string
	Pos   Position
}

// EOF reports whether the token is the end of the input.
func (t Token) EOF() bool { return t.Type == EOF }

// Position is a place in a source file. The fields are those of
// participle's lexer.Position, with the same names, types and order: that
// is what lets participle fill the Pos and EndPos fields of grammar nodes
// with this type (it converts its own position to any struct type of the
// same layout), so that participle's type appears nowhere in this
// package's API.
type Position struct {
	Filename string // the file name given to Parse
	Offset   int    // byte offset from the start of the file
	Line     int    // 1-based
	Column   int    // 1-based, counted in characters
}

// String is `file:line:col`.
func (p Position) String() string { return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column) }

// pos is the Position of a participle token.
func pos(t *lexer.Token) Position { return Position(t.Pos) }

// fromParticiple is a participle token as a Token.
func fromParticiple(t lexer.Token) Token {
	return Token{Type: TokenType(t.Type), Value: t.Value, Pos: Position(t.Pos)}
}

// Lex splits src into tokens, comments included, ending with an EOF token.
// It never fails: problems (unterminated strings or comments, characters
// that cannot start a token) are returned as diagnostics and the offending
// text becomes an Invalid token or is kept inside the literal it belongs to.
func Lex(file string, src []byte) ([]Token, Diagnostics) {
	tl, diags := lex(file, src)
	out := make([]Token, tl.len())
	for i := range out {
		out[i] = tl.at(i)
	}
	return out, diags
}

// maxLexBytes is the largest source lex reads (offsets are int32).
const maxLexBytes = math.MaxInt32

// lex is Lex in the compact form Parse works with.
func lex(file string, src []byte) (*tokenList, Diagnostics) {
	if len(src) > maxLexBytes {
		// offsets are int32 (tok); no source file comes near this (the
		// compiler reads at most 4 MiB)
		lx := &scanner{file: file, line: 1, col: 1}
		lx.errorf(lx.mark(), "", "the file has %d bytes, more than a source file can have (2 GiB)", len(src))
		lx.run()
		return &tokenList{file: file, t: lx.toks}, lx.diags
	}
	lx := &scanner{file: file, src: src, str: string(src), line: 1, col: 1}
	lx.toks = make([]tok, 0, len(src)/3+16) // about one token per three bytes
	lx.run()
	return &tokenList{file: file, src: lx.str, t: lx.toks}, lx.diags
}

// tok is a lexed token in compact form: its text is src[off:end] (plus
// extra closing quotes, see Lex), and it holds no pointers, so the token
// array of a big file is cheap to allocate and costs the garbage collector
// nothing to scan. tokenList.at gives the participle Token. Offsets are
// int32, so a token costs 20 bytes instead of 32 (−2.8 MB of 7.4 lexing
// the 3,000-tool program).
type tok struct {
	off, end  int32
	line, col int32
	typ       int8
	extra     int8 // closing quotes added to an unterminated string
}

// tokenList is the compact token array of one file.
type tokenList struct {
	file string
	src  string
	t    []tok
}

func (l *tokenList) len() int { return len(l.t) }

// typ is the type of token i.
func (l *tokenList) typ(i int) TokenType { return TokenType(l.t[i].typ) }

// value is the text of token i (Token.Value).
func (l *tokenList) value(i int) string {
	k := &l.t[i]
	if k.extra != 0 {
		return l.src[k.off:k.end] + `"""`[:k.extra]
	}
	return l.src[k.off:k.end]
}

// line and col are the position of token i.
func (l *tokenList) line(i int) int { return int(l.t[i].line) }
func (l *tokenList) col(i int) int  { return int(l.t[i].col) }

// pos is the position of token i.
func (l *tokenList) pos(i int) Position {
	k := &l.t[i]
	return Position{Filename: l.file, Offset: int(k.off), Line: int(k.line), Column: int(k.col)}
}

// at is token i.
func (l *tokenList) at(i int) Token {
	return Token{Type: l.typ(i), Value: l.value(i), Pos: l.pos(i)}
}

// between returns the tokens that start in [from, to) of the source,
// without comments.
func (l *tokenList) between(from, to int) []Token {
	i := sort.Search(len(l.t), func(i int) bool { return int(l.t[i].off) >= from })
	var out []Token
	for ; i < len(l.t) && int(l.t[i].off) < to; i++ {
		if l.typ(i) != Comment && l.typ(i) != EOF {
			out = append(out, l.at(i))
		}
	}
	return out
}

// ptok is token i as participle's token.
func (l *tokenList) ptok(i int) lexer.Token {
	return lexer.Token{Type: lexer.TokenType(l.typ(i)), Value: l.value(i), Pos: lexer.Position(l.pos(i))}
}

// sep is the Sep token that ends declaration s for participle, at the
// token after it (or the last token of the file).
func (l *tokenList) sep(s span) lexer.Token {
	return lexer.Token{Type: Sep, Pos: lexer.Position(l.pos(min(s.end, l.len()-1)))}
}

// is reports whether token i is of type t with text v.
func (l *tokenList) is(i int, t TokenType, v string) bool {
	k := &l.t[i]
	return TokenType(k.typ) == t && int(k.end-k.off) == len(v) && l.src[k.off:k.end] == v
}

type scanner struct {
	file  string
	src   []byte
	str   string // src as a string: token values are substrings of it
	off   int
	line  int
	col   int
	toks  []tok
	diags Diagnostics
	// invalidRun merges consecutive bad characters into one diagnostic.
	invalidRun bool
}

// mark is where a token starts (a Position without the file name: the
// scanner builds one per token, so it stays small and pointer-free).
type mark struct {
	off, line, col int
}

func (s *scanner) mark() mark { return mark{s.off, s.line, s.col} }

// advance moves over n bytes, keeping line and column (in characters:
// UTF-8 continuation bytes do not count).
func (s *scanner) advance(n int) {
	end := s.off + n
	for _, c := range s.src[s.off:end] {
		switch {
		case c == '\n':
			s.line++
			s.col = 1
		case c&0xC0 != 0x80:
			s.col++
		}
	}
	s.off = end
}

// advanceASCII moves over n bytes known to be ASCII on one line.
func (s *scanner) advanceASCII(n int) {
	s.off += n
	s.col += n
}

// int32s saturates a line or column number (only a file of gigabytes could
// need more).
func int32s(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

func (s *scanner) emit(t TokenType, start mark) {
	s.toks = append(s.toks, tok{off: int32(start.off), end: int32(s.off), line: int32s(start.line), col: int32s(start.col), typ: int8(t)})
}

func (s *scanner) errorf(p mark, hint, format string, args ...any) {
	s.diags = append(s.diags, Diagnostic{
		File: s.file, Line: p.line, Column: p.col,
		Code: CodeLex, Message: fmt.Sprintf(format, args...), Hint: hint, Severity: SeverityError,
	})
}

func (s *scanner) peekIs(str string) bool {
	return len(s.src)-s.off >= len(str) && string(s.src[s.off:s.off+len(str)]) == str
}

func (s *scanner) run() {
	// A UTF-8 byte order mark is not text.
	if s.peekIs("\uFEFF") {
		s.off += 3
	}
	for s.off < len(s.src) {
		c := s.src[s.off]
		// whitespace first, without building a position (it is most of
		// the bytes of an indented source)
		if c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' {
			s.off++
			s.col++
			s.invalidRun = false
			continue
		}
		if c == '\n' {
			s.off++
			s.line++
			s.col = 1
			s.invalidRun = false
			continue
		}
		start := s.mark()
		switch {
		case c == '/' && s.peekIs("//"):
			end := s.off
			for end < len(s.src) && s.src[end] != '\n' {
				end++
			}
			s.advance(end - s.off)
			s.emit(Comment, start)
		case c == '/' && s.peekIs("/*"):
			idx := bytes.Index(s.src[s.off+2:], []byte("*/"))
			if idx < 0 {
				s.errorf(start, "close it with */", "unterminated /* comment")
				s.advance(len(s.src) - s.off)
			} else {
				s.advance(idx + 4)
			}
			s.emit(Comment, start)
		case c == '"' && s.peekIs(`"""`):
			s.lexTriple(start)
		case c == '"':
			s.lexString(start)
		case isIdentStart(c):
			end := s.off + 1
			for end < len(s.src) && isIdentPart(s.src[end]) {
				end++
			}
			// `python!` is one token (the body marker), unless it is
			// `python != …`.
			if end-s.off == 6 && s.str[s.off:end] == "python" && end < len(s.src) && s.src[end] == '!' &&
				(end+1 >= len(s.src) || s.src[end+1] != '=') {
				s.advance(end + 1 - s.off)
				s.emit(Punct, start)
				break
			}
			s.advanceASCII(end - s.off)
			s.emit(Ident, start)
		case c >= '0' && c <= '9':
			s.lexNumber(start)
		case c == '\'' || c == '`':
			s.errorf(start, `strings use double quotes: "…", or """…""" for text with quotes`,
				"unexpected %q: single quotes and backquotes do not make strings", string(c))
			s.advanceASCII(1)
			s.emit(Invalid, start)
		case c < utf8.RuneSelf && strings.IndexByte("#$~^\\", c) >= 0:
			s.errorf(start, "", "unexpected character %q outside a string", string(c))
			s.advanceASCII(1)
			s.emit(Invalid, start)
		case c < utf8.RuneSelf && c >= 0x21 && c != 0x7f:
			n := 1
			if strings.IndexByte("-=!<>&|?:.+", c) >= 0 {
				for _, p := range multiPunct {
					if p[0] == c && s.peekIs(p) {
						n = len(p)
						break
					}
				}
			}
			s.advanceASCII(n)
			s.emit(Punct, start)
		default:
			s.lexInvalid(start)
			continue
		}
		s.invalidRun = false
	}
	s.toks = append(s.toks, tok{off: int32(s.off), end: int32(s.off), line: int32s(s.line), col: int32s(s.col), typ: int8(EOF)})
}

func (s *scanner) lexInvalid(start mark) {
	r, size := utf8.DecodeRune(s.src[s.off:])
	var what string
	switch {
	case r == utf8.RuneError && size <= 1:
		what = fmt.Sprintf("invalid UTF-8 byte 0x%02x", s.src[s.off])
		size = 1
	case r < 0x20 || r == 0x7f:
		what = fmt.Sprintf("control character U+%04X", r)
	default:
		what = fmt.Sprintf("character %q (U+%04X)", r, r)
	}
	if !s.invalidRun {
		s.errorf(start, "text outside strings and comments must be ASCII code",
			"unexpected %s", what)
	}
	s.advance(size)
	if s.invalidRun && len(s.toks) > 0 && s.toks[len(s.toks)-1].typ == Invalid {
		s.toks[len(s.toks)-1].end = int32(s.off)
	} else {
		s.emit(Invalid, start)
	}
	s.invalidRun = true
}

func (s *scanner) lexNumber(start mark) {
	i := s.off
	digits := func() {
		for i < len(s.src) && s.src[i] >= '0' && s.src[i] <= '9' {
			i++
		}
	}
	digits()
	if i+1 < len(s.src) && s.src[i] == '.' && s.src[i+1] >= '0' && s.src[i+1] <= '9' {
		i++
		digits()
	}
	if i < len(s.src) && (s.src[i] == 'e' || s.src[i] == 'E') {
		j := i + 1
		if j < len(s.src) && (s.src[j] == '+' || s.src[j] == '-') {
			j++
		}
		if j < len(s.src) && s.src[j] >= '0' && s.src[j] <= '9' {
			i = j
			digits()
		}
	}
	s.advanceASCII(i - s.off)
	s.emit(Number, start)
}

// lexTriple reads """…""": raw text up to the first """; quotes right
// before the closing ones belong to the text ("""say "hi"""" is say "hi").
func (s *scanner) lexTriple(start mark) {
	body := s.off + 3
	idx := bytes.Index(s.src[body:], []byte(`"""`))
	if idx < 0 {
		s.errorf(start, `close it with """`, "unterminated triple-quoted string")
		s.advance(len(s.src) - s.off)
		s.emit(RawString, start)
		s.toks[len(s.toks)-1].extra = 3 // keep the token well formed: """…"""
		return
	}
	end := body + idx + 3
	for end < len(s.src) && s.src[end] == '"' {
		end++
	}
	s.advance(end - s.off)
	s.emit(RawString, start)
}

// lexString reads "…" by the escape rule of the package documentation.
func (s *scanner) lexString(start mark) {
	i := s.off + 1
	for i < len(s.src) {
		c := s.src[i]
		if c == '"' {
			s.advance(i + 1 - s.off)
			s.emit(String, start)
			return
		}
		if c == '\\' && i+1 < len(s.src) {
			switch s.src[i+1] {
			case '\\':
				i += 2
				continue
			case '"':
				if quoteEndsString(s.src, i+2) {
					s.advance(i + 2 - s.off)
					s.emit(String, start)
					return
				}
				i += 2
				continue
			}
		}
		i++
	}
	s.errorf(start, `close it with "; a string may span lines, so it runs to the end of the file`, "unterminated string")
	s.advance(len(s.src) - s.off)
	s.emit(String, start)
	s.toks[len(s.toks)-1].extra = 1 // keep the token well formed: "…"
}

// quoteEndsString decides whether a backslash-quote whose quote is just
// before offset i closes the string (the 2.x reading) — true when what
// follows on the same line is the end of the line or input, or a character
// that can follow a string in 2.x.
func quoteEndsString(src []byte, i int) bool {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i >= len(src) {
		return true
	}
	return strings.IndexByte("\r\n,;)]}:+=?|&<>!/", src[i]) >= 0
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// StringValue decodes the text of a String or RawString token (Value with
// its quotes) by the escape rule of the package documentation.
func StringValue(tok string) string {
	if strings.HasPrefix(tok, `"""`) && len(tok) >= 6 {
		return tok[3 : len(tok)-3]
	}
	if len(tok) < 2 || tok[0] != '"' {
		return tok
	}
	inner := tok[1 : len(tok)-1]
	if !hasEscapedQuote(inner) {
		return inner
	}
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '\\' && i+1 < len(inner) {
			switch inner[i+1] {
			case '"':
				b.WriteByte('"')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hasEscapedQuote reports whether the inside of a string holds a \" pair
// (after pairing \\), which the lexer only lets through as an escape.
func hasEscapedQuote(inner string) bool {
	for i := 0; i+1 < len(inner); i++ {
		if inner[i] == '\\' {
			if inner[i+1] == '"' {
				return true
			}
			i++
		}
	}
	return false
}

// tokenLexer replays a token slice for participle, then an EOF token at
// position eof.
type tokenLexer struct {
	toks []lexer.Token
	eof  lexer.Position
	i    int
}

// Next implements lexer.Lexer.
func (l *tokenLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return lexer.EOFToken(l.eof), nil
	}
	t := l.toks[l.i]
	l.i++
	return t, nil
}

// definition adapts Lex to participle's lexer.Definition.
type definition struct{}

// Symbols implements lexer.Definition.
func (definition) Symbols() map[string]lexer.TokenType { return symbols }

// Lex implements lexer.Definition (participle needs one to build the
// grammar; parsing itself goes through ParseFromLexer).
func (definition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filename, err)
	}
	tl, _ := lex(filename, src)
	toks := make([]lexer.Token, tl.len()-1)
	for i := range toks {
		toks[i] = tl.ptok(i)
	}
	return &tokenLexer{toks: toks, eof: lexer.Position(tl.pos(tl.len() - 1))}, nil
}
