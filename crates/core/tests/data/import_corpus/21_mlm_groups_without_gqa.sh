#!/bin/bash
# source: Megatron-LM arguments.py (--num-query-groups is read only with --group-query-attention), as scripts in issue
#   threads pass --num-query-groups alone.
# Worked by hand: without --group-query-attention every head is its own group: 32.
# expect: groups=32 heads=32
# expect-note: --group-query-attention
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --num-query-groups 8 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \
    --bf16 --vocab-size 32000
