#!/bin/bash
# source: Megatron-LM examples/post_training/modelopt/*.sh (`source "${SCRIPT_DIR}/conf/arguments.sh"`, then the model's
#   MODEL_ARGS from a sourced conf/<org>/<model>.sh).
# Worked by hand: the sourced file is not in the text: a note names it; the flags given here are read.
# expect: tp=8 pp=1 layers=80 hidden=8192
# expect-note: conf/arguments.sh
SCRIPT_DIR="$(dirname "$(readlink -f "$0")")"
source "${SCRIPT_DIR}/conf/arguments.sh"
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel \
    --num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention --num-query-groups 8 \
    --ffn-hidden-size 28672 --swiglu --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
    --global-batch-size 128 --bf16 --vocab-size 128256 ${MLM_EXTRA_ARGS}
