package lang

import "github.com/alecthomas/participle/v2/lexer"

// cursor is the token stream the hand-written productions read. It has two
// modes:
//
//   - over participle's PeekingLexer (pl set), when a participle grammar
//     (agents, protocols, legacy tool blocks, …) reaches a production that
//     implements participle.Parseable;
//   - over a declaration's slice of the lexed tokens (toks), for the
//     declarations parsed entirely by hand (@tool functions, quoted types).
//     The slice is read in place: no copy into a participle token stream,
//     which was the largest cost of compiling programs with thousands of
//     tools.
//
// In both modes comments are skipped, and past the end of the declaration
// the stream yields a Sep token, exactly as the participle stream does.
type cursor struct {
	pl   *lexer.PeekingLexer
	toks []Token
	i    int    // slice mode: index of the next non-comment token
	sep  Token  // slice mode: what Peek returns past the end
	n    *nodes // where AST nodes come from (nil: the heap)
}

// newSliceCursor reads toks (the tokens of one declaration); sepAt is the
// position of the Sep token that ends it.
func newSliceCursor(toks []Token, sepAt Position) *cursor {
	c := &cursor{toks: toks, sep: Token{Type: Sep, Pos: sepAt}}
	c.skip()
	return c
}

func (c *cursor) skip() {
	for c.i < len(c.toks) && c.toks[c.i].Type == Comment {
		c.i++
	}
}

// Peek returns the next token without consuming it.
func (c *cursor) Peek() *Token {
	if c.pl != nil {
		return c.pl.Peek()
	}
	if c.i < len(c.toks) {
		return &c.toks[c.i]
	}
	return &c.sep
}

// Next consumes and returns the next token (at the end it keeps returning
// the Sep token).
func (c *cursor) Next() *Token {
	if c.pl != nil {
		return c.pl.Next()
	}
	if c.i >= len(c.toks) {
		return &c.sep
	}
	t := &c.toks[c.i]
	c.i++
	c.skip()
	return t
}

// PeekAfter returns the token after the next one, without consuming
// anything (the one place the grammar needs two tokens of lookahead).
func (c *cursor) PeekAfter() *Token {
	if c.pl != nil {
		cp := c.pl.MakeCheckpoint()
		c.pl.Next()
		t := c.pl.Peek()
		c.pl.LoadCheckpoint(cp)
		return t
	}
	j := c.i + 1
	for j < len(c.toks) && c.toks[j].Type == Comment {
		j++
	}
	if j < len(c.toks) {
		return &c.toks[j]
	}
	return &c.sep
}
