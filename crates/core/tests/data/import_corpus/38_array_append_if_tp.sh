#!/bin/bash
# source: Megatron-Bridge and NeMo launch scripts (`if [ $TP -gt 1 ]; then ARGS+=(--sequence-parallel); fi`).
# Worked by hand: TP 4 > 1: the branch runs, SP on.
# expect: tp=4 sp=true
TP=4
ARGS=(--tensor-model-parallel-size $TP --num-layers 32 --hidden-size 4096 --num-attention-heads 32
      --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000)
if [ $TP -gt 1 ]; then
    ARGS+=(--sequence-parallel)
fi
torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"
