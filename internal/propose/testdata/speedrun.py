"""A speedrun-style training program used to test the mutation baseline.

Strings and comments mention lr = 0.1 and batch_size = 64, which must be left alone.
"""
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness-import
import frontier_harness as fh
# frontier:protected end harness-import

LR = 3e-3
BATCH_SIZE = 32
GRAD_CLIP = 1.0
seed = 1337


@dataclass
class Hyperparameters:
    train_files = os.environ.get("TRAIN_FILES", "data/fineweb_train_*.bin")
    val_tokens = 10485760 # how many tokens of validation data
    train_seq_len = 48*1024 # FlexAttention sequence length
    val_seq_len = 4*64*1024
    num_iterations : int = 1750 # number of iterations to run
    cooldown_frac : float = 0.4 # fraction of training spent cooling down the learning rate
    warmup_iters = 0
    lr=0.0036
    val_loss_every = 125 # every how many steps to evaluate val loss? 0 for only at the end
    save_checkpoint = False


args = Hyperparameters()
cfg = fh.config()
print("lr=0.2, num_iterations=5")  # lr=0.5 in a comment


class Attention(nn.Module):
    def __init__(self, dim, num_heads, head_dim=128, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return F.softmax(q @ k.transpose(-2, -1), dim=1) @ v


class GPT(nn.Module):
    def __init__(self, vocab_size, num_layers, num_heads, model_dim):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, model_dim)
        self.blocks = nn.ModuleList([Attention(model_dim, num_heads) for _ in range(num_layers)])
        self.lm_head = nn.Linear(model_dim, vocab_size, bias=False)

    def forward(self, idx):
        x = self.embed(idx)
        for b in self.blocks:
            x = x + b(x)
        return self.lm_head(x)


model = GPT(vocab_size=50304, num_layers=12, num_heads=6, model_dim=768)
hidden = [p for p in model.blocks.parameters() if p.ndim >= 2]
optimizer1 = torch.optim.AdamW(model.embed.parameters(), lr=0.6, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0)
optimizer2 = torch.optim.SGD(hidden, lr=0.05, momentum=0.95, nesterov=True)
optimizer3 = torch.optim.AdamW(
    model.lm_head.parameters(),
    lr=0.008,
    betas=(0.9, 0.99),
    weight_decay=0.1,
)

fh.train_begin()
for step in fh.steps(args.num_iterations):
    if step == 10:
        print("warm")
    x, y = fh.batch(BATCH_SIZE, args.train_seq_len)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=GRAD_CLIP)
    for opt in (optimizer1, optimizer2, optimizer3):
        opt.step()
        opt.zero_grad(set_to_none=True)
    fh.step(step, tokens=x.numel(), train_loss=loss.detach())
    # frontier:protected begin validation
    if fh.want_validation(step):
        fh.validate(lambda ids: model(ids), lr=0.5)
    # frontier:protected end validation
fh.finish(lambda ids: model(ids))
