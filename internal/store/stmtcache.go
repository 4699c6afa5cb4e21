package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the store's queries prepared, by their text, so that
// SQLite parses a query once per connection instead of on every call: the
// parser took a fifth of the CPU an evolution run spends per child
// (BenchmarkEngine). PostgreSQL needs none: pgx keeps each connection's
// statements prepared itself.
//
// The queries built for a number of keys (IN lists, multi-row inserts)
// come in many shapes; the least recently used statement makes room for a
// new one, and is closed once no call holds it.
type stmtCache struct {
	db  *sql.DB
	max int
	// deferred: a statement new to the cache is prepared in the
	// background, and the call that asked for it runs its query as it is
	// (see newDeferredStmtCache).
	deferred bool

	mu      sync.Mutex
	byText  map[string]*cachedStmt
	pending map[string]bool // deferred: being prepared
	clock   uint64
	closed  bool
}

type cachedStmt struct {
	text string
	stmt *sql.Stmt
	// used is the cache's clock when the statement was last handed out;
	// refs counts the calls that hold it; evicted is set once it left the
	// cache, to be closed when refs reaches 0.
	used    uint64
	refs    int
	evicted bool
}

// newStmtCache returns a cache of at most max statements of db.
func newStmtCache(db *sql.DB, max int) *stmtCache {
	return &stmtCache{db: db, max: max, byText: make(map[string]*cachedStmt, max)}
}

// newDeferredStmtCache returns a cache of at most max statements of db,
// whose one connection the caller may hold (in a transaction) when it
// asks for a statement: preparing it then would wait for the connection
// for ever.
func newDeferredStmtCache(db *sql.DB, max int) *stmtCache {
	c := newStmtCache(db, max)
	c.deferred, c.pending = true, map[string]bool{}
	return c
}

// get returns the statement for q, prepared on first use and held until
// release; nil when there is no cache or q cannot be prepared (the caller
// then runs q as it is, which reports the error), and, for a deferred
// cache, while q is being prepared.
func (c *stmtCache) get(ctx context.Context, q string) *cachedStmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.clock++
	if st, ok := c.byText[q]; ok {
		st.used, st.refs = c.clock, st.refs+1
		c.mu.Unlock()
		return st
	}
	if c.deferred {
		if !c.pending[q] {
			c.pending[q] = true
			go c.prepareLater(q)
		}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()

	// Prepared outside the lock: another call may prepare q meanwhile,
	// and the first one in keeps its statement.
	stmt, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.byText[q]; ok || c.closed {
		go stmt.Close()
		if !ok {
			return nil
		}
		st.used, st.refs = c.clock, st.refs+1
		return st
	}
	if len(c.byText) >= c.max {
		c.evictOldest()
	}
	st := &cachedStmt{text: q, stmt: stmt, used: c.clock, refs: 1}
	c.byText[q] = st
	return st
}

// prepareLater prepares q for a deferred cache, once the connection is
// free, and adds it.
func (c *stmtCache) prepareLater(q string) {
	stmt, err := c.db.PrepareContext(context.Background(), q)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, q)
	if err != nil {
		return
	}
	if _, ok := c.byText[q]; ok || c.closed {
		go stmt.Close()
		return
	}
	if len(c.byText) >= c.max {
		c.evictOldest()
	}
	c.byText[q] = &cachedStmt{text: q, stmt: stmt, used: c.clock}
}

// evictOldest removes the least recently used statement; c.mu is held.
func (c *stmtCache) evictOldest() {
	var old *cachedStmt
	for _, st := range c.byText {
		if old == nil || st.used < old.used {
			old = st
		}
	}
	if old == nil {
		return
	}
	delete(c.byText, old.text)
	old.evicted = true
	if old.refs == 0 {
		go old.stmt.Close()
	}
}

// release gives back a statement that get returned. database/sql keeps a
// closed statement's connections prepared until the rows and transactions
// that use it are done, so that a call only needs to hold it until it
// returns.
//
// A statement is closed in a goroutine of its own: closing waits for each
// connection it was prepared on, and one of them may be waiting for the
// database's lock, which the transaction that evicted it may hold.
func (c *stmtCache) release(st *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.refs--
	if st.evicted && st.refs == 0 {
		go st.stmt.Close()
	}
}

// close closes every statement not in use (the others close on release).
func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, st := range c.byText {
		delete(c.byText, q)
		st.evicted = true
		if st.refs == 0 {
			st.stmt.Close()
		}
	}
}
