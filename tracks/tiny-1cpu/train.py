"""Reference program of the tiny-1cpu track: a small GPT on 1 CPU thread.

A plain GPT-2-style model, in the spirit of the speedrun's first records:
pre-LayerNorm blocks, learned positional embeddings, GELU MLPs, a language
model head tied to the token embedding, AdamW with linear warmup and cosine
decay. Attention is causal and stays inside a document: a BOS token starts a
new one. The harness (frontier_harness, imported as fh) owns the clock, the
validation data and the validation loss; see docs/harness.md.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness
import frontier_harness as fh

cfg = fh.config()
# frontier:protected end harness


@dataclass
class Hyperparameters:
    # model
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 96
    seq_len: int = 128  # training sequence length (validation uses cfg.val_seq_len)
    # optimization
    batch_size: int = 16  # sequences per step
    num_steps: int = 1200
    lr: float = 3e-3
    min_lr_frac: float = 0.1  # the cosine decays to lr * min_lr_frac
    warmup_steps: int = 50
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0


args = Hyperparameters()

# -----------------------------------------------------------------------------
# Model


class CausalSelfAttention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # [B, T, C] -> [B, heads, T, head_dim]
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        # softmax(q k^T / sqrt(head_dim)) v, with disallowed pairs at -inf
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)  # pre-LN residual blocks
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, max_len, n_layer, n_head, n_embd, bos_id):
        super().__init__()
        self.bos_id = bos_id
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(max_len, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.apply(self._init)
        # GPT-2's scaled init of the residual projections: 0.02 / sqrt(2 * layers)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        B, T = idx.shape
        # Query i may attend to key j when j <= i and both are in the same
        # document; a document starts at each BOS.
        doc = (idx == self.bos_id).cumsum(dim=1)
        causal = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
        mask = (causal & (doc[:, :, None] == doc[:, None, :])).unsqueeze(1)  # [B, 1, T, T]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x, mask)
        # the head shares its weights with the token embedding
        return F.linear(self.ln_f(x), self.wte.weight)


# -----------------------------------------------------------------------------
# Data

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


# -----------------------------------------------------------------------------
# Setup (untimed)

model = GPT(cfg.vocab_size, max(args.seq_len, cfg.val_seq_len), args.n_layer, args.n_head, args.n_embd,
            cfg.bos_id).to(cfg.device)
# weight decay on matrices only: not on biases, LayerNorm gains or positions
decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n != "wpe.weight"]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or n == "wpe.weight"]
optimizer = torch.optim.AdamW(
    [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
    lr=args.lr, betas=(args.beta1, args.beta2), foreach=True)


def lr_at(step):
    """Linear warmup, then cosine decay from lr to lr * min_lr_frac."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.num_steps - args.warmup_steps)
    return args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def logits_fn(x):
    return model(x)


# -----------------------------------------------------------------------------
# Training (timed)

# frontier:protected begin clock
fh.train_begin(logits_fn)  # the judge scores the untrained model; the clock starts
# frontier:protected end clock
# The training shards are there only from train_begin on.
loader = DataLoader(cfg.train_files, args.batch_size, args.seq_len, cfg.seed, cfg.rank, cfg.world_size)
tokens_per_step = args.batch_size * args.seq_len
for step in fh.steps(args.num_steps):
    with fh.section("data"):
        x, y = loader.next_batch()
        x, y = x.to(cfg.device), y.to(cfg.device)
    with fh.section("forward"):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    with fh.section("backward"):
        loss.backward()
    with fh.section("optimizer"):
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    # frontier:protected begin step
    fh.step(step, tokens=tokens_per_step, train_loss=loss.detach())
    if fh.want_validation(step):
        fh.validate(logits_fn)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
