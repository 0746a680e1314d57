#!/bin/bash
# source: Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh (`export CUDA_DEVICE_MAX_CONNECTIONS=1`) and
#   multi-variable `export A=… B=…` lines in issue threads.
# Worked by hand: TP 2 and PP 4 from one export line.
# expect: tp=2 pp=4
export CUDA_DEVICE_MAX_CONNECTIONS=1 TP=2 PP=4
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    --sequence-parallel --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 \
    --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 128 --bf16 --vocab-size 32000
