package propose

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/edit/pysrc"
)

// Mutate is the non-LLM baseline: it perturbs one or a few numeric
// hyperparameters of the parent and writes the change as SEARCH/REPLACE
// blocks, which then go through edit.Parse and edit.Apply like a model's
// answer.
//
// It finds assignments (module constants, dataclass fields such as
// "num_iterations : int = 1750") and keyword arguments (such as
// "lr=1e-3, betas=(0.9, 0.95)" in an optimizer call), recognizes what they
// are by name (learning rates, betas and momentum, Adam eps, weight decay,
// warmup and cooldown fractions, warmup and cooldown steps, total steps,
// batch and sequence sizes, model width, heads, layers, dropout, gradient
// clipping) and perturbs them within sane ranges while keeping their type:
// learning rates move on a log scale, ints stay ints, powers of two stay
// powers of two, fractions stay in [0, 1), betas in (0, 1), and the head
// count keeps dividing the width (with an even head size) where both are
// visible. Names it does not know, validation settings, seeds and
// vocabulary sizes are left alone, and so are protected regions.
//
// A parent measured under the track's target has loss to spare, and the
// cheapest way to spend it is to train less: then the first attempt from
// the parent, a third of the later ones and half of those whose attempt is
// not known shorten the run (the total step count, and the step counts of
// the warmup and cooldown with it), by a cut drawn from [15%, 30%] scaled
// down when the margin is under 0.15 nats, and change nothing else. The
// second attempt, when the margin is at least 0.1 nats and the program
// sets one layer count of 2 or more, trains a smaller model instead: one
// layer fewer, nothing else. The search keeps the programs whose loss
// still makes the target. The first attempt always spends it, and the
// second wherever a layer can go, so that a short search (the demo's six
// children) cannot miss the cheapest speedups by chance.
//
// The same seed, parent and margin always give the same proposal.
type Mutate struct {
	// MaxChanges is the most hyperparameters one proposal changes; each
	// proposal changes between 1 and MaxChanges. Zero means 2.
	MaxChanges int
}

// NewMutate returns the baseline proposer with default settings.
func NewMutate() *Mutate { return &Mutate{} }

// category is what a hyperparameter is, as far as its name tells.
type category int

const (
	catLR category = iota + 1
	catBeta
	catEps
	catWeightDecay
	catFraction
	catDropout
	catClip
	catPhaseSteps // warmup / cooldown step counts
	catTotalSteps
	catBatch
	catSeqLen
	catWidth
	catHeads
	catLayers
)

var categoryNames = map[category]string{
	catLR: "learning rate", catBeta: "beta", catEps: "eps", catWeightDecay: "weight decay",
	catFraction: "fraction", catDropout: "dropout", catClip: "gradient clip",
	catPhaseSteps: "phase steps", catTotalSteps: "total steps", catBatch: "batch size",
	catSeqLen: "sequence length", catWidth: "width", catHeads: "heads", catLayers: "layers",
}

// intCategory reports whether a category holds counts.
func (c category) isInt() bool { return c >= catPhaseSteps }

var (
	// excludeRe matches names that must not be tuned: they belong to the
	// environment (validation, data, seeds) or are bookkeeping.
	excludeRe = regexp.MustCompile(`(?i)(^|_)(val|valid|validation|eval|seed|vocab|bos|eos|rank|world|device|log|save|print|every|checkpoint|ckpt|pad|token_id|id)(_|$)|^(val|eval)`)
	nameCats  = []struct {
		re  *regexp.Regexp
		cat category
	}{
		{regexp.MustCompile(`(?i)(warmup|cooldown|warmdown|decay)_?(iters|iterations|steps)$`), catPhaseSteps},
		{regexp.MustCompile(`(?i)(^|_)betas?\d?$|^beta\d?_|momentum`), catBeta},
		{regexp.MustCompile(`(?i)(^|_)(eps|epsilon)$`), catEps},
		{regexp.MustCompile(`(?i)weight_decay|(^|_)wd$`), catWeightDecay},
		{regexp.MustCompile(`(?i)dropout|(^|_)p_drop$`), catDropout},
		{regexp.MustCompile(`(?i)(frac|fraction|ratio|pct)$`), catFraction},
		{regexp.MustCompile(`(?i)grad_clip|clip_grad|max_norm|grad_norm_clip|(^|_)clip$`), catClip},
		{regexp.MustCompile(`(?i)(^|_)(lr|lrs|learning_rate)(_|$)|_lr$`), catLR},
		{regexp.MustCompile(`(?i)^(num_iterations|num_iters|num_steps|max_steps|max_iters|total_steps|train_steps|n_steps|n_iters|iterations|total_iters|num_train_steps|steps)$`), catTotalSteps},
		{regexp.MustCompile(`(?i)batch_size|batch_tokens|(^|_)bs$|micro_batch|grad_accum|accum_steps`), catBatch},
		{regexp.MustCompile(`(?i)seq_len|sequence_length|seqlen|block_size|context_length|ctx_len|max_len$`), catSeqLen},
		{regexp.MustCompile(`(?i)^(n_embd|n_embed|d_model|model_dim|hidden_size|hidden_dim|embed_dim|emb_dim|width|dim)$`), catWidth},
		{regexp.MustCompile(`(?i)^(n_head|n_heads|num_heads|nheads|num_attention_heads|heads)$`), catHeads},
		{regexp.MustCompile(`(?i)^(n_layer|n_layers|num_layers|nlayers|num_hidden_layers|depth|layers)$`), catLayers},
	}

	num     = `(?:\d[\d_]*\.?[\d_]*(?:[eE][-+]?\d+)?|\.\d[\d_]*(?:[eE][-+]?\d+)?)`
	intLit  = `\d[\d_]*`
	valueRe = `\(\s*` + num + `\s*,\s*` + num + `\s*,?\s*\)|` + intLit + `(?:\s*\*\s*` + intLit + `)+|` + num
	// assignRe finds "name = value" and "name : type = value" at the start
	// of a line, and keyword arguments "name=value" after "(" or ",".
	assignRe = regexp.MustCompile(`(?:^|[(,\s])([A-Za-z_][\w.]*)(\s*:[^=()\n]*?)?\s*=\s*(` + valueRe + `)`)
	numRe    = regexp.MustCompile(num)
)

// param is one tunable number in the program.
type param struct {
	name  string // as written, e.g. "lr", "args.lr"
	cat   category
	line  int // 0-based line
	start int // byte offsets of the literal within the line
	end   int
	lit   string // the literal, e.g. "3e-3", "8*64*1024"
	elem  int    // tuple element, or -1
	value float64
	// factors is the product's factors for a literal like 8*64*1024.
	factors []int64
}

func (p param) label() string {
	short := p.name[strings.LastIndex(p.name, ".")+1:]
	if p.elem >= 0 {
		return fmt.Sprintf("%s[%d]", short, p.elem)
	}
	return short
}

// classify returns the category of a name, or 0.
func classify(name string, keyword bool) category {
	short := name[strings.LastIndex(name, ".")+1:]
	if excludeRe.MatchString(short) {
		return 0
	}
	for _, nc := range nameCats {
		if nc.re.MatchString(short) {
			// A bare "dim=" keyword is a tensor axis far more often than a width.
			if nc.cat == catWidth && keyword && strings.EqualFold(short, "dim") {
				return 0
			}
			return nc.cat
		}
	}
	return 0
}

// findParams returns the tunable numbers of a program outside its
// protected regions.
func findParams(src []byte) ([]param, error) {
	regions, err := edit.Regions(src)
	if err != nil {
		return nil, err
	}
	masked, _ := pysrc.Mask(src)
	lines := strings.Split(string(masked), "\n")
	inRegion := func(i int) bool {
		for _, r := range regions {
			if i+1 >= r.StartLine && i+1 <= r.EndLine {
				return true
			}
		}
		return false
	}
	var out []param
	for i, l := range lines {
		if inRegion(i) || !strings.Contains(l, "=") {
			continue
		}
		for _, m := range assignRe.FindAllStringSubmatchIndex(l, -1) {
			nameStart, nameEnd := m[2], m[3]
			valStart, valEnd := m[6], m[7]
			name := l[nameStart:nameEnd]
			// A dotted name is an attribute assignment only at the start of a
			// line; "a.b=1" inside a call is not a keyword argument.
			atStart := strings.TrimSpace(l[:nameStart]) == ""
			if strings.Contains(name, ".") && !atStart {
				continue
			}
			if m[4] >= 0 && !atStart {
				continue // an annotation only follows a name at the start of a line
			}
			if !valueEnds(l, valEnd) || !equalsIsAssignment(l, m) {
				continue
			}
			cat := classify(name, !atStart)
			if cat == 0 {
				continue
			}
			lit := l[valStart:valEnd]
			out = append(out, literalParams(name, cat, i, valStart, lit)...)
		}
	}
	return out, nil
}

// valueEnds reports whether the literal ending at end is a whole value: it
// is followed only by white space, a comma, a closing bracket or ";".
func valueEnds(l string, end int) bool {
	rest := strings.TrimLeft(l[end:], " \t\r")
	return rest == "" || strings.ContainsRune(",);]}", rune(rest[0]))
}

// equalsIsAssignment rejects "==", "<=", ">=", "!=" and augmented
// assignments, which the pattern cannot exclude by itself.
func equalsIsAssignment(l string, m []int) bool {
	eq := strings.IndexByte(l[m[3]:m[6]], '=')
	if eq < 0 {
		return false
	}
	eq += m[3]
	if eq+1 < len(l) && l[eq+1] == '=' {
		return false
	}
	if eq > 0 && strings.ContainsRune("=!<>+-*/%&|^@", rune(l[eq-1])) {
		return false
	}
	return true
}

// literalParams turns one literal into params: a number, a product of
// ints, or a pair of betas.
func literalParams(name string, cat category, line, start int, lit string) []param {
	p := param{name: name, cat: cat, line: line, start: start, end: start + len(lit), lit: lit, elem: -1}
	switch {
	case strings.HasPrefix(lit, "("):
		if cat != catBeta {
			return nil
		}
		var out []param
		for k, m := range numRe.FindAllStringIndex(lit, 2) {
			v, ok := parseNum(lit[m[0]:m[1]])
			if !ok || v <= 0 || v >= 1 {
				return nil
			}
			out = append(out, param{name: name, cat: cat, line: line, start: start + m[0], end: start + m[1], lit: lit[m[0]:m[1]], elem: k, value: v})
		}
		return out
	case strings.Contains(lit, "*"):
		if !cat.isInt() {
			return nil
		}
		prod := int64(1)
		for _, f := range strings.Split(lit, "*") {
			n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(f), "_", ""), 10, 64)
			if err != nil || n <= 0 || prod > math.MaxInt32 {
				return nil
			}
			p.factors = append(p.factors, n)
			prod *= n
		}
		p.value = float64(prod)
		return []param{p}
	}
	v, ok := parseNum(lit)
	if !ok {
		return nil
	}
	if cat.isInt() != isIntLit(lit) {
		return nil // a float where a count belongs, or the reverse: not ours to guess
	}
	p.value = v
	if !validValue(cat, v) {
		return nil
	}
	return []param{p}
}

func parseNum(lit string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(lit, "_", ""), 64)
	return v, err == nil && !math.IsInf(v, 0) && !math.IsNaN(v)
}

func isIntLit(lit string) bool { return !strings.ContainsAny(lit, ".eE") }

// validValue says whether a value is plausible for its category at all;
// implausible ones (a "beta" of 3) are left alone.
func validValue(cat category, v float64) bool {
	switch cat {
	case catBeta:
		return v > 0 && v < 1
	case catFraction, catDropout:
		return v >= 0 && v < 1
	case catLR, catEps, catClip:
		return v > 0
	case catWeightDecay:
		return v > 0 && v <= 10
	case catPhaseSteps:
		return v >= 1
	case catWidth:
		return v >= 16
	default:
		return v >= 1 && v <= 1e12
	}
}

// shape holds the model shapes visible in the program, to keep heads
// dividing width.
type shape struct {
	widths, heads []*param
}

// Propose implements Proposer.
func (m *Mutate) Propose(ctx context.Context, req Request) (*Proposal, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nothing := func(err error) error {
		return &Error{Kind: FailNothingToDo, Proposer: KindMutate, Err: err}
	}
	params, err := findParams(req.Parent.Source)
	if err != nil {
		return nil, nothing(fmt.Errorf("parent program: %w", err))
	}
	if len(params) == 0 {
		return nil, nothing(fmt.Errorf("no tunable numeric hyperparameter found outside protected regions of %s", nameOr(req.Parent.Name)))
	}
	h := fnv.New64a()
	h.Write(req.Parent.Source)
	rng := rand.New(rand.NewPCG(req.Seed, h.Sum64()))

	var sh shape
	for i := range params {
		switch params[i].cat {
		case catWidth:
			sh.widths = append(sh.widths, &params[i])
		case catHeads:
			sh.heads = append(sh.heads, &params[i])
		}
	}
	maxChanges := m.MaxChanges
	if maxChanges <= 0 {
		maxChanges = 2
	}
	type change struct {
		p      *param
		oldLit string
	}
	var changes []change
	var why string
	if p := spareLayer(req, params); p != nil {
		// Spend the margin on a smaller model: one block fewer.
		changes = append(changes, change{p: p, oldLit: p.lit})
		p.value--
		p.lit = formatInt(p.value, p.lit)
		why = fmt.Sprintf(" (the parent's loss %.4g is %.3g under the target %.4g: one layer fewer)",
			req.Parent.ValLoss, req.Target-req.Parent.ValLoss, req.Target)
	} else if cut := spareCut(rng, req, params); cut > 0 {
		// Spend the margin on fewer steps: every step count shrinks alike.
		for i := range params {
			p := &params[i]
			if p.cat != catTotalSteps && p.cat != catPhaseSteps {
				continue
			}
			nv := roundSteps(p.value*(1-cut), p.value)
			if lit := formatInt(nv, p.lit); lit != p.lit {
				changes = append(changes, change{p: p, oldLit: p.lit})
				p.lit, p.value = lit, nv
			}
		}
		why = fmt.Sprintf(" (the parent's loss %.4g is %.3g under the target %.4g: %.0f%% fewer steps)",
			req.Parent.ValLoss, req.Target-req.Parent.ValLoss, req.Target, 100*cut)
	}
	want := 1 + rng.IntN(maxChanges)
	order := rng.Perm(len(params))
	for _, i := range order {
		if len(changes) >= want || why != "" {
			break
		}
		p := &params[i]
		lit, v, ok := mutateParam(rng, p, &sh)
		if !ok {
			continue
		}
		changes = append(changes, change{p: p, oldLit: p.lit})
		p.lit, p.value = lit, v
		if p.factors != nil {
			p.factors = parseFactors(lit)
		}
	}
	if len(changes) == 0 {
		return nil, nothing(fmt.Errorf("none of the %d hyperparameters found could be changed within its range", len(params)))
	}
	sort.Slice(changes, func(a, b int) bool {
		if changes[a].p.line != changes[b].p.line {
			return changes[a].p.line < changes[b].p.line
		}
		return changes[a].p.start < changes[b].p.start
	})

	// Rewrite the changed lines of the original source, right to left
	// within a line so earlier offsets stay valid.
	orig := strings.Split(string(req.Parent.Source), "\n")
	newLines := map[int]string{}
	for k := len(changes) - 1; k >= 0; k-- {
		c := changes[k]
		l, ok := newLines[c.p.line]
		if !ok {
			l = orig[c.p.line]
		}
		newLines[c.p.line] = l[:c.p.start] + c.p.lit + l[c.p.end:]
	}
	var desc, bullets []string
	for _, c := range changes {
		desc = append(desc, fmt.Sprintf("%s %s -> %s", c.p.label(), c.oldLit, c.p.lit))
		bullets = append(bullets, fmt.Sprintf("- %s (%s, line %d): %s -> %s", c.p.label(), categoryNames[c.p.cat], c.p.line+1, c.oldLit, c.p.lit))
	}
	answer := fmt.Sprintf("Baseline mutation (seed %d): %d numeric hyperparameter(s) changed%s.\n\n%s\n\n%s",
		req.Seed, len(changes), why, strings.Join(bullets, "\n"), blocksFor(orig, newLines))

	e, err := edit.Parse(answer, "")
	if err != nil {
		return nil, &Error{Kind: FailUnparseable, Proposer: KindMutate, Answer: answer, Err: err}
	}
	res, err := edit.Apply(req.Parent.Source, e)
	if err != nil {
		return nil, &Error{Kind: FailApply, Proposer: KindMutate, Answer: answer, Err: err}
	}
	return &Proposal{
		Kind:        KindMutate,
		Description: "mutate: " + strings.Join(desc, ", ") + why,
		Answer:      answer,
		Edit:        e,
		Result:      res,
	}, nil
}

// spareLayer is the layer count a proposal lowers by one, from a parent
// with loss to spare, or nil when this proposal does something else (see
// Mutate): the second attempt from a parent at least 0.1 nats under the
// target whose program sets one layer count, of at least 2.
//
// On the tiny track the reference's 2 layers are more than its 1,200 steps
// use: a demo's child with 1 layer (and 10% less learning rate, a plain
// mutation) was confirmed 45% faster, its loss 3.29 over five seeds
// against the target 3.45 (docs/evolve.md, q5). On a speedrun track the
// records sit at the target, with no margin to spend.
func spareLayer(req Request, params []param) *param {
	if req.Attempt != 2 || req.Target <= 0 || req.Parent.ValLoss <= 0 || req.Target-req.Parent.ValLoss < 0.1-1e-9 {
		return nil
	}
	var layers *param
	for i := range params {
		if params[i].cat != catLayers {
			continue
		}
		if layers != nil {
			return nil // two layer counts: which one builds the model is not known
		}
		layers = &params[i]
	}
	if layers == nil || layers.value < 2 || !isIntLit(layers.lit) {
		return nil
	}
	return layers
}

// spareCut is the share of its steps a proposal takes from a parent with
// loss to spare, or 0 when this proposal does something else (see Mutate):
// only when the parent has a measured loss under the target and a total
// step count the proposer can see.
func spareCut(rng *rand.Rand, req Request, params []param) float64 {
	margin := req.Target - req.Parent.ValLoss
	if req.Target <= 0 || req.Parent.ValLoss <= 0 || margin <= 0 {
		return 0
	}
	if !slices.ContainsFunc(params, func(p param) bool { return p.cat == catTotalSteps && p.value >= 20 }) {
		return 0
	}
	// One draw whatever the attempt, so that the rest of the proposal
	// draws the same numbers.
	switch d := rng.IntN(6); {
	case req.Attempt == 1:
	case req.Attempt > 1 && d >= 2, req.Attempt <= 0 && d >= 3:
		return 0
	}
	// 0.15 nats buy up to 30% of the steps. On the tiny track (0.15 to
	// 0.2 to spare at 1,200 steps on one seed) a 30% cut cost 0.09 nats on
	// average over five seeds but spread them 4x wider (sd 0.08 against
	// the reference's 0.02), too wide for the loss test over five seeds at
	// alpha 0.01; cuts to 40% were tried first.
	return (0.15 + 0.15*rng.Float64()) * min(1, margin/0.15)
}

// roundSteps rounds a step count the way the original was written: to
// tens or fives when it was a multiple of them; at least 1.
func roundSteps(nv, old float64) float64 {
	switch g := int64(old); {
	case g >= 100 && g%10 == 0:
		nv = math.Round(nv/10) * 10
	case g%5 == 0:
		nv = math.Round(nv/5) * 5
	default:
		nv = math.Round(nv)
	}
	return max(nv, 1)
}

func nameOr(n string) string {
	if n == "" {
		return "the program"
	}
	return n
}

func parseFactors(lit string) []int64 {
	var fs []int64
	for _, f := range strings.Split(lit, "*") {
		n, _ := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		fs = append(fs, n)
	}
	return fs
}

// blocksFor writes SEARCH/REPLACE blocks for changed lines, each widened
// with neighbouring lines until its SEARCH text occurs once in the program.
func blocksFor(orig []string, newLines map[int]string) string {
	var idx []int
	for i := range newLines {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	type span struct{ lo, hi int } // lines [lo, hi)
	var spans []span
	for _, i := range idx {
		s := span{i, i + 1}
		for grow := 0; count(orig, orig[s.lo:s.hi]) > 1 && grow < 40; grow++ {
			if grow%2 == 0 && s.lo > 0 || s.hi >= len(orig) {
				s.lo--
			} else {
				s.hi++
			}
			if s.lo < 0 {
				s.lo = 0
				break
			}
		}
		if n := len(spans); n > 0 && s.lo <= spans[n-1].hi {
			spans[n-1].hi = max(spans[n-1].hi, s.hi)
			continue
		}
		spans = append(spans, s)
	}
	var b strings.Builder
	for _, s := range spans {
		b.WriteString("```python\n<<<<<<< SEARCH\n")
		for i := s.lo; i < s.hi; i++ {
			b.WriteString(strings.TrimSuffix(orig[i], "\r"))
			b.WriteString("\n")
		}
		b.WriteString("=======\n")
		for i := s.lo; i < s.hi; i++ {
			l := orig[i]
			if nl, ok := newLines[i]; ok {
				l = nl
			}
			b.WriteString(strings.TrimSuffix(l, "\r"))
			b.WriteString("\n")
		}
		b.WriteString(">>>>>>> REPLACE\n```\n\n")
	}
	return b.String()
}

// count returns how many times the run of lines w occurs in lines.
func count(lines, w []string) int {
	n := 0
	for i := 0; i+len(w) <= len(lines); i++ {
		match := true
		for k := range w {
			if lines[i+k] != w[k] {
				match = false
				break
			}
		}
		if match {
			n++
		}
	}
	return n
}

// mutateParam draws a new value for p. It tries a few draws and gives up
// (ok=false) when none is valid and different from the current literal.
func mutateParam(rng *rand.Rand, p *param, sh *shape) (lit string, v float64, ok bool) {
	for range 12 {
		lit, v, ok = drawParam(rng, p, sh)
		if ok && lit != p.lit {
			return lit, v, true
		}
	}
	return "", 0, false
}

// logFactor returns exp(±u) with u uniform in [lo, hi].
func logFactor(rng *rand.Rand, lo, hi float64) float64 {
	u := lo + rng.Float64()*(hi-lo)
	if rng.IntN(2) == 0 {
		u = -u
	}
	return math.Exp(u)
}

func drawParam(rng *rand.Rand, p *param, sh *shape) (string, float64, bool) {
	v := p.value
	switch p.cat {
	case catLR, catClip:
		nv := clamp(v*logFactor(rng, 0.1, 0.7), 1e-7, 100)
		return formatFloat(nv, p.lit, 2)
	case catWeightDecay:
		nv := clamp(v*logFactor(rng, 0.1, 0.7), 1e-6, 10)
		return formatFloat(nv, p.lit, 2)
	case catEps:
		f := 10.0
		if rng.IntN(2) == 0 {
			f = 0.1
		}
		nv := clamp(v*f, 1e-12, 1e-3)
		return formatFloat(nv, p.lit, 1)
	case catBeta:
		gap := clamp((1-v)*logFactor(rng, 0.15, 0.7), 1e-4, 0.5)
		d := max(decimals(p.lit), int(math.Ceil(-math.Log10(gap)))+1)
		nv := roundTo(1-roundSig(gap, 2), d)
		if nv <= 0 || nv >= 1 {
			return "", 0, false
		}
		return trimZeros(strconv.FormatFloat(nv, 'f', d, 64)), nv, true
	case catFraction, catDropout:
		hi := 0.9
		if p.cat == catDropout {
			hi = 0.5
		}
		step := 0.03 + rng.Float64()*0.12
		if rng.IntN(2) == 0 && v-step >= 0 {
			step = -step
		}
		nv := roundTo(clamp(v+step, 0, hi), 2)
		if nv < 0 || nv >= 1 {
			return "", 0, false
		}
		return trimZeros(strconv.FormatFloat(nv, 'f', 2, 64)), nv, true
	case catPhaseSteps:
		nv := math.Round(v * logFactor(rng, 0.1, 0.5))
		if int64(v)%10 == 0 && nv >= 10 {
			nv = math.Round(nv/10) * 10
		}
		return formatInt(max(nv, 1), p.lit), max(nv, 1), true
	case catTotalSteps:
		nv := roundSteps(v*logFactor(rng, 0.05, 0.25), v)
		return formatInt(nv, p.lit), nv, true
	case catBatch, catSeqLen:
		if p.factors != nil {
			f0 := sizeStep(rng, p.factors[0])
			if f0 < 1 {
				return "", 0, false
			}
			parts := strings.Split(p.lit, "*")
			parts[0] = strings.Replace(parts[0], strings.TrimSpace(parts[0]), strconv.FormatInt(f0, 10), 1)
			prod := float64(f0)
			for _, f := range p.factors[1:] {
				prod *= float64(f)
			}
			return strings.Join(parts, "*"), prod, true
		}
		nv := sizeStep(rng, int64(v))
		if nv < 1 {
			return "", 0, false
		}
		return formatInt(float64(nv), p.lit), float64(nv), true
	case catLayers:
		d := 1 + rng.IntN(2)
		if rng.IntN(2) == 0 {
			d = -d
		}
		nv := v + float64(d)
		if nv < 1 {
			return "", 0, false
		}
		return formatInt(nv, p.lit), nv, true
	case catWidth:
		return drawWidth(rng, p, sh)
	case catHeads:
		return drawHeads(rng, p, sh)
	}
	return "", 0, false
}

// sizeStep doubles or halves a power of two, and otherwise scales by up to
// about 1.5x in steps of the largest power of two dividing the value.
func sizeStep(rng *rand.Rand, v int64) int64 {
	if v <= 0 {
		return 0
	}
	if v&(v-1) == 0 {
		if rng.IntN(2) == 0 && v >= 2 {
			return v / 2
		}
		return v * 2
	}
	g := v & -v
	nv := int64(math.Round(float64(v)*logFactor(rng, 0.15, 0.4)/float64(g))) * g
	return max(nv, g)
}

// compatible returns the values of the counterparts (heads for a width,
// widths for heads) that fit the current value, so that the pairing is
// kept after the change.
func compatible(p *param, others []*param, fits func(w, h int64) bool, pIsWidth bool) []int64 {
	var out []int64
	for _, o := range others {
		w, h := int64(p.value), int64(o.value)
		if !pIsWidth {
			w, h = h, w
		}
		if fits(w, h) {
			out = append(out, int64(o.value))
		}
	}
	return out
}

// fitsHeads: heads divide the width into even head sizes.
func fitsHeads(w, h int64) bool { return h > 0 && w%h == 0 && (w/h)%2 == 0 }

func drawWidth(rng *rand.Rand, p *param, sh *shape) (string, float64, bool) {
	v := int64(p.value)
	heads := compatible(p, sh.heads, fitsHeads, true)
	unit := min(v&-v, 64)
	for _, h := range heads {
		unit = lcm(unit, 2*h)
	}
	var cands []int64
	for _, k := range []int64{-2, -1, 1, 2} {
		if w := v + k*unit; w >= 16 && w >= unit {
			cands = append(cands, w)
		}
	}
	if len(cands) == 0 {
		return "", 0, false
	}
	nv := cands[rng.IntN(len(cands))]
	return formatInt(float64(nv), p.lit), float64(nv), true
}

func drawHeads(rng *rand.Rand, p *param, sh *shape) (string, float64, bool) {
	v := int64(p.value)
	widths := compatible(p, sh.widths, fitsHeads, false)
	var cands []int64
	if len(widths) == 0 {
		switch {
		case v&(v-1) == 0:
			cands = []int64{v * 2}
			if v >= 2 {
				cands = append(cands, v/2)
			}
		default:
			cands = []int64{v + 1}
			if v > 1 {
				cands = append(cands, v-1)
			}
		}
	} else {
		for d := max(1, v/2); d <= 2*v; d++ {
			if d == v {
				continue
			}
			ok := true
			for _, w := range widths {
				ok = ok && fitsHeads(w, d)
			}
			if ok {
				cands = append(cands, d)
			}
		}
	}
	if len(cands) == 0 {
		return "", 0, false
	}
	nv := cands[rng.IntN(len(cands))]
	return formatInt(float64(nv), p.lit), float64(nv), true
}

func lcm(a, b int64) int64 {
	g, x := a, b
	for x != 0 {
		g, x = x, g%x
	}
	return a / g * b
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

func roundSig(v float64, sig int) float64 {
	if v == 0 {
		return 0
	}
	e := math.Floor(math.Log10(math.Abs(v)))
	p := math.Pow(10, e-float64(sig-1))
	return math.Round(v/p) * p
}

// decimals returns the number of digits after the point in a decimal
// literal.
func decimals(lit string) int {
	if i := strings.IndexByte(lit, '.'); i >= 0 && !strings.ContainsAny(lit, "eE") {
		return len(lit) - i - 1
	}
	return 0
}

// sigDigits counts the significant digits of a literal's mantissa.
func sigDigits(lit string) int {
	m := lit
	if i := strings.IndexAny(m, "eE"); i >= 0 {
		m = m[:i]
	}
	m = strings.ReplaceAll(strings.ReplaceAll(m, "_", ""), ".", "")
	m = strings.TrimLeft(m, "0")
	if m == "" {
		return 1
	}
	if !strings.Contains(lit, ".") {
		m = strings.TrimRight(m, "0")
	}
	return max(1, len(m))
}

// formatFloat writes v in the style of lit (scientific or decimal) with at
// least minSig significant digits (at most 3).
func formatFloat(v float64, lit string, minSig int) (string, float64, bool) {
	sig := min(3, max(minSig, sigDigits(lit)))
	v = roundSig(v, sig)
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return "", 0, false
	}
	if strings.ContainsAny(lit, "eE") {
		s := strconv.FormatFloat(v, 'e', sig-1, 64) // 4.5e-03
		mant, exp, _ := strings.Cut(s, "e")
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		n, _ := strconv.Atoi(exp)
		e := "e"
		if strings.Contains(lit, "E") {
			e = "E"
		}
		return fmt.Sprintf("%s%s%d", mant, e, n), v, true
	}
	d := max(0, sig-1-int(math.Floor(math.Log10(v))))
	s := strconv.FormatFloat(v, 'f', d, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return trimZeros(s), v, true
}

// trimZeros drops trailing zeros after the point, keeping one digit.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}

// formatInt writes an integer, with "_" thousands separators if lit had
// them.
func formatInt(v float64, lit string) string {
	s := strconv.FormatInt(int64(v), 10)
	if !strings.Contains(lit, "_") {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte('_')
		}
		b.WriteRune(c)
	}
	return b.String()
}
