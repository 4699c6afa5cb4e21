// Package dashboard is frontier serve: a web application over the store
// that shows every search, bench run and evaluation while searches write
// them. Pages are rendered on the server from internal/runview (the values
// `frontier runs show` prints) and the figures are the static report's
// (internal/report); a little JavaScript follows a server-sent event
// stream fed by runview's change feed, so that new members, verdicts,
// claims and progress arrive without a reload. Every page has its JSON
// under /api/ (docs/dashboard.md).
//
// It never writes: it opens the store for reading, and answers GET and
// HEAD only. Off loopback, every request must carry the token (compared in
// constant time); a request without it gets 401 and nothing else, but for
// the browser's own request of /favicon.ico, which gets an empty 204.
package dashboard
