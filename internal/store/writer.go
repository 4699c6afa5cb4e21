package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"
)

// writer is a SQLite file's one connection for transactions: every
// transaction of the store runs on it, one at a time, while reads outside
// transactions take the others.
//
// SQLite lets one connection write at a time anyway (a transaction begins
// IMMEDIATE and waits for the lock), but a connection drops its whole
// cache of the database's pages when another connection wrote since its
// last transaction. With transactions spread over many connections, each
// one read the pages it changes again, from the file: the B-trees' upper
// levels, the ends of the tables a run appends to, the leaves of the
// indexes of hashes. One connection that writes keeps them cached, in a
// cache large enough for those of a large run (writerCacheKiB).
type writer struct {
	db    *sql.DB
	stmts *stmtCache
}

const (
	// writerCacheKiB is the writer's page cache (a SQLite connection
	// caches 2 MiB by default). It is used as pages are read, up to this.
	// 16 MiB cost less CPU per child than 64 in the engine's benchmark
	// (lower in 3 of 4 interleaved pairs at 10,000 programs, 2 of 2 at
	// 100,000); a profile at 100,000 showed commits walking the cache's
	// hash table (pcache1TruncateUnsafe), whose size follows the cache's.
	writerCacheKiB = 16 << 10
	// writerWait bounds the wait for the writer, as busy_timeout bounds
	// the wait for another process's write lock.
	writerWait = 10 * time.Second
)

// openWriter opens the writer of the SQLite database at dsn, whose
// pragmas are the store's own.
func openWriter(dsn string) (*writer, error) {
	db, err := sql.Open("sqlite", dsn+"&"+url.Values{"_pragma": {fmt.Sprintf("cache_size(-%d)", writerCacheKiB)}}.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	// Statements are prepared on the one connection, which a transaction
	// holds while it runs: a statement new to the cache is prepared once
	// the transaction that first ran it ends.
	return &writer{db: db, stmts: newDeferredStmtCache(db, sqliteStmts)}, nil
}

// begin starts a transaction on the writer, once the transaction that
// holds it ended.
func (w *writer) begin(ctx context.Context) (sqlTx, error) {
	wctx, cancel := context.WithTimeout(ctx, writerWait)
	conn, err := w.db.Conn(wctx)
	cancel()
	if err != nil {
		return sqlTx{}, fmt.Errorf("wait for the database's other writes (%s): %w", writerWait, err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return sqlTx{}, err
	}
	return sqlTx{Tx: tx, stmts: w.stmts, conn: conn}, nil
}

func (w *writer) close() error {
	w.stmts.close()
	return w.db.Close()
}
