#!/bin/bash
# source: a Megatron-MoE-ModelZoo launch script as quoted in meshplan issue 21 (`--pipeline-model-parallel-size $((8*1))`):
#   arithmetic written straight into a flag's value.
# Worked by hand: PP = 8 x 1 = 8; TP = 2 x 2 = 4; 8 x 4 = 32 GPUs on 4 nodes of 8.
# expect: pp=8 tp=4 nodes=4 gpn=8 layers=32 hidden=4096 heads=32
NODES=4
torchrun --nnodes $NODES --nproc-per-node 8 pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \
    --tensor-model-parallel-size $(( 2 * 2 )) \
    --pipeline-model-parallel-size $((8*1)) \
    --micro-batch-size 1 --global-batch-size 256 --bf16 --vocab-size 32000
