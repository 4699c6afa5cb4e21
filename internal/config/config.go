// Package config reads frontier.yaml, the user's configuration: where state
// lives, which Python runs training programs, where on a Slurm cluster
// evaluations run, and the sections owned by other packages (llm, evolve).
// Unknown keys are errors.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// Config is frontier.yaml.
type Config struct {
	// Home holds the database, data and runs unless they are set apart.
	Home string `yaml:"home"`
	// DB is the database's location: a SQLite file's path (or
	// sqlite:PATH), or a PostgreSQL URL (postgres://...) that several
	// machines share; see store.ParseLocation.
	DB string `yaml:"db"`
	// DataDir holds track data, one folder per track.
	DataDir string `yaml:"data_dir"`
	// RunsDir holds one folder per evaluation.
	RunsDir string `yaml:"runs_dir"`
	// TracksDirs are searched for user tracks (folders with track.yaml).
	TracksDirs []string `yaml:"tracks_dirs"`
	// Python is the interpreter for training programs; empty means the
	// first of python3 on PATH and /usr/bin/python3 that imports torch.
	Python string `yaml:"python"`
	// Sandbox is auto, bwrap, landlock or none.
	Sandbox string `yaml:"sandbox"`
	// GPUs lists the GPU indices frontier may use, like "0,1,2,3"; empty
	// means CUDA_VISIBLE_DEVICES of frontier's own environment, else every
	// GPU PyTorch sees.
	GPUs string `yaml:"gpus"`
	// Data maps a track name to its data folder (for tracks whose data the
	// user brings, like nanogpt).
	Data map[string]string `yaml:"data"`
	// MaxProgramSize bounds every program frontier reads from a file or
	// stdin (eval's program and baseline, edit apply's program and
	// answer, track import's record).
	MaxProgramSize track.ByteSize `yaml:"max_program_size"`

	LLM    llm.Config    `yaml:"llm"`
	Evolve evolve.Config `yaml:"evolve"`
	// Executor is where evaluations run: "local" (this machine, the
	// default) or "slurm" (each phase a job on a node of the cluster the
	// slurm section describes; docs/cluster.md).
	Executor string `yaml:"executor"`
	// Slurm says where on a Slurm cluster evaluations run (docs/cluster.md).
	Slurm Slurm `yaml:"slurm"`
	// Serve configures frontier serve, the dashboard (docs/dashboard.md).
	Serve Serve `yaml:"serve"`

	// Path is the file this was read from; empty for defaults.
	Path string `yaml:"-"`

	// dbNamed: db: or FRONTIER_DB named the database, so a new home
	// (--home) does not move it.
	dbNamed bool
}

// The executors of evaluations.
const (
	ExecutorLocal = "local"
	ExecutorSlurm = "slurm"
)

// DefaultMaxProgramSize is the default of max_program_size. The longest
// speedrun record scripts are tens of kilobytes, and a record log (the
// script and its training log) a few hundred; 4 MiB leaves more than ten
// times that for a program with a table in it, while a data shard or a
// checkpoint named by mistake (megabytes to gigabytes) is refused before
// it is read, stored or sent to a model.
const DefaultMaxProgramSize = 4 << 20

// maxProgramSizeCap is the most max_program_size may be: the whole program
// is held in memory, stored in the database and shown to models.
const maxProgramSizeCap = 256 << 20

// Default returns the configuration used when there is no file.
func Default() *Config {
	c := &Config{Sandbox: "auto", MaxProgramSize: DefaultMaxProgramSize}
	c.SetHome(defaultHome())
	if db := os.Getenv("FRONTIER_DB"); db != "" {
		c.SetDB(db)
	}
	return c
}

// SetHome moves every path that derives from home: the database too,
// unless db: or FRONTIER_DB named it.
func (c *Config) SetHome(home string) {
	c.Home = home
	if !c.dbNamed {
		c.DB = filepath.Join(home, "frontier.db")
	}
	c.DataDir = filepath.Join(home, "data")
	c.RunsDir = filepath.Join(home, "runs")
}

// SetDB names the database (--db, FRONTIER_DB): a new home no longer
// moves it.
func (c *Config) SetDB(location string) {
	c.DB, c.dbNamed = location, true
}

// DBFile is the SQLite database's file; "" when the database is not a
// file of this machine (a PostgreSQL server).
func (c *Config) DBFile() string {
	loc, err := store.ParseLocation(c.DB)
	if err != nil {
		return ""
	}
	return loc.File()
}

// DBName names the database in messages: its file, or its URL without the
// password.
func (c *Config) DBName() string {
	loc, err := store.ParseLocation(c.DB)
	if err != nil {
		return c.DB
	}
	return loc.String()
}

// MakeDirs creates the state folders that do not exist yet (home, the
// database's folder, data and runs) private to this user: they hold every
// program, prompt and answer, and a program's run folder. Folders that
// exist keep their permissions.
func (c *Config) MakeDirs() error {
	dirs := []string{c.Home, c.DataDir, c.RunsDir}
	if f := c.DBFile(); f != "" {
		dirs = append(dirs, filepath.Dir(f))
	}
	for _, d := range dirs {
		if d == "" || d == "." {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create the state folder %s: %w", d, err)
		}
	}
	return nil
}

func defaultHome() string {
	if h := os.Getenv("FRONTIER_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "frontier")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "frontier")
	}
	return ".frontier"
}

// Load reads the config file at path. An empty path means $FRONTIER_CONFIG,
// else ./frontier.yaml when it exists, else the defaults.
func Load(path string) (*Config, error) {
	if path == "" {
		path = os.Getenv("FRONTIER_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("frontier.yaml"); err == nil {
			path = "frontier.yaml"
		}
	}
	if path == "" {
		return Default(), nil
	}
	b, err := yamlfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes a config file's bytes. Relative paths in the file are
// resolved against the file's folder.
func Parse(path string, b []byte) (*Config, error) {
	// Size, nesting and aliases first: every command reads this file.
	if err := yamlfile.Check(path, b); err != nil {
		return nil, err
	}
	c := Default()
	var raw struct {
		Home string  `yaml:"home"`
		DB   *string `yaml:"db"`
	}
	// Home first, so explicit db/data_dir/runs_dir override what it derives.
	if err := yaml.UnmarshalWithOptions(b, &raw); err == nil && raw.Home != "" {
		c.SetHome(resolve(path, raw.Home))
	}
	// Every unknown key, first to last, before the decoder would stop at
	// the first one.
	if err := yamlfile.Join(yamlfile.Inspect(path, b, c)); err != nil {
		return nil, err
	}
	// A file of comments only keeps the defaults: the decoder sets every
	// field to its zero value for an empty document.
	if !emptyYAML(b) {
		dec := yaml.NewDecoder(bytes.NewReader(b), yaml.Strict(), yaml.DisallowUnknownField())
		if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
			return nil, yamlfile.DecodeError(path, b, err)
		}
	}
	c.Path = path
	c.Home = resolve(path, c.Home)
	var errs []*yamlfile.Error
	if raw.DB != nil && *raw.DB == "" {
		// db: "" is the default.
		if env := os.Getenv("FRONTIER_DB"); env != "" {
			c.SetDB(env)
		} else {
			c.DB, c.dbNamed = filepath.Join(c.Home, "frontier.db"), false
		}
	} else if raw.DB != nil {
		c.dbNamed = true
		if loc, err := store.ParseLocation(c.DB); err != nil {
			errs = append(errs, &yamlfile.Error{Path: "db", Msg: err.Error()})
		} else if f := loc.File(); f != "" {
			// A file's path is relative to this file's folder.
			c.DB = resolve(path, f)
		}
	}
	c.DataDir = resolve(path, c.DataDir)
	c.RunsDir = resolve(path, c.RunsDir)
	for i, d := range c.TracksDirs {
		c.TracksDirs[i] = resolve(path, d)
	}
	for k, v := range c.Data {
		c.Data[k] = resolve(path, v)
	}
	c.Slurm.Bin = resolve(path, c.Slurm.Bin)
	for _, err := range []error{c.LLM.Validate(), c.Evolve.Validate(), c.Slurm.Validate()} {
		errs = append(errs, keyErrors(err)...)
	}
	switch c.Sandbox {
	case "", "auto", "bwrap", "landlock", "none":
	default:
		errs = append(errs, &yamlfile.Error{Path: "sandbox", Msg: fmt.Sprintf("%q: use auto, bwrap, landlock or none", c.Sandbox)})
	}
	switch c.Executor {
	case "", ExecutorLocal, ExecutorSlurm:
	default:
		errs = append(errs, &yamlfile.Error{Path: "executor", Msg: fmt.Sprintf("%q: use local or slurm", c.Executor)})
	}
	if t := c.Serve.Token; t != "" && len(t) < minServeToken {
		errs = append(errs, &yamlfile.Error{Path: "serve.token", Msg: fmt.Sprintf("%d characters: a token must have at least %d (leave it out and frontier serve makes a random one)", len(t), minServeToken)})
	}
	if c.MaxProgramSize <= 0 || c.MaxProgramSize > maxProgramSizeCap {
		errs = append(errs, &yamlfile.Error{Path: "max_program_size", Msg: fmt.Sprintf("%d bytes: must be more than 0 and at most 256MiB (default 4MiB)", c.MaxProgramSize)})
	}
	yamlfile.Locate(path, b, errs)
	if err := yamlfile.Join(errs); err != nil {
		return nil, err
	}
	return c, nil
}

// emptyYAML says whether src holds no values: nothing, comments, or
// empty documents. A file that does not parse is not empty: decoding it
// reports the syntax error.
func emptyYAML(src []byte) bool {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return false
	}
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		if _, null := doc.Body.(*ast.NullNode); !null {
			return false
		}
	}
	return true
}

// keyErrors splits the errors of a section's Validate, each of which starts
// with the key it is about ("evolve.islands: ..."), into errors that
// Locate can place.
func keyErrors(err error) []*yamlfile.Error {
	if err == nil {
		return nil
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	out := make([]*yamlfile.Error, 0, len(list))
	for _, e := range list {
		path, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok || strings.ContainsAny(path, "\n") {
			path, msg = "", e.Error()
		}
		out = append(out, &yamlfile.Error{Path: path, Msg: msg})
	}
	return out
}

func resolve(file, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if len(p) > 1 && p[:2] == "~/" {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return filepath.Join(filepath.Dir(file), p)
}

// Serve configures the dashboard that frontier serve runs.
type Serve struct {
	// Addr is the address it listens on (host:port); empty means
	// 127.0.0.1:8080. --addr overrides it.
	Addr string `yaml:"addr"`
	// Token is what every request must carry when the dashboard listens
	// off loopback (and, when set, on loopback too); empty: a random token
	// is made at each start and printed.
	Token string `yaml:"token"`
}

// minServeToken is the shortest token serve.token may hold: a token
// guessed is the store read.
const minServeToken = 16
