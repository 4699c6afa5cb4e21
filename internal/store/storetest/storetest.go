// Package storetest checks the contract every implementation of frontier's
// store (store.Store) must keep: SQLite and PostgreSQL. Its
// tests are what "nothing is lost" rests on: every write is visible once
// the call returns, a transaction is all or nothing and outlives a
// canceled context, lists come back in their documented order, the
// queries resume relies on (lost calls, interrupted and finished
// evaluations) select exactly their rows, two processes that write to
// one database lose nothing, and an evaluation a dead process left running
// is found by the next, and a run that a live process runs is refused to
// another while a dead one's is taken over.
//
// An implementation's test calls Run with a function that opens a fresh,
// empty store, and Processes, Orphans and Claims with one that opens a
// store by location, from this process and from a helper process; its
// TestMain calls HelperMain first so that the helper process does its part
// and exits. Location and Open give the tests of other packages a store of
// each dialect.
package storetest
