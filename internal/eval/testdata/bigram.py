# A bigram model: the smallest honest program under the harness contract.
import torch
import torch.nn as nn
import torch.nn.functional as F

import frontier_harness as fh

cfg = fh.config()
torch.manual_seed(cfg.seed)
V = cfg.vocab_size
model = nn.Embedding(V, V)
opt = torch.optim.Adam(model.parameters(), lr=0.5)
B, T = 32, 64


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
    fh.step(step, tokens=B * T, train_loss=loss)
    BODY
fh.finish(logits_fn)
