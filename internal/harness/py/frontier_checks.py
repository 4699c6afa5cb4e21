"""frontier_checks: what the judge compares, and the scorer's plan.

The final validation is answered twice, by two processes that cannot share
memory: the training process (its answers are scored, on the clock) and a
scorer, a fresh process of the same program that imports the state the
training process exported at fh.finish() (before it saw a scored window)
and never saw the training data. Every scored row has a twin the scorer
answers:

- a copy of the row whose tokens from a random position d on are replaced
  by other text (the practice slice): the log-probabilities at positions
  before d must be the training process's, since a causal model at
  position p sees only tokens up to p. A model that looks ahead answers
  position d-1 differently; one that remembers what it was asked, trains
  during the validation, or depends on the other rows of its batch answers
  other positions differently too.
- with document isolation, sometimes a copy with the text before a BOS
  replaced: nothing from the BOS on may move;
- some rows unchanged, in batches of other rows; and the last scored batch
  (and another one) unchanged and whole: there only state can differ.

The scorer gets the twins in random order and random batches, each row
once, and never a row of the scored slice whose suffix it could read
elsewhere. It may remember all it likes: it never sees what the training
process saw. One of its batches comes twice, which measures its noise.

Everything compared is the log-probability of the first vocab_size
classes (float32, clipped at CLIP), at up to POSITIONS positions of each
row: the critical one (d-1), the first changed one (d, where a model that
reads its input must move) and others drawn at random.

Intermediate validations (the program's own and the track's designated
ones) are answered by the training process alone; there a recheck of a
batch and an end recheck catch answers that change within the pass.
"""

import random

import numpy as np

_RNG = random.SystemRandom()  # what the checks look at: not predictable from the run's seed

FULL_V = 1024  # vocabularies up to this size are compared on every class
FIXED_CLASSES = 62  # else this many fixed classes per position, plus the next tokens'
CLIP = -30.0  # log-probabilities under this are compared as this
MIN_TOLERANCE = 1e-4  # nats: the smallest change of a log-probability that counts as a change
POSITIONS = 32  # positions of a row compared at most
EXACT_SHARE = 8  # one row in EXACT_SHARE (at least one) is sent unchanged, shuffled into other rows' batches


class Fault(Exception):
    """A broken rule or a failed run, found by the judge. code is the error
    event's code; the program is told and stops."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def log_probs(x, pos, idx):
    """The log-probabilities of logits x [b, T, V] at positions pos [b, P]
    (over all classes when idx is None, else the classes idx [b, P, C]),
    clipped at CLIP, as float32 [b, P, C]."""
    if not isinstance(x, np.ndarray):  # a device tensor: reduce it there
        import torch
        xt = x.float()
        p = torch.from_numpy(np.ascontiguousarray(pos)).to(x.device)
        rows = torch.arange(xt.shape[0], device=x.device)[:, None]
        sel = xt[rows, p]  # [b, P, V]
        lse = torch.logsumexp(sel, dim=-1, keepdim=True)
        if idx is not None:
            sel = sel.gather(-1, torch.from_numpy(np.ascontiguousarray(idx)).to(x.device))
        return np.maximum((sel - lse).cpu().numpy(), CLIP).astype(np.float32)
    sel = np.asarray(x[np.arange(x.shape[0])[:, None], pos], dtype=np.float32)  # [b, P, V]
    m = sel.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0).astype(np.float32)
    lse = np.log(np.exp(sel - m).sum(axis=-1, keepdims=True)) + m
    if idx is not None:
        sel = np.take_along_axis(sel, idx, axis=-1)
    return np.maximum(sel - lse, CLIP).astype(np.float32)


def all_positions(b, T):
    return np.broadcast_to(np.arange(T, dtype=np.int64), (b, T)).copy()


def max_diff(a, b):
    """The largest absolute difference of two [n, P, C] statistics, and its
    row and position index."""
    d = np.abs(a.astype(np.float64) - b.astype(np.float64)).max(axis=-1)
    if d.size == 0:
        return 0.0, 0, 0
    flat = int(np.argmax(d))
    return float(d.reshape(-1)[flat]), flat // d.shape[1], flat % d.shape[1]


# ---------------------------------------------------------------------------
# Rechecks of an intermediate pass (the training process alone)


class Recheck:
    """A batch of the pass sent again later, and another one after the last
    scored one: answers that change within a pass are state (training in
    validation, a cache of what was asked) or noise; a third call tells
    which. The judge calls scored() and answered() as answers come, then
    finish() until it returns None (each call it returns is sent first)."""

    def __init__(self, val, calls, what):
        self.v = val  # the judge's Validation: shape, noise limits, classes compared
        self.what = what
        self.nb = len(calls)
        self.k = _RNG.randrange(self.nb)
        self.k_rows, self.k_range = calls[self.k][1], calls[self.k][2]
        self.k2 = _RNG.randrange(self.nb)
        self.k2_rows, self.k2_range = calls[self.k2][1], calls[self.k2][2]
        self.stats = {}
        self.noise = None
        self.drift = None
        self.stage = 0

    def schedule(self, calls):
        out = list(calls)
        out.insert(_RNG.randint(self.k + 1, self.nb), ("extra", self.k_rows, "a"))
        out.append(("extra", self.k2_rows, "end"))
        return out

    def _stats(self, x):
        return log_probs(x, all_positions(x.shape[0], x.shape[1]), self.v.compare_classes(x.shape[0], x.shape[1]))

    def scored(self, rng, x):
        if rng == self.k_range:
            self.stats["k"] = self._stats(x)
        if rng == self.k2_range:
            self.stats["k2"] = self._stats(x)

    def answered(self, call, x):
        self.stats[call[2]] = self._stats(x)

    def finish(self):
        v, st = self.v, self.stats
        if self.stage == 0:
            self.stage = 1
            if "k" in st and "a" in st:
                size, _, _ = max_diff(st["k"], st["a"])
                self.drift = size
                if size <= MIN_TOLERANCE:
                    self.noise = size
                else:
                    return ("extra", self.k_rows, "third")
        if self.stage == 1:
            self.stage = 2
            if self.noise is None and "third" in st:
                size, row, pos = max_diff(st["k"], st["a"])
                noise, _, _ = max_diff(st["a"], st["third"])
                self.noise = noise
                if noise > v.max_noise and not v.allow_noise:
                    raise Fault("nondeterministic_eval", nondeterministic(self.what, noise, row, pos, v.max_noise))
                tol = max(4.0 * noise, MIN_TOLERANCE)
                if size > tol:
                    raise Fault("stateful_eval",
                                "a validation batch got log-probabilities that differ by %.3g at row %d, position %d "
                                "(tolerance %.3g) when it came again later in %s, and the same on a third call: "
                                "logits_fn keeps state across calls (a cache of validation inputs, test-time "
                                "training, behaviour that depends on what it saw before); the same model must give "
                                "the same input the same logits" % (size, row, pos, tol, self.what))
            if self.noise is None:
                self.noise = 0.0
            if "k2" in st and "end" in st:
                size, row, pos = max_diff(st["k2"], st["end"])
                self.drift = max(self.drift or 0.0, size)
                tol = max(4.0 * self.noise, MIN_TOLERANCE)
                if size > tol:
                    raise Fault("stateful_eval",
                                "a validation batch got log-probabilities that differ by %.3g at row %d, position %d "
                                "(tolerance %.3g) when it came again at the end of %s: logits_fn's answers changed "
                                "during the pass (test-time training, state kept across calls)"
                                % (size, row, pos, tol, self.what))
        return None


def nondeterministic(what, noise, row, pos, limit):
    return ("logits_fn gave different logits for the same input on two calls in %s: a validation batch differed by "
            "%.3g (log-probability) at row %d, position %d, over the limit of %.2g. That is noise, or state that "
            "changes on every call (test-time training); either way the causality and state checks cannot tell a "
            "leak from it. Make the forward pass deterministic (no dropout or sampling in logits_fn; "
            "torch.use_deterministic_algorithms(True)) and keep no state between calls" % (what, noise, row, pos, limit))


# ---------------------------------------------------------------------------
# The scorer's plan: twins of every scored row


class Twin:
    """The scorer's copy of one scored row (window w of the slice)."""

    __slots__ = ("w", "kind", "tokens", "d", "b", "pos", "idx", "a", "first", "whole")

    def __init__(self, w, kind, tokens, d, b, pos, idx):
        self.w, self.kind, self.tokens, self.d, self.b = w, kind, tokens, d, b
        self.pos, self.idx = pos, idx  # compared positions [P], classes [P, C] or None
        self.a = None  # the training process's statistics at pos
        self.first = -1  # index in pos of the first changed position (must move), or -1
        self.whole = False  # sent unchanged, in its own batch, in order


class ScorerPlan:
    """The twins of one rank's scored windows and the scorer's calls."""

    def __init__(self, val, data, share, practice, probe):
        self.v = val  # the judge's Validation: shape, noise limits, classes compared
        T, V, B = val.T, val.V, val.B
        lo, hi = share
        windows = list(range(lo, hi))
        self.by_w = {}  # window -> its twins
        doc = bool(probe.get("doc_isolated"))
        bos = val.bos
        nb = -(-len(windows) // B)
        # Whole batches sent again, unchanged and in order: where only state
        # can make the answers differ. The last (where a drift has gone
        # furthest) and one at random.
        whole = []
        if nb >= 2:
            whole = [nb - 1]
        if nb >= 4:
            whole = sorted({nb - 1, _RNG.randrange(nb - 1)})
        self.whole = [list(range(lo + k * B, min(lo + (k + 1) * B, hi))) for k in whole]
        in_whole = {w for batch in self.whole for w in batch}
        single = nb == 1 and len(windows) >= 2
        if single:
            # A pass of one batch (a fast check) has no other batch to hold
            # the twins: the batch comes whole, and its rows' twins after it.
            # The scorer then holds each row twice, so the causality check of
            # a fast check is weaker against a program built to exploit it;
            # the full run's is not.
            self.whole = [windows]
        for batch in self.whole:
            for w in batch:
                t = self.exact(w, data[w * T:(w + 1) * T])
                t.whole = True
                self.by_w.setdefault(w, []).append(t)
        rest = [w for w in windows if w not in in_whole]
        # At least one row goes unchanged into other rows' batches: where
        # an answer depends on the other rows, that twin says so (a future
        # twin moves too, but its message cannot tell the two apart).
        forced = _RNG.choice(rest) if rest else None
        for w in rest:
            row = data[w * T:(w + 1) * T]
            starts = np.nonzero(row[1:] == bos)[0] + 1 if doc else ()
            if not probe.get("enabled", True) or w == forced or _RNG.randrange(EXACT_SHARE) == 0:
                t = self.exact(w, row)
            elif len(starts) and int(starts[0]) >= 2 and _RNG.randrange(4) == 0:
                t = self.document(w, row, int(starts[0]), practice)
            else:
                t = self.future(w, row, practice)
            self.by_w.setdefault(w, []).append(t)
        self.idx_all = V <= FULL_V
        # The scorer's calls: the whole batches, the other twins in random
        # batches, one call again (noise).
        lone = [t for w in rest for t in self.by_w[w] if not t.whole]
        _RNG.shuffle(lone)
        calls = [("twins", [t for w in batch for t in self.by_w[w] if t.whole]) for batch in self.whole]
        calls += [("twins", lone[i:i + B]) for i in range(0, len(lone), B)]
        if single:
            calls = calls[:1] + calls[1:]  # the whole batch first: its rows' twins come after
        else:
            _RNG.shuffle(calls)
        if calls:
            calls.append(("noise", calls[0][1]))
        self.calls = calls
        self.noise_stats = None

    # -- twins ----------------------------------------------------------------

    def _positions(self, must, pool, T):
        """must first, then up to POSITIONS in all drawn from pool."""
        must = [p for p in must if 0 <= p < T]
        pool = [p for p in pool if p not in must]
        extra = _RNG.sample(pool, min(len(pool), max(0, POSITIONS - len(must))))
        return np.array(must + sorted(extra), dtype=np.int64)

    def _classes(self, row, twin, pos):
        """The classes compared at each position: all of a small vocabulary,
        else a fixed set and the next token of the row and of its twin."""
        v = self.v
        if v.V <= FULL_V:
            return None
        T = v.T
        nxt = lambda r: np.array([r[p + 1] if p + 1 < T else r[p] for p in pos], dtype=np.int64)  # noqa: E731
        fixed = np.broadcast_to(v.fixed_classes, (len(pos), v.fixed_classes.size))
        return np.ascontiguousarray(np.concatenate([fixed, nxt(row)[:, None], nxt(twin)[:, None]], axis=1))

    def _splice(self, row, start, end, practice):
        """row with positions [start, end) replaced by practice text."""
        v = self.v
        twin = row.copy()
        n = end - start
        if practice is not None and practice.size > n + 1:
            o = _RNG.randrange(practice.size - n)
            twin[start:end] = practice[o:o + n]
        else:
            twin[start:end] = np.array([_RNG.randrange(v.V) for _ in range(n)], dtype=row.dtype)
        if twin[start] == row[start]:
            twin[start] = (int(row[start]) + 1 + _RNG.randrange(v.V - 1)) % v.V
        return twin

    def exact(self, w, row):
        T = self.v.T
        pos = self._positions([T - 1, 0], range(T), T)
        return Twin(w, "exact", row.copy(), T, -1, pos, self._classes(row, row, pos))

    def future(self, w, row, practice):
        T = self.v.T
        d = 1 + _RNG.randrange(T - 1)  # the first changed position, 1 .. T-1
        twin = self._splice(row, d, T, practice)
        pos = self._positions([d - 1, d], range(d), T)
        t = Twin(w, "future", twin, d, -1, pos, self._classes(row, twin, pos))
        t.first = int(np.nonzero(pos == d)[0][0])
        return t

    def document(self, w, row, b, practice):
        """Text before the row's first BOS (at b) replaced from q on: nothing
        from the BOS on may move, nor anything before q."""
        T = self.v.T
        q = _RNG.randrange(1, b) if b > 1 else 0
        twin = self._splice(row, q, b, practice)
        pos = self._positions([q - 1, b, q], list(range(q)) + list(range(b, T)), T)
        t = Twin(w, "document", twin, q, b, pos, self._classes(row, twin, pos))
        t.first = int(np.nonzero(pos == q)[0][0])
        return t

    # -- answers --------------------------------------------------------------

    def stats(self, x, twins):
        """The statistics of logits x for twins (one row of x each), [n, P, C]
        (P varies: padded by repeating a row's first position)."""
        P = max(len(t.pos) for t in twins)
        pos = np.stack([np.pad(t.pos, (0, P - len(t.pos)), mode="edge") for t in twins])
        if self.idx_all:
            return log_probs(x, pos, None)
        idx = np.stack([np.pad(t.idx, ((0, P - len(t.pos)), (0, 0)), mode="edge") for t in twins])
        return log_probs(x, pos, idx)

    def scored(self, windows, x):
        """The training process's answer to scored windows (rows of x in
        order): its statistics at each twin's positions."""
        for i, w in enumerate(windows):
            twins = self.by_w.get(w) or []
            if not twins:
                continue
            st = self.stats(x[i:i + 1].repeat(len(twins), 0) if isinstance(x, np.ndarray) else
                            x[i:i + 1].expand(len(twins), -1, -1), twins)
            for t, s in zip(twins, st):
                t.a = s[:len(t.pos)]

    def answered(self, call, x, result):
        """The scorer's answer to one of its calls; compared at once."""
        twins = call[1]
        st = self.stats(x, twins)
        if call[0] == "noise":
            first = self.noise_stats
            if first is not None:
                size, _, _ = max_diff(first, st)
                result.noise = max(result.noise, size)
            return
        if self.noise_stats is None and self.calls and twins is self.calls[0][1]:
            self.noise_stats = st
        for i, (t, s) in enumerate(zip(twins, st)):
            if t.a is None:
                continue
            s = s[:len(t.pos)]
            d = np.abs(t.a.astype(np.float64) - s.astype(np.float64)).max(axis=-1)  # [P]
            moved = None
            if t.first >= 0:
                moved = float(d[t.first])
                d[t.first] = 0.0
                result.total += 1
            result.add(t, i, d, moved, t.whole)


class ScorerResult:
    """What the comparison of the two processes found."""

    def __init__(self):
        self.noise = 0.0
        self.total = 0  # twins with a changed position
        self.changed = 0  # of which the model moved where the input changed (filled at the end)
        self.moves = []  # (size at the first changed position) of each such twin
        self.worst = {"whole": None, "exact": None, "future": None, "document": None}
        self.rows = 0

    def add(self, twin, row, diff, moved, whole):
        self.rows += 1
        if moved is not None:
            self.moves.append(moved)
        k = int(np.argmax(diff)) if diff.size else 0
        size = float(diff[k]) if diff.size else 0.0
        key = "whole" if whole else twin.kind
        cur = self.worst[key]
        if cur is None or size > cur["size"]:
            self.worst[key] = {"size": size, "w": twin.w, "row": row, "position": int(twin.pos[k]),
                               "perturbed": int(twin.d), "boundary": int(twin.b)}
