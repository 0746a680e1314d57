#!/bin/bash
# source: as 38 (`if [ $TP -gt 1 ]; then ARGS+=(--sequence-parallel); fi`), with TP 1.
# Worked by hand: TP 1: the branch does not run: SP off, no sp-requires-tp error.
# expect: tp=1 sp=false
# expect-no-code: sp-requires-tp
TP=1
ARGS=(--tensor-model-parallel-size $TP --num-layers 32 --hidden-size 4096 --num-attention-heads 32
      --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000)
if [ $TP -gt 1 ]; then
    ARGS+=(--sequence-parallel)
fi
torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"
