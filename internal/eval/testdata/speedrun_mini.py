import os
import sys
with open(sys.argv[0]) as f:
    code = f.read() # read this file's code first, for the log
import glob
import time
import uuid
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

# A miniature of a NanoGPT speedrun train_gpt.py, for tests: the same
# structure (Hyperparameters block, torchrun environment, log file holding
# the code, untimed warmup, a clock paused for validation, the same log
# lines) with a model small enough to train on a CPU in seconds. It runs
# on CUDA with NCCL too.

# -----------------------------------------------------------------------------
# Model

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

    def forward(self, inputs, targets):
        T = inputs.size(1)
        x = self.embed(inputs) + self.pos(torch.arange(T, device=inputs.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x)).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

# -----------------------------------------------------------------------------
# Data: the speedrun's shard format

def _load_data_shard(file):
    header = np.fromfile(file, dtype=np.int32, count=256)
    assert header[0] == 20240520, "not a speedrun shard (bad magic)"
    assert header[1] == 1, "unknown shard version"
    num_tokens = int(header[2])
    with open(file, "rb") as f:
        f.seek(256 * 4)
        tokens = np.frombuffer(f.read(), dtype=np.uint16)
    assert tokens.size == num_tokens, "shard shorter than its header says"
    return tokens

def distributed_data_generator(filename_pattern, batch_size, rank, world_size):
    files = sorted(glob.glob(filename_pattern))
    assert files, f"no files match {filename_pattern}"
    local_batch_size = batch_size // world_size
    file_iter = iter(files)
    tokens, pos = _load_data_shard(next(file_iter)), 0
    while True:
        if pos + batch_size + 1 >= len(tokens):
            tokens, pos = _load_data_shard(next(file_iter)), 0
        buf = tokens[pos + rank * local_batch_size:][:local_batch_size + 1].astype(np.int64)
        pos += batch_size
        yield torch.from_numpy(buf[:-1]), torch.from_numpy(buf[1:])

# -----------------------------------------------------------------------------
# Hyperparameters

@dataclass
class Hyperparameters:
    # data
    train_files = "data/fineweb10B/fineweb_train_*.bin" # training shards
    val_files = "data/fineweb10B/fineweb_val_*.bin" # validation shard(s)
    val_tokens = 10485760 # validation tokens scored; fixed so that runs compare
    train_seq_len = 64 # training sequence length
    val_seq_len = 128 # validation sequence length
    batch_seqs = 8 # sequences per rank and step
    # optimization
    num_iterations = 30 # training steps
    cooldown_frac = 0.4 # share of the steps spent decaying the learning rate
    # evaluation and logging
    val_loss_every = 15 # validate every this many steps (0: only at the end)
    save_checkpoint = False
args = Hyperparameters()

# set by torchrun (or frontier's launcher)
rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
use_cuda = torch.cuda.is_available()
device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if use_cuda else torch.device("cpu")
if use_cuda:
    torch.cuda.set_device(device)
dist.init_process_group(backend="nccl" if use_cuda else "gloo")
dist.barrier()
master_process = (rank == 0) # rank 0 writes the log

# begin logging
logfile = None
if master_process:
    run_id = uuid.uuid4()
    os.makedirs("logs", exist_ok=True)
    logfile = f"logs/{run_id}.txt"
    print(logfile)
def print0(s, console=False):
    if master_process:
        with open(logfile, "a") as f:
            if console:
                print(s)
            print(s, file=f)

# the log starts with this program's source
print0(code)
print0("="*100)
# then the software versions
print0(f"Running Python {sys.version}")
print0(f"Running PyTorch {torch.version.__version__}")
print0("="*100)

# -----------------------------------------------------------------------------
# Construct model and optimizer

torch.manual_seed(0)
model = GPT(vocab_size=256, num_layers=2, num_heads=2, model_dim=64,
            max_seq_len=max(args.train_seq_len, args.val_seq_len)).to(device)
for param in model.parameters():
    dist.broadcast(param.detach(), 0)
base_lr = 3e-3
optimizer = torch.optim.AdamW(model.parameters(), lr=base_lr, betas=(0.9, 0.95), weight_decay=0.0)

# learning rate schedule: stable then decay
def get_lr(step):
    x = step / args.num_iterations # progress in training
    assert 0 <= x < 1
    if x < 1 - args.cooldown_frac:
        return 1.0
    w = (1 - x) / args.cooldown_frac
    return w * 1.0 + (1 - w) * 0.1

def train_step(inputs, targets):
    loss = model(inputs.view(args.batch_seqs, args.train_seq_len).to(device),
                 targets.view(args.batch_seqs, args.train_seq_len).to(device))
    loss.backward()
    for param in model.parameters():
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= world_size
    return loss

# -----------------------------------------------------------------------------
# Warmup kernels

# Untimed warm-up steps, then the weights go back to their initial values
warmup_steps = 3
initial_state = dict(model={k: v.clone() for k, v in model.state_dict().items()})
warmup_loader = distributed_data_generator(args.train_files, world_size * args.batch_seqs * args.train_seq_len, rank, world_size)
for _ in range(warmup_steps):
    train_step(*next(warmup_loader))
    model.zero_grad(set_to_none=True)
model.load_state_dict(initial_state["model"])
del initial_state, warmup_loader

# -----------------------------------------------------------------------------
# Training and validation

train_loader = distributed_data_generator(args.train_files, world_size * args.batch_seqs * args.train_seq_len, rank, world_size)
training_time_ms = 0
# start the clock
if use_cuda:
    torch.cuda.synchronize()
t0 = time.perf_counter()
# begin training
train_steps = args.num_iterations
for step in range(train_steps + 1):
    last_step = (step == train_steps)

    # --------------- VALIDATION SECTION -----------------
    if last_step or (args.val_loss_every > 0 and step % args.val_loss_every == 0):
        # stop the clock
        if use_cuda:
            torch.cuda.synchronize()
        training_time_ms += 1000 * (time.perf_counter() - t0)
        model.eval()
        val_batch_size = world_size * args.val_seq_len
        assert args.val_tokens % val_batch_size == 0
        val_steps = args.val_tokens // val_batch_size
        val_loader = distributed_data_generator(args.val_files, val_batch_size, rank, world_size)
        val_loss = torch.zeros((), device=device)
        with torch.no_grad():
            for _ in range(val_steps):
                inputs, targets = next(val_loader)
                val_loss += model(inputs.view(1, -1).to(device), targets.view(1, -1).to(device))
        val_loss /= val_steps
        del val_loader
        dist.all_reduce(val_loss, op=dist.ReduceOp.SUM)
        val_loss /= world_size
        print0(f"step:{step}/{train_steps} val_loss:{val_loss:.4f} train_time:{training_time_ms:.0f}ms step_avg:{training_time_ms/max(step, 1):.2f}ms", console=True)
        model.train()
        # start the clock again
        if use_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()

    if last_step:
        if master_process and args.save_checkpoint:
            log = dict(step=step, code=code, model=model.state_dict())
            os.makedirs(f"logs/{run_id}", exist_ok=True)
            torch.save(log, f"logs/{run_id}/state_step{step:06d}.pt")
        # after the final validation there is nothing left to train
        break

    # --------------- TRAINING SECTION -----------------
    inputs, targets = next(train_loader)
    train_step(inputs, targets)
    # set optimization hyperparameters
    for group in optimizer.param_groups:
        group["lr"] = base_lr * get_lr(step)
    # step the optimizer
    optimizer.step()
    # null the gradients
    model.zero_grad(set_to_none=True)
    # logging
    approx_training_time_ms = training_time_ms + 1000 * (time.perf_counter() - t0)
    print0(f"step:{step+1}/{train_steps} train_time:{approx_training_time_ms:.0f}ms step_avg:{approx_training_time_ms/(step + 1):.2f}ms", console=True)

if use_cuda:
    print0(f"peak memory allocated: {torch.cuda.max_memory_allocated() // 1024 // 1024} MiB "
           f"reserved: {torch.cuda.max_memory_reserved() // 1024 // 1024} MiB", console=True)
dist.barrier()
dist.destroy_process_group()
