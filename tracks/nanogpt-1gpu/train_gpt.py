"""Reference program of the nanogpt tracks: GPT-2 (124M) on FineWeb.

The same file is the reference of nanogpt (8 GPUs) and nanogpt-1gpu; the
reference of nanogpt-medium differs only in its Hyperparameters.

A clean baseline in the spirit of the speedrun's first records (the llm.c
GPT-2 replication and the tuned-AdamW record after it): pre-LayerNorm
blocks, rotary position embeddings, GELU MLPs, a language-model head tied to
the token embedding, AdamW with a linear warmup, a constant phase and a
linear decay to zero, bfloat16 autocast and torch.compile on CUDA.

It runs on 1 to 8 GPUs (or CPU processes) with the same ML: every optimizer
step sees total_batch_tokens tokens, and with fewer processes each one
accumulates gradients over more micro-batches. Several processes train with
DistributedDataParallel. The harness (frontier_harness, imported as fh) owns
the clock, the validation data and the validation loss; see docs/harness.md.
"""

import math
import os
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness
import frontier_harness as fh

cfg = fh.config()
# frontier:protected end harness


@dataclass
class Hyperparameters:
    # model: GPT-2 small (124M parameters)
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    seq_len: int = 1024  # training sequence length (validation uses cfg.val_seq_len)
    # batch: tokens per optimizer step over all processes (8 x 64 x 1024)
    total_batch_tokens: int = 524288
    micro_batch_seqs: int = 64  # sequences per process per forward/backward
    # optimization
    num_steps: int = 9500
    lr: float = 0.0018
    warmup_steps: int = 250
    warmdown_steps: int = 2500  # the last steps decay the learning rate linearly to zero
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    # systems
    compile: bool = True  # torch.compile the model on CUDA (torch >= 2)
    compile_warmup_steps: int = 3  # untimed forward/backward passes on random tokens


args = Hyperparameters()

# -----------------------------------------------------------------------------
# Model


class Rotary(nn.Module):
    """Rotary position embedding: rotates pairs of query and key channels by
    an angle proportional to the position."""

    def __init__(self, head_dim, max_len, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)  # [T, D/2]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x):  # x: [B, heads, T, head_dim]
        T, half = x.size(-2), x.size(-1) // 2
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class CausalSelfAttention(nn.Module):
    def __init__(self, d, n_head, rotary):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.rotary = rotary

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # [B, T, C] -> [B, heads, T, head_dim]
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        q, k = self.rotary(q), self.rotary(k)
        if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2: fused kernels
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, n_head, rotary):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, rotary)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))  # pre-LN residual blocks
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, max_len, n_layer, n_head, n_embd):
        super().__init__()
        # The vocabulary is padded to a multiple of 128 for faster matmuls;
        # the padded classes are scored too and learn to be improbable.
        self.vocab_size = (vocab_size + 127) // 128 * 128
        self.wte = nn.Embedding(self.vocab_size, n_embd)
        rotary = Rotary(n_embd // n_head, max_len)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, rotary) for _ in range(n_layer)])
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
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x)
        # the head shares its weights with the token embedding
        return F.linear(self.ln_f(x), self.wte.weight)


# -----------------------------------------------------------------------------
# Data

# frontier:protected begin data
class DataLoader:
    """Contiguous micro-batches from the training shards in order, as the
    speedrun's early loaders read them: B*T+1 tokens give the inputs and the
    targets shifted by one, and process r of n reads the r-th slice of each
    n*B*T window. Running out of shards is an error, never a second epoch."""

    def __init__(self, files, B, T, rank, world_size):
        self.files, self.B, self.T = list(files), B, T
        self.rank, self.world_size = rank, world_size
        self.shard = 0
        self.tokens = fh.read_shard(self.files[0])
        self.pos = rank * B * T

    def next_batch(self):
        n = self.B * self.T
        if self.pos + n + 1 > len(self.tokens):
            self.shard += 1
            if self.shard == len(self.files):
                raise RuntimeError(
                    "the training data ran out after %d shards: provide more training shards (for FineWeb, "
                    "`frontier data fetch fineweb10B --train-shards N` with a larger N)" % len(self.files))
            self.tokens = fh.read_shard(self.files[self.shard])
            self.pos = self.rank * n
        buf = torch.from_numpy(self.tokens[self.pos:self.pos + n + 1].astype("int64"))
        self.pos += n * self.world_size
        return buf[:-1].view(self.B, self.T), buf[1:].view(self.B, self.T)
# frontier:protected end data


# -----------------------------------------------------------------------------
# Setup (untimed)

device = torch.device(cfg.device)
cuda = device.type == "cuda"
world_size, rank = cfg.world_size, cfg.rank
ddp = world_size > 1
if ddp:
    dist.init_process_group(backend="nccl" if cuda else "gloo")
if cuda:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

micro_tokens = args.micro_batch_seqs * args.seq_len
if args.total_batch_tokens % (micro_tokens * world_size):
    raise ValueError("total_batch_tokens %d is not a multiple of micro_batch_seqs x seq_len x processes = %d x %d x %d"
                     % (args.total_batch_tokens, args.micro_batch_seqs, args.seq_len, world_size))
accum_steps = args.total_batch_tokens // (micro_tokens * world_size)

raw_model = GPT(cfg.vocab_size, max(args.seq_len, cfg.val_seq_len), args.n_layer, args.n_head, args.n_embd).to(device)
model = raw_model
if cuda and args.compile and hasattr(torch, "compile"):
    model = torch.compile(raw_model)
if ddp:
    # The rotary tables are the only buffers, constant and equal on every
    # process: nothing to broadcast.
    model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if cuda else None,
                                                broadcast_buffers=False)


def autocast():
    """bfloat16 autocast on CUDA; full precision on CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if cuda else nullcontext()


# weight decay on matrices only: not on biases or LayerNorm gains
decay = [p for p in raw_model.parameters() if p.dim() >= 2]
no_decay = [p for p in raw_model.parameters() if p.dim() < 2]
groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
try:
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), fused=cuda)
except (TypeError, RuntimeError):  # torch without fused AdamW
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2))


def lr_at(step):
    """Linear warmup, constant, then linear decay to zero over the last
    warmdown_steps."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    if step < args.num_steps - args.warmdown_steps:
        return args.lr
    return args.lr * max(0.0, args.num_steps - step) / args.warmdown_steps


def logits_fn(x):
    with torch.no_grad(), autocast():
        return raw_model(x)


def forward_backward(x, y, sync):
    with (nullcontext() if sync or not ddp else model.no_sync()):
        with fh.section("forward"), autocast():
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1)) / accum_steps
        with fh.section("backward"):
            loss.backward()
    return loss.detach()


# Compile and warm up the kernels on random tokens: forward and backward
# only, no optimizer step, so the weights stay as initialized.
if cuda:
    for _ in range(args.compile_warmup_steps):
        x = torch.randint(0, cfg.vocab_size, (args.micro_batch_seqs, args.seq_len), device=device)
        forward_backward(x, x, sync=False)
    optimizer.zero_grad(set_to_none=True)

# -----------------------------------------------------------------------------
# Training (timed)

# frontier:protected begin clock
fh.train_begin(logits_fn)  # the judge scores the untrained model; the clock starts
# frontier:protected end clock
# The training shards are there only from train_begin on.
loader = DataLoader(cfg.train_files, args.micro_batch_seqs, args.seq_len, rank, world_size)
for step in fh.steps(args.num_steps):
    train_loss = torch.zeros((), device=device)
    for micro in range(accum_steps):
        with fh.section("data"):
            x, y = loader.next_batch()
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        train_loss += forward_backward(x, y, sync=micro == accum_steps - 1)
    with fh.section("optimizer"):
        torch.nn.utils.clip_grad_norm_(raw_model.parameters(), args.grad_clip)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    # frontier:protected begin step
    fh.step(step, tokens=accum_steps * micro_tokens, train_loss=train_loss)
    if fh.want_validation(step):
        fh.validate(logits_fn)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
if ddp:
    # Tear down together: a process that leaves while another still talks
    # to the rendezvous store can abort it.
    dist.barrier()
    dist.destroy_process_group()
