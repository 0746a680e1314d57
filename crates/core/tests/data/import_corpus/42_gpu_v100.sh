#!/bin/bash
# source: Megatron-LM issue threads run on V100 clusters (--fp16, no bf16 on Volta).
# Worked by hand: the V100 row of the catalogue (32 GB).
# options: gpu=v100-sxm2-32gb
# expect: gpu=v100-sxm2-32gb tp=2 precision=fp16
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel --num-layers 24 \
    --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 \
    --global-batch-size 64 --fp16 --vocab-size 50257
