import torch
import torch.nn.functional as F

import frontier_harness as fh

cfg = fh.config()


def make_model(vocab_size, width):
	return torch.nn.Sequential(
		torch.nn.Embedding(vocab_size, width),
		torch.nn.Linear(width, vocab_size),
	)


def train(model, steps):
	opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
	for step in fh.steps(steps):
		x, y = fh.batch(16, 64)
		loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
		loss.backward()
		opt.step()
		opt.zero_grad()
		fh.step(step, tokens=x.numel(), train_loss=loss.detach())


model = make_model(cfg.vocab_size, 64)
fh.train_begin()
train(model, 100)
fh.finish(lambda ids: model(ids))
