import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

import frontier_harness as fh

# speedrun_mini.py ported to the harness contract: the same model, data
# order, optimizer and schedule; the harness injects the data, owns the
# clock and computes the validation loss.

cfg = fh.config()

# -----------------------------------------------------------------------------
# Model (as in speedrun_mini.py, with logits for the harness)

class CausalSelfAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (k.size(-1) ** 0.5)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))

class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim, bias=False)
        self.proj = nn.Linear(4 * dim, dim, bias=False)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x):
        return self.proj(F.relu(self.fc(x)).square())

class Block(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, num_heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))

class GPT(nn.Module):
    def __init__(self, vocab_size, num_layers, num_heads, model_dim, max_seq_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, model_dim)
        self.pos = nn.Embedding(max_seq_len, model_dim)
        self.blocks = nn.ModuleList([Block(model_dim, num_heads) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(model_dim)
        self.lm_head = nn.Linear(model_dim, vocab_size, bias=False)
        nn.init.normal_(self.embed.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        nn.init.zeros_(self.lm_head.weight)

    def logits(self, inputs):
        T = inputs.size(1)
        x = self.embed(inputs) + self.pos(torch.arange(T, device=inputs.device))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x)).float()

    def forward(self, inputs, targets):
        logits = self.logits(inputs)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

# -----------------------------------------------------------------------------
# Data

# frontier:protected begin data
def distributed_data_generator(files, batch_size, rank, world_size):
    local_batch_size = batch_size // world_size
    file_iter = iter(files)
    tokens, pos = fh.read_shard(next(file_iter)), 0
    while True:
        if pos + batch_size + 1 >= len(tokens):
            tokens, pos = fh.read_shard(next(file_iter)), 0
        buf = tokens[pos + rank * local_batch_size:][:local_batch_size + 1].astype(np.int64)
        pos += batch_size
        yield torch.from_numpy(buf[:-1]), torch.from_numpy(buf[1:])
# frontier:protected end data

# -----------------------------------------------------------------------------
# Hyperparameters

@dataclass
class Hyperparameters:
    train_seq_len = 64
    batch_seqs = 8
    num_iterations = 30
    cooldown_frac = 0.4
args = Hyperparameters()

rank, world_size = cfg.rank, cfg.world_size
device = torch.device(cfg.device)
if world_size > 1:
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

torch.manual_seed(0)
model = GPT(vocab_size=max(cfg.vocab_size, 256), num_layers=2, num_heads=2, model_dim=64,
            max_seq_len=max(args.train_seq_len, cfg.val_seq_len)).to(device)
if world_size > 1:
    for param in model.parameters():
        dist.broadcast(param.detach(), 0)
base_lr = 3e-3
optimizer = torch.optim.AdamW(model.parameters(), lr=base_lr, betas=(0.9, 0.95), weight_decay=0.0)

def get_lr(step):
    x = step / args.num_iterations
    if x < 1 - args.cooldown_frac:
        return 1.0
    w = (1 - x) / args.cooldown_frac
    return w * 1.0 + (1 - w) * 0.1

def train_step(inputs, targets):
    loss = model(inputs.view(args.batch_seqs, args.train_seq_len).to(device),
                 targets.view(args.batch_seqs, args.train_seq_len).to(device))
    loss.backward()
    if world_size > 1:
        for param in model.parameters():
            dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
            param.grad /= world_size
    return loss

def logits_fn(x):
    return model.logits(x)

batch_size = world_size * args.batch_seqs * args.train_seq_len
# Untimed warm-up steps (no optimizer step), like the speedrun's, on random
# tokens: the training data is there only once the clock runs.
for _ in range(3):
    x = torch.randint(0, cfg.vocab_size, (batch_size // world_size,))
    train_step(x, x)
    model.zero_grad(set_to_none=True)

fh.train_begin(logits_fn)
train_loader = distributed_data_generator(cfg.train_files, batch_size, rank, world_size)
for step in fh.steps(args.num_iterations):
    with fh.section("forward_backward"):
        loss = train_step(*next(train_loader))
    with fh.section("optimizer"):
        for group in optimizer.param_groups:
            group["lr"] = base_lr * get_lr(step)
        optimizer.step()
        model.zero_grad(set_to_none=True)
    # frontier:protected begin step
    fh.step(step, tokens=args.batch_seqs * args.train_seq_len, train_loss=loss.detach())
    if fh.want_validation(step):
        fh.validate(logits_fn)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
if world_size > 1:
    dist.barrier()
    dist.destroy_process_group()
