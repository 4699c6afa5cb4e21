# record r2
import frontier_harness as fh
lr = 0.001
TIME = 600
LOSS = 3
