#!/bin/bash
# source: Megatron-LM examples/pretrain_gpt3_175B.sh (older releases): the flags in a string `options=" … "` with
#   backslash continuations inside the quotes, `run_cmd="python -u ${DIR}/pretrain_gpt.py $@ ${options}"`,
#   `srun … sh -c "${run_cmd}"`.
# Worked by hand: GPT-3 175B: 96 layers, hidden 12288, 96 heads; TP 8, PP 16; micro 1, global 1536; fp16.
# expect: model=gpt3-175b tp=8 pp=16 mbs=1 gbs=1536 seq=2048 precision=fp16
DIR=`pwd`
options=" \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 16 \
    --num-layers 96 \
    --hidden-size 12288 \
    --num-attention-heads 96 \
    --seq-length 2048 \
    --max-position-embeddings 2048 \
    --micro-batch-size 1 \
    --global-batch-size 1536 \
    --vocab-file gpt2-vocab.json \
    --merge-file gpt2-merges.txt \
    --fp16 "
run_cmd="python -u ${DIR}/pretrain_gpt.py $@ ${options}"
srun -l --container-image "nvcr.io/nvidia/pytorch:20.12-py3" sh -c "${run_cmd}"
