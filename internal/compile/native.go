package compile

// Stmt is one lowered statement of a native tool body. The helper that
// builds the compiler defines the concrete statement and expression types.
type Stmt interface{ stmt() }
