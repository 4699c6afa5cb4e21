"""frontier_probe: the checks the judge weaves into a validation pass.

A pass sends the program its batches in order. Besides them, the judge
sends calls the program cannot tell from scored ones (the same shape, mixed
in at random places after the batch they copy, chosen with the system's
entropy):

- the recheck: batch k again. A model gives the same input the same
  logits; one that does not keeps state across calls (a cache of
  validation inputs, test-time training) or is noisy. A third call tells
  which: two later calls that agree mean state.
- the end recheck: another batch, after the last scored one, so that no
  scored call's answer can depend on state a later call changed.
- on the final pass, the causality probe: copies of batch k with one token
  changed in every row (logits before the change must not move: a move is
  a look ahead; with doc_isolated, changes before a BOS must not move
  anything after it) and one row replaced by other text (rows must be
  independent: consecutive windows are consecutive text).

Everything compared is the log-probability of the first vocab_size classes
(float64, clipped at CLIP): extra classes, or a huge constant logit, cannot
widen the tolerance, which is max(4 x the measured noise, MIN_TOLERANCE).
"""

import random

import numpy as np

_RNG = random.SystemRandom()

FULL_V = 1024  # vocabularies up to this size are compared on every class
FIXED_CLASSES = 62  # else this many fixed classes per position, plus the next tokens'


CLIP = -30.0  # log-probabilities under this are compared as this
MIN_TOLERANCE = 1e-4  # nats: the smallest change of a log-probability that counts as a change


class Fault(Exception):
    """A broken rule or a failed run, found by the judge. code is the error
    event's code; the candidate is told and stops."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def stats_of(x, idx):
    """What the checks compare of a call's logits x [b, T, V]: the
    log-probabilities over the first vocab_size classes, clipped
    at CLIP so that a class the model rules out cannot widen the scale; all
    of them, or the classes idx [b, T, k]."""
    if not isinstance(x, np.ndarray):  # a device tensor: reduce it there, bring the statistics home
        import torch
        xf = x.float()
        lse = torch.logsumexp(xf, dim=-1, keepdim=True)
        if idx is not None:  # gather first: a 50,257-way float64 copy would not fit
            xf = xf.gather(-1, torch.from_numpy(np.ascontiguousarray(idx)).to(x.device))
        return np.maximum((xf - lse).double().cpu().numpy(), CLIP)
    # float32 like the loss (float64 costs five times more here); the same
    # input gives the same bits, and the rounding, a few millionths of a
    # nat, is far under the tolerance.
    x = np.asarray(x, dtype=np.float32)
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0).astype(np.float32)
    lse = np.log(np.exp(x - m).sum(axis=-1, keepdims=True)) + m
    if idx is not None:
        x = np.take_along_axis(x, idx, axis=-1)
    return np.maximum(x - lse, CLIP).astype(np.float64)


def pos_diff(x, y):
    """Largest absolute difference per row and position ([n, T])."""
    return np.abs(x - y).max(axis=-1)


def max_diff(x, y):
    """The largest difference between two statistics and its row and position."""
    d = pos_diff(x, y)
    if d.size == 0:
        return 0.0, 0, 0
    flat = int(np.argmax(d))
    return float(d.reshape(-1)[flat]), flat // d.shape[1], flat % d.shape[1]


def gather_idx(judge, base, others):
    """Which classes are compared: all for vocabularies up to FULL_V; else,
    per position, a fixed set and the classes of the next token in base and
    in each changed copy of it (where a leak of the next token shows)."""
    if judge.V <= FULL_V:
        return None
    n, T = base.shape
    fixed = judge.fixed_classes
    cols = [np.broadcast_to(fixed, (n, T, fixed.size))]
    for rows in (base,) + tuple(others):
        nxt = np.empty((n, T, 1), dtype=np.int64)
        nxt[:, :-1, 0], nxt[:, -1, 0] = rows[:, 1:], rows[:, -1]
        cols.append(nxt)
    return np.ascontiguousarray(np.concatenate(cols, axis=2))


class Plan:
    """The checks of one pass over rank 0's batches. The judge calls
    scored() and answered() as answers come, then finish() until it
    returns None (each call it returns is sent first)."""

    def __init__(self, judge, calls, data, probe, share, what):
        self.j = judge
        self.what_ = what
        self.data = data
        self.probe = probe and calls[0][1].shape[0] > 0
        self.share = share
        self.nb = len(calls)
        self.k = _RNG.randrange(self.nb)
        self.k_range = calls[self.k][2]
        self.k_rows = calls[self.k][1]
        self.k2 = _RNG.randrange(self.nb)
        self.k2_range = calls[self.k2][2]
        self.stats = {}  # call name -> statistics
        self.noise = None
        self.drift = None
        self.probe_event = None
        self.stage = 0
        self.meta = None
        self.extra = []
        if self.probe:
            self.extra, self.idx = self.probe_calls()
        else:
            self.idx = gather_idx(judge, self.k_rows, ())
            self.extra = [("extra", self.k_rows, "a")]
        self.idx2 = gather_idx(judge, calls[self.k2][1], ())

    # -- building the pass ------------------------------------------------

    def schedule(self, calls):
        """calls with the checks' calls mixed in after batch k, and the end
        recheck last."""
        gaps = {}
        for c in self.extra:
            gaps.setdefault(_RNG.randint(self.k + 1, self.nb), []).append(c)
        out = []
        for g in range(self.nb + 1):
            extra = gaps.get(g, [])
            _RNG.shuffle(extra)
            out.extend(extra)
            if g < self.nb:
                out.append(calls[g])
        out.append(("extra", calls[self.k2][1], "end"))
        return out

    def probe_calls(self):
        """The probe's calls on batch k: unchanged ("a", the recheck), copies
        with one token changed in every row but one, which is replaced by
        other text ("c0", ...), and the first copy's replaced row alone
        ("o")."""
        j, base, data = self.j, self.k_rows, self.data
        T, V = j.T, j.V
        cfg = j.probe_cfg
        n = base.shape[0]
        want = max(1, int(cfg.get("sequences") or 4)) * max(1, int(cfg.get("positions") or 8))
        draws = max(1, -(-want // max(1, n - 1))) if n > 1 else want
        doc, bos = bool(cfg.get("doc_isolated")), int(j.cfg["bos_id"])
        windows = (len(data) - 1) // T
        skip = self.k_range
        perts, kinds, swaps = [], [], []
        for d in range(draws):
            pert = base.copy()
            kk = []
            sw = (n // 2 + d) % n if n > 1 else -1
            for r in range(n):
                if r == sw:
                    # Rows are independent: another row's text changes entirely.
                    w = _RNG.randrange(windows)
                    while skip[0] <= w < skip[1] and windows > skip[1] - skip[0]:
                        w = _RNG.randrange(windows)
                    pert[r] = data[w * T:(w + 1) * T]
                    if np.array_equal(pert[r], base[r]):
                        pert[r] = (base[r] + 1) % V
                    kk.append(("swap", 0, 0))
                    continue
                starts = np.nonzero(base[r, 1:] == bos)[0] + 1 if doc else ()
                if len(starts):
                    # Documents must not see each other: change a token before
                    # the first BOS (right before it, where a leak shows most,
                    # or further back) and nothing from the BOS on may move.
                    b = int(starts[0])
                    q = b - 1 if d % 2 == 0 else _RNG.randrange(b)
                    kk.append(("doc", q, b))
                else:
                    q = _RNG.randrange(T)
                    kk.append(("causal", q, q))
                pert[r, q] = (pert[r, q] + 1 + _RNG.randrange(V - 1)) % V
            perts.append(pert)
            kinds.append(kk)
            swaps.append(sw)
        idx = gather_idx(j, base, perts)
        self.meta = {"kinds": kinds, "swaps": swaps, "rows": n, "base": base, "perts": perts}
        calls = [("extra", base, "a")] + [("extra", p, "c%d" % d) for d, p in enumerate(perts)]
        if n > 1:
            # The first copy's replaced row alone: every other row must keep
            # its logits at every position. The copies cannot show this by
            # themselves: a look at the next row's first token lands at the
            # last position, after the token changed in the looking row.
            only = base.copy()
            only[swaps[0]] = perts[0][swaps[0]]
            calls.append(("extra", only, "o"))
        return calls, idx

    # -- answers ------------------------------------------------------------

    def scored(self, rng, x):
        if rng == self.k_range:
            self.stats["k"] = stats_of(x, self.idx)
        if rng == self.k2_range:
            self.stats["k2"] = stats_of(x, self.idx2)

    def answered(self, call, x):
        name = call[2]
        self.stats[name] = stats_of(x, self.idx2 if name == "end" else self.idx)

    # -- verdicts -----------------------------------------------------------

    def finish(self):
        """The next call the checks need, or None when they are done. Raises
        Fault for state and noise."""
        j, st = self.j, self.stats
        if self.stage == 0:
            self.stage = 1
            if "k" not in st or "a" not in st:
                return None
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
                if noise > j.max_noise and not j.allow_noise:
                    raise Fault("nondeterministic_eval",
                                "logits_fn gave different logits for the same input on every call in %s: a validation "
                                "batch differed by %.3g (log-probability) at row %d, position %d between two calls, over "
                                "the limit of %.2g. That is noise, or state that changes on every call (test-time "
                                "training); either way the causality and state checks cannot tell a leak from it. Make "
                                "the forward pass deterministic (no dropout or sampling in logits_fn; "
                                "torch.use_deterministic_algorithms(True)) and keep no state between calls"
                                % (self.what(), noise, row, pos, j.max_noise))
                tol = max(4.0 * noise, MIN_TOLERANCE)
                if size > tol:
                    raise Fault("stateful_eval",
                                "a validation batch got log-probabilities that differ by %.3g at row %d, position %d "
                                "(tolerance %.3g) when it came again later in %s, and the same on a third call: "
                                "logits_fn keeps state across calls (a cache of validation inputs, test-time "
                                "training, behaviour that depends on what it saw before); the same model must give "
                                "the same input the same logits" % (size, row, pos, tol, self.what()))
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
                                % (size, row, pos, tol, self.what()))
        if self.stage == 2:
            self.stage = 3
            if self.probe:
                return self.judge_probe()
        if self.stage == 3:
            self.stage = 4
            if self.probe and "diag" in st:
                self.diagnose()
        return None

    def what(self):
        return self.what_

    def judge_probe(self):
        """Judge the probe's calls; returns one more call when a leak needs
        telling apart (a look across rows or ahead)."""
        meta, st, T = self.meta, self.stats, self.j.T
        a = st.get("a")
        if a is None or any(("c%d" % d) not in st for d in range(len(meta["perts"]))):
            return None
        tol = max(4.0 * (self.noise or 0.0), MIN_TOLERANCE)
        self.tol = tol
        leak, leak_draw, changed, total = None, 0, 0, 0
        for d, kk in enumerate(meta["kinds"]):
            diff = pos_diff(a, st["c%d" % d])  # [rows, T]
            if leak is None:
                leak_draw = d
            for r, (kind, p, boundary) in enumerate(kk):
                if kind == "swap":
                    continue
                total += 1
                row = diff[r]
                if p > 0 and leak is None and float(row[:p].max()) > tol:
                    pos = int(np.nonzero(row[:p] > tol)[0][0])
                    leak = {"kind": "future", "row": r, "perturbed": p, "position": pos, "size": float(row[:p].max()),
                            "source_row": meta["swaps"][d]}
                if kind == "doc":
                    after = row[boundary:]
                    if leak is None and after.size and float(after.max()) > tol:
                        pos = boundary + int(np.nonzero(after > tol)[0][0])
                        leak = {"kind": "document", "row": r, "perturbed": p, "position": pos,
                                "size": float(after.max()), "source_row": meta["swaps"][d]}
                    if boundary > p and float(row[p:boundary].max()) > tol:
                        changed += 1
                elif float(row[p:].max()) > tol:
                    changed += 1
        if leak is None and "o" in st:
            leak = self.row_leak(a, st["o"], meta["swaps"][0])
        self.leak, self.changed, self.total = leak, changed, total
        self.finalize()
        if leak is not None and leak["source_row"] >= 0 and leak["kind"] != "row":
            # Which change moved it: the other row alone, on the copy's text.
            sw = leak["source_row"]
            only = meta["base"].copy()
            only[sw] = meta["perts"][leak_draw][sw]
            self.diag_row = sw
            return ("extra", only, "diag")
        return None

    def row_leak(self, a, b, sw):
        d = pos_diff(a, b)
        d[sw] = 0.0
        if float(d.max()) > self.tol:
            flat = int(np.argmax(d))
            return {"kind": "row", "row": flat // d.shape[1], "source_row": sw, "perturbed": 0,
                    "position": flat % d.shape[1], "size": float(d.max())}
        return None

    def diagnose(self):
        leak = self.row_leak(self.stats["a"], self.stats["diag"], self.diag_row)
        if leak is not None:
            self.leak = leak
        self.finalize()

    def finalize(self):
        meta, leak, tol = self.meta, self.leak, self.tol
        fault = ""
        if leak is not None:
            fault = "leak"
            if leak["kind"] == "row":
                msg = ("log-probabilities of row %d of a batch (position %d) changed by %.3g (tolerance %.3g) when "
                       "only row %d of the %d rows was replaced: rows must be independent (consecutive validation "
                       "windows are consecutive text, so a model that looks across rows sees the future)"
                       % (leak["row"], leak["position"], leak["size"], tol, leak["source_row"], meta["rows"]))
            else:
                msg = ("log-probabilities at position %d of row %d changed by %.3g (tolerance %.3g) when the token "
                       "at position %d was perturbed: %s" % (
                           leak["position"], leak["row"], leak["size"], tol, leak["perturbed"],
                           "the model sees future tokens" if leak["kind"] == "future"
                           else "the model sees across a document boundary (BOS)"))
        elif self.changed == 0:
            fault = "insensitive"
            msg = "no perturbation changed any log-probability: the model's output does not depend on its input"
        else:
            msg = "no leak found"
        calls = 1 + len(meta["perts"]) + ("o" in self.stats) + ("diag" in self.stats)
        self.probe_event = {
            "ok": fault == "", "fault": fault, "sequences": meta["rows"], "perturbations": self.total,
            "noise_floor": self.noise or 0.0, "noise_limit": self.j.max_noise, "tolerance": tol,
            "sensitive": self.changed / self.total if self.total else 0.0, "leak": leak, "message": msg,
            "doc_isolated": bool(self.j.probe_cfg.get("doc_isolated")),
            "row_check": meta["rows"] if meta["rows"] > 1 else 0, "calls": calls,
        }
