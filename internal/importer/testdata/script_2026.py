import os
import sys
import uuid
from dataclasses import dataclass

@dataclass(slots=True)
class Hyperparameters:
    # data
    data_path = os.environ.get("DATA_PATH", ".")
    train_files: str = os.path.join(data_path, "data/fineweb10B/fineweb_train_*.bin") # training shards
    val_files: str = os.path.join(data_path, "data/fineweb10B/fineweb_val_*.bin") # validation shard(s)
    val_tokens: int = 10485760 # validation tokens scored
    # batch sizes
    val_batch_size: int = 4 * 64 * 1024 * 8
    # schedule
    num_scheduled_iterations: int = 1270  # steps of the scheduled part
    num_extension_iterations: int = 15  # steps after the schedule ends
    # evaluation and logging
    run_id: str = f"{uuid.uuid4()}"
    val_loss_every: int = 250  # validate every this many steps (0: only at the end)
    save_checkpoint: bool = False

args = Hyperparameters()

@dataclass(slots=True)
class TrainingStage:
    lr_mul: float
    batch_size: int

train_steps = args.num_scheduled_iterations + args.num_extension_iterations
training_time_ms = 0
torch.cuda.synchronize()
t0 = time.perf_counter()
for step in range(train_steps + 1):
    last_step = (step == train_steps)
    if last_step or (args.val_loss_every > 0 and step % args.val_loss_every == 0):
        torch.cuda.synchronize()
        training_time_ms += 1000 * (time.perf_counter() - t0)
        assert args.val_tokens % args.val_batch_size == 0
        val_steps = grad_accum_steps * args.val_tokens // args.val_batch_size
        val_loader = distributed_data_generator(args.val_files, args.val_batch_size, -1, grad_accum_steps=grad_accum_steps, align_to_bos=False)
        val_loss = run_validation(val_loader, val_steps)
        print0(f"step:{step}/{train_steps} val_loss:{val_loss:.4f} train_time:{training_time_ms:.0f}ms step_avg:{training_time_ms/max(step, 1):.2f}ms", console=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    if last_step:
        break
    train_one_step(step)
