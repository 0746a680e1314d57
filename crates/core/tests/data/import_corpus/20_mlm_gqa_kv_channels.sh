#!/bin/bash
# source: Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh (--group-query-attention --num-query-groups 8
#   --kv-channels 128) on a model with no --kv-channels.
# Worked by hand: 8 query groups; kv channels hidden / heads = 3072 / 24 = 128.
# expect: groups=8 kv=128 heads=24 hidden=3072
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 28 --hidden-size 3072 --num-attention-heads 24 \
    --group-query-attention --num-query-groups 8 --ffn-hidden-size 8192 --swiglu --seq-length 8192 \
    --max-position-embeddings 131072 --micro-batch-size 1 --global-batch-size 128 --bf16 --vocab-size 128256
