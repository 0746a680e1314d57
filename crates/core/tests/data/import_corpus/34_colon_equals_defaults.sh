#!/bin/bash
# source: NeMo / Megatron launch scripts' `: "${TP:=4}"` idiom (assign a default in place), e.g. NVIDIA
#   dgxc-benchmarking launch scripts.
# Worked by hand: TP is assigned 4 and PP 2 by := ; NNODES 2 by := ; 2 nodes x 8.
# expect: tp=4 pp=2 nodes=2 gpn=8
: "${TP:=4}"
: "${NNODES:=2}"
torchrun --nnodes $NNODES --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size ${PP:=2} --sequence-parallel --num-layers 32 --hidden-size 4096 \
    --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
    --global-batch-size 128 --bf16 --vocab-size 32000
