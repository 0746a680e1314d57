#!/bin/bash
# source: Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh (MoE flags, no --expert-tensor-parallel-size).
# Worked by hand: Megatron-LM's validate_args sets ETP = TP when it is not given: 2.
# expect: etp=2 tp=2 ep=4 experts=8
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel \
    --expert-model-parallel-size 4 --num-experts 8 --moe-router-topk 2 --num-layers 16 --hidden-size 2048 \
    --num-attention-heads 16 --ffn-hidden-size 5632 --swiglu --seq-length 4096 --max-position-embeddings 4096 \
    --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000
