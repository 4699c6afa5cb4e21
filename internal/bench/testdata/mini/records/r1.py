# record r1
import frontier_harness as fh
lr = 0.001
TIME = 800
LOSS = 3
