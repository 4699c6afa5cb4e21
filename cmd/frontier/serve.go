package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/dashboard"
	"github.com/frontier-bench/frontier/internal/store"
)

// serveOptions are the inputs of "frontier serve".
type serveOptions struct {
	addr string        // host:port; "" means the config's, else 127.0.0.1:8080
	poll time.Duration // how often the change feed looks for writes
}

// defaultServeAddr is where the dashboard listens unless told: loopback.
const defaultServeAddr = "127.0.0.1:8080"

func newServeCmd(g *globals) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a live dashboard of the store's searches, bench runs and evaluations (read-only)",
		Long: `Serve runs a web dashboard over the database: every search, bench run and
evaluation it holds, while searches write to it. New members, verdicts,
claims and progress arrive on open pages without a reload. It only reads:
it opens the database read-only (a SQLite file in WAL mode is read as it
is written, and never blocks a writer), and answers GET and HEAD only.

It listens on 127.0.0.1:8080 unless --addr (or serve.addr in the config)
says otherwise. On a loopback address it answers only requests addressed
to localhost. On any other address every request must carry a token
(serve.token in the config, else a random one made at start): the address
printed at start carries it once, then a cookie does; scripts send
"Authorization: Bearer TOKEN". A request without it gets 401.

Every page has its JSON under /api/ (docs/dashboard.md).`,
		Example: `  frontier serve
  frontier serve --addr 127.0.0.1:9000
  frontier serve --addr 0.0.0.0:8080     # off loopback: prints the address with its token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), g, o, nil)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", "", "address to listen on, host:port (default: serve.addr in the config, else "+defaultServeAddr+")")
	cmd.Flags().DurationVar(&o.poll, "poll", time.Second, "how often the dashboard looks for what searches wrote")
	return cmd
}

// runServe serves until ctx ends; ready, when set, is told the address
// it listens on (tests listen on port 0).
func runServe(ctx context.Context, g *globals, o serveOptions, ready func(url string)) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if o.poll <= 0 {
		return usage(fmt.Errorf("--poll %s: give a positive duration, such as 1s", o.poll))
	}
	addr := cmp.Or(o.addr, cfg.Serve.Addr, defaultServeAddr)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usage(fmt.Errorf("--addr %q: write host:port, such as %s: %w", addr, defaultServeAddr, err))
	}
	if noDatabase(cfg) {
		return fmt.Errorf("no database at %s: start a run with frontier evolve (or frontier demo), or point --db or --home at the right one", cfg.DBName())
	}
	st, err := store.OpenReader(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	token := cfg.Serve.Token
	if token == "" && !dashboard.Loopback(addr) {
		token = dashboard.NewToken()
	}
	srv, err := dashboard.New(st, dashboard.Options{Token: token, Poll: o.poll, Log: g.log})
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (is another program using that port? choose another with --addr): %w", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(g.stdout, "frontier serve: %s (database %s, read-only; Ctrl-C stops)\n", dashboard.WithToken(url, token), st.Location())
	if token != "" {
		fmt.Fprintf(g.stdout, "every request needs the token: open the address above once, or send Authorization: Bearer %s\n", token)
	}
	if ready != nil {
		ready(url)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	polled := make(chan error, 1)
	go func() { polled <- srv.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Event streams end when the poller stops; then the server is shut
	// down, waiting a little for requests under way.
	cancel()
	<-polled
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	if serr := hs.Shutdown(sctx); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
