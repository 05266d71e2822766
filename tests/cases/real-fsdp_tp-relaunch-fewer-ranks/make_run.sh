#!/bin/bash
# How examples/runs/fsdp_tp-relaunch-fewer-ranks was made (run in an empty folder,
# WANDB_MODE=disabled, the real ezpz 0.26.1 and torch CPU installed).
# Attempt 1 on 2 ranks with checkpoints every 5 steps, killed after its 12th step record;
# attempt 2, the same command on 1 rank into the same folder (fixed EZPZ_LOG_TIMESTAMP),
# started ~30 s after the kill: it resumes from the step-10 checkpoint.
export EZPZ_LOG_TIMESTAMP=$(date -u +%Y-%m-%d-%H%M%S)
A="--tp 1 --model debug --dataset random --vocab-size 2048 --epochs 1 --batch-size 2 --seq-len 128 --train-iters 30 --fp32 --ckpt-dir ckpt --save-interval 5"
M=outputs/ezpz.examples.fsdp_tp/$EZPZ_LOG_TIMESTAMP/metrics-0.jsonl
setsid ezpz launch -n 2 -- python3 -m ezpz.examples.fsdp_tp $A > attempt1.log 2>&1 &
PID=$!
until [ "$(grep -c '"train/iter": ' $M 2>/dev/null || echo 0)" -ge 12 ]; do sleep 0.1; done
kill -TERM -- -$PID   # the launcher's own process group: mpirun and both ranks
wait $PID
sleep 30
ezpz launch -n 1 -- python3 -m ezpz.examples.fsdp_tp $A > attempt2.log 2>&1
