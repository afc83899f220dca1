package ir

// Object is a JSON object that keeps its keys in insertion order, so that
// generated schemas and the canonical IR read in a natural order (type
// first, properties in declaration order) and encode the same bytes on
// every run: the program hash depends on it. Objects are small, so a slice
// with linear lookup beats a map, and the first few members live inside
// the object (one allocation for a typical schema).
//
// Objects may be shared (the compiler's primitive schemas, protocol
// schemas): Clone one before changing it.
type Object struct {
	m      []member
	inline [4]member
}

// member is one key and value of an Object.
type member struct {
	k string
	v any
}

// NewObject returns an empty Object.
func NewObject() *Object {
	o := &Object{}
	o.m = o.inline[:0]
	return o
}

// Set sets key k to v, in place when k is present, else last; it returns
// o so that calls chain.
func (o *Object) Set(k string, v any) *Object {
	for i := range o.m {
		if o.m[i].k == k {
			o.m[i].v = v
			return o
		}
	}
	o.m = append(o.m, member{k, v})
	return o
}

// Get returns the value of key k and whether it is present.
func (o *Object) Get(k string) (any, bool) {
	for i := range o.m {
		if o.m[i].k == k {
			return o.m[i].v, true
		}
	}
	return nil, false
}

// Len is the number of keys.
func (o *Object) Len() int { return len(o.m) }

// Clone returns a shallow copy that can be changed without changing o.
func (o *Object) Clone() *Object {
	c := &Object{}
	c.m = append(c.inline[:0], o.m...)
	return c
}
