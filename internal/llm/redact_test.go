package llm

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRedactFindsSecrets(t *testing.T) {
	cases := []struct{ in, want string }{
		{"key sk-proj-Abc123def456ghi789jkl012mno345 end", "key [REDACTED] end"},
		{"sk-ant-api03-AbCdEf0123456789_-xyzXYZ0123456789", "[REDACTED]"},
		{"OpenRouter sk-or-v1-0123456789abcdef0123456789abcdef", "OpenRouter [REDACTED]"},
		{"url?key=AIzaSyA1234567890abcdefghijklmnopqrstu&alt=sse", "url?key=[REDACTED]&alt=sse"},
		{"AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED]"},
		{"HF hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "HF [REDACTED]"},
		{"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "[REDACTED]"},
		{"AWS AKIAIOSFODNN7EXAMPLE!", "AWS [REDACTED]!"},
		{"Authorization: Bearer abc.DEF-123_456~789+xyz=", "Authorization: Bearer [REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt [REDACTED]"},
		{"OPENAI_API_KEY=abcdef0123456789abcdef0123456789", "OPENAI_API_KEY=[REDACTED]"},
		{`{"api_key": "Zx81QmT0pL2nV7rB5sK9"}`, `{"api_key": "[REDACTED]"}`},
		{"x-api-key: 9f3b2c1d0e4a5b6c7d8e9f0a1b2c3d4e", "x-api-key: [REDACTED]"},
		{"HF_TOKEN='hfAbCdEf0123456789ghij'", "HF_TOKEN='[REDACTED]'"},
		{"client_secret: GOCSPX-AbCdEfGhIjKlMnOp1234", "client_secret: [REDACTED]"},
		{"password=S3cr3tPassw0rd!!", "password=[REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if again := Redact(Redact(c.in)); again != Redact(c.in) {
			t.Errorf("not idempotent on %q: %q", c.in, again)
		}
	}
}

// Program code and output are full of words like token and secret, hashes
// and numbers; none of it may be touched.
func TestRedactLeavesCodeAlone(t *testing.T) {
	keep := []string{
		"tokens = tokenizer.encode(text)",
		"max_tokens = 1024",
		"token = 50256",
		`bos_token = "<|endoftext|>"`,
		"token_embedding = nn.Embedding(vocab_size, 768)",
		"self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)",
		"api_key = os.environ['OPENAI_API_KEY']",
		"token: batch_size_2048",
		"val_tokens: 10485760",
		`"input_tokens": 1234, "cached_tokens": 0`,
		"secret_sauce = compute()",
		"password = getpass()",
		"sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"commit 53d8541f0a3c2e1d9b8a7f6e5d4c3b2a1f0e9d8c",
		"step:100/1000 val_loss:3.2801 train_time:12345ms step_avg:123.45ms",
		"the task-scheduler-with-a-long-name runs; mask-of-the-attention-heads",
		"sk-learn style fit/predict",
		"token=layer.12.attn.c_proj",
		"Bearer token",
	}
	for _, s := range keep {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor("short", "my-local-server-password", "my-local-server-password-2", "")
	got := r.Redact("a my-local-server-password-2 b my-local-server-password c short sk-ant-api03-AbCdEf0123456789xyz")
	want := "a [REDACTED] b [REDACTED] c short [REDACTED]"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var nilR *Redactor
	if nilR.Redact("sk-proj-0123456789abcdefghij") != "[REDACTED]" {
		t.Error("a nil Redactor must still redact by shape")
	}
	if strings.Contains(NewRedactor().Redact("plain text"), RedactedMarker) {
		t.Error("plain text redacted")
	}
}

func BenchmarkRedactProgramOutput(b *testing.B) {
	line := "step:100/1000 val_loss:3.2801 train_time:12345ms step_avg:123.45ms tokens = tokenizer.encode(text)\n"
	s := strings.Repeat(line, 10000) // ~1 MB
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Redact(s)
	}
}

func TestRedactSeveralAssignmentsOnALine(t *testing.T) {
	in := "token=Yb81QmT0pL2nV7rB5sK9 api_key=Xa81QmT0pL2nV7rB5sK9 secret_key: 'Zc81QmT0pL2nV7rB5sK9'"
	want := "token=[REDACTED] api_key=[REDACTED] secret_key: '[REDACTED]'"
	if got := Redact(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	multi := "line one\nOPENAI_API_KEY=abcdef0123456789abcdef\nline three"
	if got := Redact(multi); got != "line one\nOPENAI_API_KEY=[REDACTED]\nline three" {
		t.Errorf("multi-line: %q", got)
	}
}

// redactByLine is Redact as it was written first: every line asked for
// every trigger in turn. Redact must do exactly what it does.
func redactByLine(s string) string {
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = pemBlock.ReplaceAllString(s, RedactedMarker)
	}
	lower := asciiLower(s)
	containsAny := func(s string, subs []string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start + 1
		}
		out := s[start:end]
		if containsAny(lower[start:end], assignmentWords) {
			out = redactAssignments(out, lower[start:end])
		}
		for _, r := range rules {
			if containsAny(lower[start:end], r.triggers) {
				out = r.apply(out)
			}
		}
		b.WriteString(out)
		start = end
	}
	return b.String()
}

// Redact finds the lines to look at in one pass over the text; it must
// redact what asking every line for every trigger redacts, on texts made
// of triggers, secrets, code and line breaks in random order.
func TestRedactScanMatchesLineByLine(t *testing.T) {
	parts := []string{
		"\n", "\n", "\n", " ", "x = 1", "token", "Token", "tokens = tok(text)", "key", "API_KEY = ", "api_key=",
		"sk-", "sk-ant-api03-", "Ab3dEf6hIj9kLm2nOp5q", "AIza", "SyA1234567890abcdefghijklmnopqrstu", "hf_", "ghp_",
		"github_pat_", "xoxb-", "gsk_", "r8_", "AKIA", "ASIA", "IOSFODNN7EXAMPLE", "eyJ", "hbGciOiJIUzI1NiJ9", ".",
		"Bearer ", "bearer\t", "?key=", "&access_token=", "secret: '", "'", "\"", "password", "passwd=", "é",
		"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "k", "s", "e",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 3000 {
		var sb strings.Builder
		for range r.IntN(40) {
			sb.WriteString(parts[r.IntN(len(parts))])
		}
		in := sb.String()
		if got, want := Redact(in), redactByLine(in); got != want {
			t.Fatalf("text %d %q:\ngot  %q\nwant %q", n, in, got, want)
		}
	}
	for _, in := range []string{"", "\n", "token", "x\ntoken = Yb81QmT0pL2nV7rB5sK9\ny", "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5q"} {
		if got, want := Redact(in), redactByLine(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// A prompt is mostly a training program: few of its lines hold a trigger.
func BenchmarkRedactPrompt(b *testing.B) {
	block := `class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)
        self.n_head, self.n_embd = config.n_head, config.n_embd

    def forward(self, x):
        B, T, C = x.size()  # batch, tokens, channels
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

def get_batch(split, step):
    tokens = train_tokens if split == "train" else val_tokens
    assert tokens.numel() > args.seq_len, "the shard is smaller than one sequence"
`
	s := strings.Repeat(block, 100<<10/len(block)) // ~100 KB
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Redact(s)
	}
}
