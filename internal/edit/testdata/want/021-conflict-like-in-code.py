"""Train a small GPT on the track's token shards.

Results
=======
The environment times the run and computes the validation loss itself.
"""
import math
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness-import
import frontier_harness as fh
# frontier:protected end harness-import


@dataclass
class Hyperparameters:
    # optimization
    num_iterations : int = 1750 # number of optimizer steps
    warmup_iters : int = 0
    cooldown_frac : float = 0.4 # fraction of training spent cooling down
    lr : float = 0.0036
    weight_decay : float = 0.0
    # model
    n_layer : int = 12
    n_head : int = 6
    n_embd : int = 768
    # data
    batch_size : int = 8*64*1024 # tokens per step
    train_seq_len : int = 64*1024


args = Hyperparameters()
cfg = fh.config()
torch.manual_seed(cfg.seed)


def norm(x):
    return F.rms_norm(x, (x.size(-1),))


class Rotary(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        t = torch.arange(x.size(1), device=x.device).float()
        freqs = torch.outer(t, self.inv_freq)
        cos, sin = freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, n_head):
        super().__init__()
        assert dim % n_head == 0
        self.n_head = n_head
        self.head_dim = dim // n_head
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.proj.weight.data.zero_()
        self.rotary = Rotary(self.head_dim)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim)
        k = k.view(B, T, self.n_head, self.head_dim)
        v = v.view(B, T, self.n_head, self.head_dim)
        q, k = norm(q), norm(k)
        q, k = self.rotary(q), self.rotary(k)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim, bias=False)
        self.proj = nn.Linear(4 * dim, dim, bias=False)
        self.proj.weight.data.zero_()

    def forward(self, x):
        x = self.fc(x)
        x = F.relu(x).square()
        return self.proj(x)


class Block(nn.Module):
    def __init__(self, dim, n_head):
        super().__init__()
        self.attn = CausalSelfAttention(dim, n_head)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(norm(x))
        x = x + self.mlp(norm(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, n_layer, n_head, n_embd):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight.data.zero_()

    def forward(self, idx):
        x = norm(self.embed(idx))
        for block in self.blocks:
            x = block(x)
        x = norm(x)
        logits = self.lm_head(x)
        logits = 30 * torch.tanh(logits / 30)
        return logits.float()


def get_lr(step):
    if step < args.warmup_iters:
        return (step + 1) / args.warmup_iters
    x = step / args.num_iterations
    if x < 1 - args.cooldown_frac:
        return 1.0
    w = (1 - x) / args.cooldown_frac
    return w * 1.0 + (1 - w) * 0.1


model = GPT(cfg.vocab_size, args.n_layer, args.n_head, args.n_embd).to(cfg.device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.8, 0.95), eps=1e-10, weight_decay=args.weight_decay)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, get_lr)


def batches(seq_len):
    tokens_per_rank = args.batch_size
    for inputs, targets in fh.batches(cfg.train_files, tokens_per_rank, seq_len):
        yield inputs.to(cfg.device), targets.to(cfg.device)


def logits_fn(input_ids):
    return model(input_ids)


fh.train_begin()
train_loader = batches(args.train_seq_len)
for step in fh.steps(args.num_iterations):
    with fh.section("data"):
        inputs, targets = next(train_loader)
    with fh.section("forward"):
        logits = model(inputs)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    with fh.section("backward"):
        loss.backward()
    with fh.section("optimizer"):
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    fh.step(step, tokens=inputs.numel(), train_loss=loss.detach())
    if step == 0:
        print("<<<<<<< first step done >>>>>>>")
# >>>>>>> marker lines like this one are only comments
    # frontier:protected begin validation
    if fh.want_validation(step):
        model.eval()
        with torch.no_grad():
            fh.validate(logits_fn)
        model.train()
    # frontier:protected end validation

# frontier:insert-here

fh.finish(logits_fn)
