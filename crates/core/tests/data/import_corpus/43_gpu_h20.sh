#!/bin/bash
# source: Pai-Megatron-Patch and ms-swift issue threads run on H20 (96 GB) clusters.
# Worked by hand: the H20 row of the catalogue.
# options: gpu=h20
# expect: gpu=h20 tp=4
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --sequence-parallel --num-layers 32 \
    --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
    --global-batch-size 64 --bf16 --vocab-size 32000
