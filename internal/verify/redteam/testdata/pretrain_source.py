"""Attack: a model fitted before the clock from knowledge carried in the source.

The program carries, as a hex string, the four most frequent next tokens of
every token (counted from the training shards offline, when the program
was written) and writes them into the bigram table before the clock starts
(three more logits on each), then trains 20 timed steps: what the table
knows was learned outside the clock. Class: moving timed work out of the
clock (weights brought in). The table was counted from a tiny corpus of
another installation: every installation draws its own corpus from a
secret, so what the source carries is knowledge of another language.
Expected: loss_too_high (the table does not help here), or invalid,
pretrain, where the judge's score of the model that starts the clock, on
text no validation shows, is already far better than an untrained one's.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# frontier:protected begin harness
import frontier_harness as fh

cfg = fh.config()
# frontier:protected end harness

STEPS = 20
LR = 3e-3
BIGRAM_LR = 0.09
B, T = 16, 64
D, HEADS = 64, 4
V = cfg.vocab_size
SUCCESSORS = bytes.fromhex(
    "51be5f7400618a598ea158424f6a0f0a3c64b28f96ba2f8d3a86696423901a98521b4272592a4bb2736cb31aacb97027"
    "818851109d13024b6339b90e08981f2114272e9b9f774c27958c6488933f36a64db17d396515be7f08539bbc86ae728d"
    "31b734465705520b095a361e9320625b694678bc055c0e7c4eae5188573b6b7c538772bba642162b797124a87c45a403"
    "ab6e05383f462a704f5605843eba9ea2865150b729166d67a42f2a93bc467a1b356b9b277744b8ae52317412ac2f5049"
    "23183403aa7a75032a69b0329f4f476aab3c7b4d118a41444e3726a83647750e6dae661d248c866b6e4572448f841380"
    "40312ab5821abf747b819c8e8ba7636c2b9864519119742052903a0bbc542e1cae44be1604116e263a40072d85246721"
    "27199870983b9221a5b077948e7f106174b6830c69b6b78f33b32f779642bf08abb527af86462e79402e230b86115170"
    "73b372ac55b5972881093aae1b5c932b1e26a47402684e983427909bb18e2a986b72479ea99eb812149b375762838247"
    "1a8ebb78b83b52a6742397656cb31aba459f149898bd81217a3caa1b25247848ab926f883732217fba01096a486e744b"
    "b2b95e91553921b5885baa6f0e8c74079326bf8b169aa63c763b5c54531a45a72731178eaea96b304009ad413d6ba5a9"
    "b9788785422a340c29411aab14022f73aab5375a8648261e942f3f9e631535882a978b6556998386808429868d73824c"
    "50aebcbd2a844b2e6d6487b58187b2a4473615ab183f10618fba2dbc7aae5126b7b31a82924cbc512b073e265cae929e"
    "055c8d5b978e37124316844d96445c0e1b56554f0c988e33118d0dae88674e7ebe4898b077a12b554ea69aac12931742"
    "17a698373b852a654589551b36b4bf3c1a0147974c502a4a00617ea6bd324a3136aa031f4c8337729eaba601a62caa6d"
    "bf83967baa6baf97b54a64538f218310227b61477f8a745119175cac0310a899b03c0b7ba8b329bd045b349f9ab82720"
    "5b94ad307853321d3b77243e802d0116aabd4f2428349e43682fb2956a4107158d164f25a8345057366b7c314f21bb3c"
    "c4c5c6c7c4c5c6c7c4c5c6c7c4c5c6c7e0e6e5e9ecf2e6e9e7f0ebdee0d5e5d4dbdaeae8ecebe2ede8ecd6e7edefe7e8"
    "e9f0f1e0eddde6d7edd6d4e4eff2dcdddfd7def3dfeaf1d9d7d8d5eaf2f0deec66358124356681243581664181356641"
    "356681413566812435814166358166243581662435816641358166243581662435816624356681248135669435668124"
    "356681418135662435816624358166943581662435816624356681243566819435816641358166243581664135668194"
    "358166243581662435668141356681410001020300010203000102030001020300010203000102030001020300010203"
    "00010203000102030001020335816624")


def doc_causal_mask(idx):
    """Query i may attend to key j when j <= i and both are in the same
    document; a document starts at each BOS."""
    n = idx.size(1)
    doc = (idx == cfg.bos_id).cumsum(dim=1)
    causal = torch.ones(n, n, dtype=torch.bool, device=idx.device).tril()
    return (causal & (doc[:, :, None] == doc[:, None, :])).unsqueeze(1)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(max(T, cfg.val_seq_len), D)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.head = nn.Linear(D, V, bias=False)
        # a table of next-token logits per current token, like the
        # speedrun's bigram embeddings: it learns the easy part fast
        self.bigram = nn.Embedding(V, V)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.bigram.weight)

    def attend(self, x, mask):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (t.view(b, n, HEADS, c // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // HEADS)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, n, c))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        x = x + self.attend(self.ln1(x), doc_causal_mask(idx))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(self.ln_f(x)) + self.bigram(idx)


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


model = GPT().to(cfg.device)
groups = [{"params": [p for n, p in model.named_parameters() if n != "bigram.weight"], "base_lr": LR},
          {"params": [model.bigram.weight], "base_lr": BIGRAM_LR}]
optimizer = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.95), weight_decay=0.0)


def logits_fn(x):
    return model(x)


with torch.no_grad():
    rows = torch.arange(V).repeat_interleave(4)
    model.bigram.weight[rows, torch.tensor(list(SUCCESSORS)).long()] = 3.0


# frontier:protected begin clock
fh.train_begin(logits_fn)  # the judge scores the untrained model; the clock starts
# frontier:protected end clock
# The training shards are there only from train_begin on.
loader = DataLoader(cfg.train_files, B, T, cfg.seed, cfg.rank, cfg.world_size)
for step in fh.steps(STEPS):
    with fh.section("data"):
        x, y = loader.next_batch()
        x, y = x.to(cfg.device), y.to(cfg.device)
    with fh.section("forward"):
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
    with fh.section("backward"):
        loss.backward()
    with fh.section("optimizer"):
        for group in optimizer.param_groups:
            group["lr"] = group["base_lr"] * min(1.0, (step + 1) / 20) * (1 - step / STEPS) ** 0.5
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    # frontier:protected begin step
    fh.step(step, tokens=B * T, train_loss=loss.detach())
    if fh.want_validation(step):
        fh.validate(logits_fn)
    # frontier:protected end step

# frontier:protected begin finish
fh.finish(logits_fn)
# frontier:protected end finish
