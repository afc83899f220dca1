package lang

// nodes hands out the AST nodes of the hand-written productions from slabs:
// a 3,000-tool program has hundreds of thousands of small nodes, and
// allocating them one by one was a large part of its compile time (the
// allocator, then the garbage collector). A nil *nodes allocates each node
// on its own, which is what the productions do when participle calls them
// (agents, protocols, …: few nodes, and no place to keep slabs).
//
// Slabs only change where nodes live, not what they hold: the AST is the
// same as with one allocation per node. A node keeps its whole slab alive,
// which is fine for an AST that lives as long as its compilation.
type nodes struct {
	values     slab[Value]
	strLits    slab[StringLit]
	numLits    slab[NumberLit]
	refs       slab[RefLit]
	strs       slab[string]
	args       slab[Arg]
	decorators slab[Decorator]
	params     slab[Param]
	typeExprs  slab[TypeExpr]
	typeTerms  slab[TypeTerm]
	blocks     slab[Block]
	stmts      slab[Stmt]
	pythons    slab[PythonStmt]
	returns    slab[ReturnStmt]
	ifs        slab[IfStmt]
	arms       slab[ElseArm]
	exprStmts  slab[ExprStmt]
	exprs      slab[Expr]
	binOps     slab[BinOp]
	unaries    slab[Unary]
	postfixes  slab[Postfix]
	primaries  slab[Primary]
	names      slab[Name]
	toolFns    slab[ToolFn]

	argLists   slab[*Arg]
	decoLists  slab[*Decorator]
	paramLists slab[*Param]
	termLists  slab[*TypeTerm]
	typeLists  slab[*TypeExpr]
	stmtLists  slab[*Stmt]
	opLists    slab[*BinOp]
	armLists   slab[*ElseArm]
}

// slabSize is how many nodes of one type a slab holds.
const slabSize = 128

// slab is a run of preallocated values of one type.
type slab[T any] struct{ free []T }

// next returns a zero value from the slab.
func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabSize)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// carve returns an empty slice with room for n values; appending beyond n
// moves it to its own array, as append does.
func (s *slab[T]) carve(n int) []T {
	if len(s.free) < n {
		s.free = make([]T, max(slabSize, n))
	}
	out := s.free[:0:n]
	s.free = s.free[n:]
	return out
}

// node returns a new zero node from the slab picked from n, or from the
// heap when n is nil.
func node[T any](n *nodes, pick func(*nodes) *slab[T]) *T {
	if n == nil {
		return new(T)
	}
	return pick(n).next()
}

// push appends v to list; the first append of a list takes room for
// size elements from the slab picked from n.
func push[T any](n *nodes, pick func(*nodes) *slab[T], list []T, v T, size int) []T {
	if list == nil && n != nil {
		list = pick(n).carve(size)
	}
	return append(list, v)
}

func (n *nodes) value() *Value {
	return node(n, func(n *nodes) *slab[Value] { return &n.values })
}

func (n *nodes) strLit(pos Position, raw string) *StringLit {
	s := node(n, func(n *nodes) *slab[StringLit] { return &n.strLits })
	s.Pos, s.Raw = pos, raw
	return s
}

func (n *nodes) numLit(pos Position, neg bool, text string) *NumberLit {
	l := node(n, func(n *nodes) *slab[NumberLit] { return &n.numLits })
	l.Pos, l.Neg, l.Text = pos, neg, text
	return l
}

// str returns a pointer to a copy of s.
func (n *nodes) str(s string) *string {
	p := node(n, func(n *nodes) *slab[string] { return &n.strs })
	*p = s
	return p
}

func (n *nodes) ref(pos Position, first string) *RefLit {
	r := node(n, func(n *nodes) *slab[RefLit] { return &n.refs })
	r.Pos = pos
	r.Parts = push(n, func(n *nodes) *slab[string] { return &n.strs }, nil, first, 1)
	return r
}

func (n *nodes) arg() *Arg { return node(n, func(n *nodes) *slab[Arg] { return &n.args }) }
func (n *nodes) decorator() *Decorator {
	return node(n, func(n *nodes) *slab[Decorator] { return &n.decorators })
}
func (n *nodes) param() *Param { return node(n, func(n *nodes) *slab[Param] { return &n.params }) }
func (n *nodes) typeExpr() *TypeExpr {
	return node(n, func(n *nodes) *slab[TypeExpr] { return &n.typeExprs })
}
func (n *nodes) typeTerm() *TypeTerm {
	return node(n, func(n *nodes) *slab[TypeTerm] { return &n.typeTerms })
}
func (n *nodes) block() *Block { return node(n, func(n *nodes) *slab[Block] { return &n.blocks }) }
func (n *nodes) stmt() *Stmt   { return node(n, func(n *nodes) *slab[Stmt] { return &n.stmts }) }
func (n *nodes) python() *PythonStmt {
	return node(n, func(n *nodes) *slab[PythonStmt] { return &n.pythons })
}
func (n *nodes) ret() *ReturnStmt {
	return node(n, func(n *nodes) *slab[ReturnStmt] { return &n.returns })
}
func (n *nodes) ifStmt() *IfStmt { return node(n, func(n *nodes) *slab[IfStmt] { return &n.ifs }) }
func (n *nodes) arm() *ElseArm   { return node(n, func(n *nodes) *slab[ElseArm] { return &n.arms }) }
func (n *nodes) exprStmt() *ExprStmt {
	return node(n, func(n *nodes) *slab[ExprStmt] { return &n.exprStmts })
}
func (n *nodes) expr() *Expr   { return node(n, func(n *nodes) *slab[Expr] { return &n.exprs }) }
func (n *nodes) binOp() *BinOp { return node(n, func(n *nodes) *slab[BinOp] { return &n.binOps }) }
func (n *nodes) unary() *Unary { return node(n, func(n *nodes) *slab[Unary] { return &n.unaries }) }
func (n *nodes) postfix() *Postfix {
	return node(n, func(n *nodes) *slab[Postfix] { return &n.postfixes })
}
func (n *nodes) primary() *Primary {
	return node(n, func(n *nodes) *slab[Primary] { return &n.primaries })
}
func (n *nodes) name() *Name     { return node(n, func(n *nodes) *slab[Name] { return &n.names }) }
func (n *nodes) toolFn() *ToolFn { return node(n, func(n *nodes) *slab[ToolFn] { return &n.toolFns }) }

func (n *nodes) pushArg(l []*Arg, v *Arg) []*Arg {
	return push(n, func(n *nodes) *slab[*Arg] { return &n.argLists }, l, v, 4)
}
func (n *nodes) pushDecorator(l []*Decorator, v *Decorator) []*Decorator {
	return push(n, func(n *nodes) *slab[*Decorator] { return &n.decoLists }, l, v, 1)
}
func (n *nodes) pushParam(l []*Param, v *Param) []*Param {
	return push(n, func(n *nodes) *slab[*Param] { return &n.paramLists }, l, v, 4)
}
func (n *nodes) pushTerm(l []*TypeTerm, v *TypeTerm) []*TypeTerm {
	return push(n, func(n *nodes) *slab[*TypeTerm] { return &n.termLists }, l, v, 1)
}
func (n *nodes) pushType(l []*TypeExpr, v *TypeExpr) []*TypeExpr {
	return push(n, func(n *nodes) *slab[*TypeExpr] { return &n.typeLists }, l, v, 2)
}
func (n *nodes) pushStmt(l []*Stmt, v *Stmt) []*Stmt {
	return push(n, func(n *nodes) *slab[*Stmt] { return &n.stmtLists }, l, v, 4)
}
func (n *nodes) pushOp(l []*BinOp, v *BinOp) []*BinOp {
	return push(n, func(n *nodes) *slab[*BinOp] { return &n.opLists }, l, v, 2)
}
func (n *nodes) pushArm(l []*ElseArm, v *ElseArm) []*ElseArm {
	return push(n, func(n *nodes) *slab[*ElseArm] { return &n.armLists }, l, v, 1)
}
