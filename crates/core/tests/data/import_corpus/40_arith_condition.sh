#!/bin/bash
# source: launch scripts in Megatron-LM issue threads (`if (( NNODES > 1 )); then …; fi`).
# Worked by hand: NNODES 2 > 1: the distributed optimizer is on; 2 nodes x 8.
# expect: training.use_distributed_optimizer=true nodes=2 gpn=8
NNODES=2
EXTRA=""
if (( NNODES > 1 )); then
    EXTRA="--use-distributed-optimizer"
fi
torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \
    --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000 $EXTRA
