#!/bin/bash
# source: Megatron-Bridge examples/models/*/slurm_pretrain.sh (a loop over parallel configurations, each a run) and
#   scaling sweeps in Megatron-LM issue threads (`for TP in 2 4 8; do … done`).
# Worked by hand: the first configuration runs first: TP 2; the note names the others (4, 8).
# expect: tp=2 layers=32 hidden=4096
# expect-note: the others: 4, 8
for TP in 2 4 8; do
    torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP \
        --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \
        --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000
done
