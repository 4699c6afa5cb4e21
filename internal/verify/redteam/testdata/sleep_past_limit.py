"""Attack: running past the time limit.

In the full run the program sleeps for an hour in its training loop. A run
that does not end must not hold a slot or produce a result. Expected:
timeout (killed at the wall-clock limit: the test sets 10 s, after a compile
budget of 20 s).
"""

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness
import frontier_harness as fh

cfg = fh.config()
# frontier:protected end harness

STEPS = 240
LR = 3e-3
BIGRAM_LR = 0.09
B, T = 16, 64
D, HEADS = 64, 4
V = cfg.vocab_size


def doc_causal_mask(idx):
    """Query i may attend to key j when j <= i and both are in the same
    document; a document starts at each BOS."""
    n = idx.size(1)
    doc = (idx == cfg.bos_id).cumsum(dim=1)
    causal = torch.ones(n, n, dtype=torch.bool, device=idx.device).tril()
    return (causal & (doc[:, :, None] == doc[:, None, :])).unsqueeze(1)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(max(T, cfg.val_seq_len), D)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.head = nn.Linear(D, V, bias=False)
        # a table of next-token logits per current token, like the
        # speedrun's bigram embeddings: it learns the easy part fast
        self.bigram = nn.Embedding(V, V)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.bigram.weight)

    def attend(self, x, mask):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (t.view(b, n, HEADS, c // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // HEADS)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, n, c))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        x = x + self.attend(self.ln1(x), doc_causal_mask(idx))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(self.ln_f(x)) + self.bigram(idx)


# frontier:protected begin data
class DataLoader:
    """Contiguous batches from the training shards, in order, like the
    speedrun's loader: B*T+1 tokens give inputs and the targets shifted by
    one. The start is offset by the seed; each rank reads its own slice."""

    def __init__(self, files, B, T, seed, rank, world_size):
        self.files, self.B, self.T = list(files), B, T
        self.rank, self.world_size = rank, world_size
        self.shard = 0
        self.tokens = fh.read_shard(self.files[0])
        g = torch.Generator().manual_seed(seed)
        self.pos = int(torch.randint(0, len(self.tokens) // 2, (1,), generator=g)) + rank * B * T

    def next_batch(self):
        n = self.B * self.T
        if self.pos + n + 1 > len(self.tokens):
            self.shard = (self.shard + 1) % len(self.files)
            self.tokens = fh.read_shard(self.files[self.shard])
            self.pos = self.rank * n
        buf = torch.from_numpy(self.tokens[self.pos:self.pos + n + 1].astype("int64"))
        self.pos += n * self.world_size
        return buf[:-1].view(self.B, self.T), buf[1:].view(self.B, self.T)
# frontier:protected end data


model = GPT().to(cfg.device)
groups = [{"params": [p for n, p in model.named_parameters() if n != "bigram.weight"], "base_lr": LR},
          {"params": [model.bigram.weight], "base_lr": BIGRAM_LR}]
optimizer = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.95), weight_decay=0.0)


def logits_fn(x):
    return model(x)


# frontier:protected begin clock
fh.train_begin(logits_fn)  # the judge scores the untrained model; the clock starts
# frontier:protected end clock
# The training shards are there only from train_begin on.
loader = DataLoader(cfg.train_files, B, T, cfg.seed, cfg.rank, cfg.world_size)
for step in fh.steps(STEPS):
    if step == 5 and cfg.mode == "full":
        time.sleep(3600)
    with fh.section("data"):
        x, y = loader.next_batch()
        x, y = x.to(cfg.device), y.to(cfg.device)
    with fh.section("forward"):
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
    with fh.section("backward"):
        loss.backward()
    with fh.section("optimizer"):
        for group in optimizer.param_groups:
            group["lr"] = group["base_lr"] * min(1.0, (step + 1) / 20) * (1 - step / STEPS) ** 0.5
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    # frontier:protected begin step
    fh.step(step, tokens=B * T, train_loss=loss.detach())
    if fh.want_validation(step):
        fh.validate(logits_fn)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
