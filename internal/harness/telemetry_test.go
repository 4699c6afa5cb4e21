package harness

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTelemetry(t *testing.T) {
	in := strings.Join([]string{
		`{"event":"run_start","t_ms":1,"mode":"full","torch":"2.5.0","threads":2,"world_size":1,"fingerprint":{"cpu":"x"}}`,
		`not json at all`,
		``,
		`   `,
		`[1,2,3]`,
		`{"no_event":true}`,
		`{"event":"step","t_ms":2,"step":9,"train_time_ms":100,"step_avg_ms":10,"tokens":640,"tokens_per_s":6400,"train_loss":3.5}`,
		`{"event":"step","t_ms":3,"step":19,"train_time_ms":200,"step_avg_ms":10,"tokens":1280,"tokens_per_s":6400,"train_loss":null}`,
		`{"event":"step","t_ms":3,"step":"nineteen"}`,
		`{"event":"val","t_ms":4,"step":20,"val_loss":2.5,"tokens":4096,"seq_len":64,"ms":5}`,
		`{"event":"warning","t_ms":4,"code":"compile_budget","message":"slow"}`,
		`{"event":"from_the_future","t_ms":4,"x":1}`,
		`{"event":"val","t_ms":5,"step":30,"val_loss":2.25,"tokens":4096,"seq_len":64,"ms":5,"final":true}`,
		`{"event":"probe","t_ms":6,"ok":false,"sequences":2,"perturbations":8,"leak":{"kind":"future","row":1,"perturbed":9,"position":3,"size":0.5},"message":"leak"}`,
		`{"event":"sections","t_ms":6,"sections":[{"name":"forward","total_ms":50,"avg_ms":5,"pct":25,"calls":10}]}`,
		`{"event":"top_ops","t_ms":6,"kind":"cpu","steps":[5,7],"ops":[{"name":"aten::mm","total_ms":3,"calls":6}]}`,
		`{"event":"memory","t_ms":6,"peak_rss_mb":300.5}`,
		`{"event":"checks","t_ms":6,"validations":3,"calls":28,"extra_calls":5,"noise":0,"drift":null}`,
		`{"event":"final","t_ms":7,"steps":30,"train_time_ms":300,"step_avg_ms":10,"tokens":1920,"tokens_per_s":6400,"val_loss":2.25,"val_tokens":4096,"pre_train_ms":1500}`,
		`{"event":"final","t_ms":8,"steps":99,"val_loss":0.1}`,
		`{"event":"error","t_ms":9,"kind":"RuntimeError","code":"exception","message":"first","traceback":"Traceback","step":3,"rank":1}`,
		`{"event":"error","t_ms":10,"kind":"SIGTERM","code":"terminated","message":"second","traceback":"","step":3}`,
		`{"event":"step","t_ms":11,"step":29,"train_time_ms":300,"step_avg_ms":10,"tokens":1920,"tokens_per_s":6400}`, // no newline at the end
	}, "\n")
	tel, err := ReadTelemetry(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// not json, [1,2,3], no event, bad step field.
	if tel.Skipped != 4 || tel.TooLong != 0 || tel.Unknown != 1 {
		t.Errorf("skipped %d, too long %d, unknown %d; want 4, 0, 1", tel.Skipped, tel.TooLong, tel.Unknown)
	}
	if tel.RunStart == nil || tel.RunStart.Torch != "2.5.0" || tel.RunStart.Fingerprint.CPU != "x" {
		t.Errorf("run_start %+v", tel.RunStart)
	}
	if len(tel.Steps) != 3 || tel.Steps[0].TrainLoss == nil || *tel.Steps[0].TrainLoss != 3.5 ||
		tel.Steps[1].TrainLoss != nil || tel.Steps[2].Step != 29 {
		t.Errorf("steps %+v", tel.Steps)
	}
	if len(tel.Vals) != 2 || tel.FinalVal() == nil || tel.FinalVal().ValLoss != 2.25 {
		t.Errorf("vals %+v", tel.Vals)
	}
	if tel.Final == nil || tel.Final.Steps != 30 || tel.Finals != 2 {
		t.Errorf("final %+v (of %d): want the first of 2", tel.Final, tel.Finals)
	}
	if tel.Error == nil || tel.Error.Message != "first" || tel.Error.Rank != 1 || len(tel.Errors) != 2 {
		t.Errorf("error %+v, errors %+v", tel.Error, tel.Errors)
	}
	if tel.Probe == nil || tel.Probe.OK || tel.Probe.Leak == nil || tel.Probe.Leak.Position != 3 {
		t.Errorf("probe %+v", tel.Probe)
	}
	if len(tel.Sections) != 1 || tel.Sections[0].Calls != 10 || tel.TopOps == nil || tel.TopOps.Ops[0].Name != "aten::mm" {
		t.Errorf("sections %+v top_ops %+v", tel.Sections, tel.TopOps)
	}
	if tel.Memory == nil || tel.Memory.PeakRSSMB != 300.5 || len(tel.Warnings) != 1 || tel.Warnings[0].Code != WarnCompileBudget {
		t.Errorf("memory %+v warnings %+v", tel.Memory, tel.Warnings)
	}
	if c := tel.Checks; c == nil || c.Validations != 3 || c.Calls != 28 || c.ExtraCalls != 5 ||
		c.Noise == nil || *c.Noise != 0 || c.Drift != nil {
		t.Errorf("checks %+v", tel.Checks)
	}
	// Every decoded line is kept raw, the unknown kind included.
	if len(tel.Lines) != 17 || !bytes.Contains(tel.Lines[5], []byte("from_the_future")) {
		t.Errorf("%d raw lines; want 17", len(tel.Lines))
	}
}

func TestReadTelemetryHugeLine(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"event":"val","t_ms":1,"step":1,"val_loss":3,"tokens":64,"seq_len":64,"ms":1}` + "\n")
	b.WriteString(`{"event":"warning","message":"`)
	b.Write(bytes.Repeat([]byte("x"), 3*MaxLineBytes))
	b.WriteString(`"}` + "\n")
	b.Write(bytes.Repeat([]byte("y"), MaxLineBytes+10)) // unterminated, at EOF
	b.WriteString("\n")
	b.WriteString(`{"event":"final","t_ms":2,"steps":1,"val_loss":3,"val_tokens":64}`)
	tel, err := ReadTelemetry(&b)
	if err != nil {
		t.Fatal(err)
	}
	if tel.TooLong != 2 || len(tel.Warnings) != 0 || len(tel.Vals) != 1 || tel.Final == nil {
		t.Errorf("too long %d, warnings %d, vals %d, final %v", tel.TooLong, len(tel.Warnings), len(tel.Vals), tel.Final)
	}
	// A line of exactly the limit (newline included) is still read.
	pad := MaxLineBytes - len(`{"event":"warning","message":""}`+"\n")
	line := `{"event":"warning","message":"` + strings.Repeat("z", pad) + `"}` + "\n"
	tel, err = ReadTelemetry(strings.NewReader(line))
	if err != nil || len(tel.Warnings) != 1 || tel.TooLong != 0 {
		t.Errorf("line at the limit: err %v, warnings %d, too long %d", err, len(tel.Warnings), tel.TooLong)
	}
}

type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

func TestReadTelemetryReaderError(t *testing.T) {
	in := `{"event":"final","t_ms":2,"steps":1,"val_loss":3,"val_tokens":64}` + "\n" + `{"event":"memory","t_ms":2,"peak_rss_mb":1}`
	tel, err := ReadTelemetry(failingReader{strings.NewReader(in)})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
	if tel == nil || tel.Final == nil || tel.Memory == nil {
		t.Errorf("lines read before the error are lost: %+v", tel)
	}
}

func validConfig(dir string) Config {
	return Config{
		Schema: ConfigSchema, Track: "tiny", Mode: ModeFull,
		TrainFiles: []string{"train.bin"}, DataDir: filepath.Join(dir, DataDir),
		VocabSize: 256, BOSID: 255, ValSeqLen: 256, ValBatchSeqs: 8,
		Seed: 1, Device: "cpu", Threads: 2, FastSteps: 5, LogEvery: 10, TopK: 15,
		ProfileSteps: []int{10, 12}, JudgeFD: 3,
	}
}

func validJudgeConfig(dir string) JudgeConfig {
	return JudgeConfig{
		Mode: ModeFull, VocabSize: 256, BOSID: 255, Device: "cpu",
		ValFile: filepath.Join(dir, "val.bin"), ValTokens: 4096, FastValTokens: 1024, ValSeqLen: 256, ValBatchSeqs: 8,
		TrainFiles: []string{filepath.Join(dir, "train.bin")}, WorldSize: 1, FastSteps: 5, LogEvery: 10,
		Verify: VerifyConfig{MaxValidationShare: 0.25, ValidationAllowanceMs: 5000},
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	if err := validConfig(dir).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"schema", func(c *Config) { c.Schema = 1 }, "schema is 1"},
		{"mode", func(c *Config) { c.Mode = "quick" }, `mode is "quick"`},
		{"level", func(c *Config) { c.TelemetryLevel = "some" }, `telemetry_level is "some"`},
		{"vocab", func(c *Config) { c.VocabSize = 70000 }, "vocab_size is 70000"},
		{"bos", func(c *Config) { c.BOSID = 256 }, "bos_id 256 is outside"},
		{"train name", func(c *Config) { c.TrainFiles = []string{"../x.bin"} }, `train file "../x.bin" is not a base name`},
		{"data dir", func(c *Config) { c.DataDir = "rel" }, "data_dir \"rel\" is not an absolute path"},
		{"device", func(c *Config) { c.Device = "tpu" }, `device is "tpu"`},
		{"profile", func(c *Config) { c.ProfileSteps = []int{5, 2} }, "profile_steps is [5 2]"},
		{"judge fd", func(c *Config) { c.JudgeFD = 0 }, "judge_fd is 0"},
		{"negative", func(c *Config) { c.LogEvery = -1 }, "must not be negative"},
	}
	for _, tc := range cases {
		c := validConfig(dir)
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestJudgeConfigValidate(t *testing.T) {
	dir := t.TempDir()
	if err := validJudgeConfig(dir).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*JudgeConfig)
		want   string
	}{
		{"val tokens", func(c *JudgeConfig) { c.ValTokens = 1000 }, "val_tokens 1000 is not a positive multiple of val_seq_len 256"},
		{"fast val", func(c *JudgeConfig) { c.Mode = ModeFast; c.FastValTokens = 0 }, "fast_val_tokens 0"},
		{"val file", func(c *JudgeConfig) { c.ValFile = "val.bin" }, "is not an absolute path"},
		{"train file", func(c *JudgeConfig) { c.TrainFiles = []string{"t.bin"} }, "is not an absolute path"},
		{"noise", func(c *JudgeConfig) { c.Verify.MaxNoise = -1 }, "verify.max_noise"},
		{"initial", func(c *JudgeConfig) { c.Verify.MinInitialLoss = math.Inf(1) }, "verify.min_initial_loss"},
		{"share", func(c *JudgeConfig) { c.Verify.MaxValidationShare = -0.5 }, "verify.max_validation_share"},
	}
	for _, tc := range cases {
		c := validJudgeConfig(dir)
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestMaterializeAndConfig(t *testing.T) {
	dir := t.TempDir()
	for range 2 { // a second call replaces the read-only files
		hdir, err := Materialize(dir)
		if err != nil {
			t.Fatal(err)
		}
		if hdir != filepath.Join(dir, Dir) {
			t.Errorf("harness dir %s", hdir)
		}
		for _, name := range clientFiles {
			fi, err := os.Stat(filepath.Join(hdir, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o444 || fi.Size() < 1000 {
				t.Errorf("%s: mode %v size %d", name, fi.Mode().Perm(), fi.Size())
			}
		}
		// The judge's files never go where the program can read them.
		for _, name := range judgeFiles {
			if _, err := os.Stat(filepath.Join(hdir, name)); err == nil {
				t.Errorf("%s is in the program's harness folder", name)
			}
		}
	}
	cfg := validConfig(dir)
	path := filepath.Join(dir, ConfigFile)
	if err := WriteConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.JudgeFD != 3 || got.DataDir != cfg.DataDir || len(got.TrainFiles) != 1 {
		t.Errorf("round trip: %+v", got)
	}
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"val", "telemetry", "key"} {
		if strings.Contains(string(b), secret) && secret != "val" {
			t.Errorf("the program's config mentions %q:\n%s", secret, b)
		}
	}
	if strings.Contains(string(b), "val_file") || strings.Contains(string(b), "val_tokens") {
		t.Errorf("the program's config names the validation data:\n%s", b)
	}
}

func TestCommand(t *testing.T) {
	cfg := validConfig("/r")
	argv, env := Command("/usr/bin/python3", "/r", cfg)
	want := []string{"/usr/bin/python3", "-u", "/r/_frontier/frontier_boot.py", "/r/train.py"}
	if strings.Join(argv, " ") != strings.Join(want, " ") {
		t.Errorf("argv %q, want %q", argv, want)
	}
	joined := strings.Join(env, "\n")
	for _, kv := range []string{"FRONTIER_CONFIG=/r/config.json", "PYTHONPATH=/r/_frontier", "PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=2", "OPENBLAS_NUM_THREADS=1", "OMP_WAIT_POLICY=PASSIVE"} {
		if !strings.Contains(joined, kv) {
			t.Errorf("env lacks %s:\n%s", kv, joined)
		}
	}
	cfg.WorldSize = 4
	argv, _ = Command("python3", "/r", cfg)
	if strings.Join(argv, " ") != "python3 -u /r/_frontier/frontier_boot.py --nproc=4 /r/train.py" {
		t.Errorf("argv %q", argv)
	}
}
