# record r0
import frontier_harness as fh
lr = 0.001
TIME = 1000
LOSS = 3
