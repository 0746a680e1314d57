#!/bin/bash
# source: NeMo / Megatron-Bridge slurm scripts (`case $MODEL in *8b*) … ;; *70b*) … ;; esac`).
# Worked by hand: MODEL=llama3_70b matches *70b*: TP 8, PP 4, 80 layers, hidden 8192.
# expect: tp=8 pp=4 layers=80 hidden=8192
MODEL=llama3_70b
case $MODEL in
    *8b*) TP=1; PP=1; L=32; H=4096; A=32; F=14336 ;;
    *70b*) TP=8; PP=4; L=80; H=8192; A=64; F=28672 ;;
esac
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    --sequence-parallel --num-layers $L --hidden-size $H --num-attention-heads $A --ffn-hidden-size $F --swiglu \
    --group-query-attention --num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 \
    --global-batch-size 128 --bf16 --vocab-size 128256
