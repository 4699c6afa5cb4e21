import torch
import torch.nn as nn
import torch.nn.functional as F

import frontier_harness as fh

cfg = fh.config()
torch.manual_seed(cfg.seed)

LR = 3e-3
BATCH_SIZE = 32
SEQ_LEN = 128
D_MODEL = 128


class TinyLM(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        x = self.embed(idx) * 2.0
        x = x + self.mlp(x)
        return self.head(x)


model = TinyLM(cfg.vocab_size, D_MODEL)
opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.1)

fh.train_begin()
for step in fh.steps(200):
    x, y = fh.batch(BATCH_SIZE, SEQ_LEN)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    fh.step(step, tokens=x.numel(), train_loss=loss.detach())
fh.finish(lambda ids: model(ids))
