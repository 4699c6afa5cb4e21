package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// tokenCookie carries the token once a browser has shown it.
const tokenCookie = "frontier_token"

// NewToken returns a random token of 32 bytes, in hex.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Loopback reports whether addr (host:port) binds to loopback only: a
// loopback address, or localhost. An empty host binds every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard answers only reads, checks the token when there is one, and
// refuses a Host that is not this machine's loopback when there is none
// (a page of another site that renamed itself to 127.0.0.1, DNS
// rebinding, must not read the store).
type guard struct {
	token [32]byte // sha256 of the token
	open  bool     // no token: loopback only
	next  http.Handler
}

func newGuard(token string, next http.Handler) *guard {
	g := &guard{open: token == "", next: next}
	if token != "" {
		g.token = sha256.Sum256([]byte(token))
	}
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.URL.Path == "/favicon.ico" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// Browsers ask for it on their own, the 401 page included: an
		// empty answer holds nothing of the store, where a 401 would be a
		// failed load in the console of every page opened without the
		// token. The dashboard's own pages name an empty icon.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if g.open {
		if !loopbackHost(r.Host) {
			http.Error(w, "403 forbidden: this dashboard answers only to localhost; serve it with a token to reach it by another name", http.StatusForbidden)
			return
		}
	} else {
		given, fromQuery := g.given(r)
		if !g.valid(given) {
			h.Set("WWW-Authenticate", `Bearer realm="frontier"`)
			http.Error(w, "401 unauthorized", http.StatusUnauthorized)
			return
		}
		if fromQuery && (r.Method == http.MethodGet || r.Method == http.MethodHead) && !strings.HasPrefix(r.URL.Path, "/api/") {
			// A link with the token: keep it in a cookie and take it out
			// of the address bar, the history and the referrers.
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: given, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
				Secure: r.TLS != nil})
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: the dashboard only reads", http.StatusMethodNotAllowed)
		return
	}
	g.next.ServeHTTP(w, r)
}

// given is the token a request carries: an Authorization bearer, a token
// parameter (fromQuery), or the cookie.
func (g *guard) given(r *http.Request) (tok string, fromQuery bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(t), false
		}
		return "", false
	}
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" {
		return c.Value, false
	}
	return "", false
}

// valid compares in constant time: hashing first makes the time the same
// whatever the length of what was given.
func (g *guard) valid(given string) bool {
	if given == "" {
		return false
	}
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], g.token[:]) == 1
}

// loopbackHost reports whether a request's Host names this machine's
// loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// WithToken is u with the token parameter, for the address printed at
// start.
func WithToken(u, token string) string {
	if token == "" {
		return u
	}
	return u + "?token=" + url.QueryEscape(token)
}
