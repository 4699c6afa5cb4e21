"""Reference program of the bench tests' quick track: a bigram model.

Each step also does WASTE units of busywork whose result is never used: a
matrix product and a 10 ms wait (a stand-in for a loader that blocks), so
that removing them is a genuine speedup with the same loss, several times
larger than the timing noise of a loaded test machine (a wait does not
stretch under load the way computation does).
"""

import time

import torch
import torch.nn.functional as F

# frontier:protected begin harness
import frontier_harness as fh

cfg = fh.config()
# frontier:protected end harness

STEPS = 60
WASTE = 4
LR = 0.5
B, T = 32, 64

torch.manual_seed(cfg.seed)
V = cfg.vocab_size
model = torch.nn.Embedding(V, V)
opt = torch.optim.Adam(model.parameters(), lr=LR)
busy = torch.randn(512, 512) / 512**0.5


def logits_fn(x):
    return model(x)


fh.train_begin(logits_fn)
tokens = torch.from_numpy(fh.read_shard(cfg.train_files[0]).astype("int64"))
for step in fh.steps(STEPS):
    with fh.section("data"):
        i = step * B * T
        x = tokens[i : i + B * T].view(B, T)
        y = tokens[i + 1 : i + B * T + 1].view(B, T)
    with fh.section("forward"):
        loss = F.cross_entropy(model(x).view(-1, V), y.reshape(-1))
    with fh.section("backward"):
        opt.zero_grad(set_to_none=True)
        loss.backward()
    with fh.section("optimizer"):
        opt.step()
    with fh.section("busywork"):
        for _ in range(WASTE):
            busy = torch.tanh(busy @ busy)
            time.sleep(0.01)
    # frontier:protected begin step
    fh.step(step, tokens=B * T, train_loss=loss)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
