package lang

import "github.com/alecthomas/participle/v2/lexer"

// cursor is the token stream the hand-written productions read: participle's
// PeekingLexer, with the one two-token lookahead the grammar needs.
type cursor struct{ pl *lexer.PeekingLexer }

// Peek returns the next token without consuming it.
func (c cursor) Peek() *lexer.Token { return c.pl.Peek() }

// Next consumes and returns the next token.
func (c cursor) Next() *lexer.Token { return c.pl.Next() }

// PeekAfter returns the token after the next one, without consuming
// anything (`a.b` in a value, `match = 3` as a statement).
func (c cursor) PeekAfter() *lexer.Token {
	cp := c.pl.MakeCheckpoint()
	c.pl.Next()
	t := c.pl.Peek()
	c.pl.LoadCheckpoint(cp)
	return t
}
