#!/bin/bash
# source: Alibaba Pai-Megatron-Patch's example scripts assemble option groups in variables set on some branches only
#   and expand them all after the program (`torchrun … ${megatron_options} ${pr_options} ${load_options} ${te_options}`,
#   e.g. the launch script quoted in Pai-Megatron-Patch issue #655).
# Worked by hand: pr_options is `--bf16` (PR=bf16); load_options and te_options are set nowhere, so each expands to
#   nothing — an argument of its own, not a value of the switch `--bf16` before it (read as fp32 with --bf16 "not
#   evaluated" before), nor a second value of `--micro-batch-size 2`; the TP size, itself an unset variable, is not
#   evaluated. 2 nodes of 8: 16 GPUs.
# expect: precision=bf16 mbs=2 gbs=256 pp=2 nodes=2 gpn=8 layers=32 hidden=4096
# expect-note: not set in the text: `${EXTRA}`, `${load_options}`, `${te_options}`
# expect-unread: --tensor-model-parallel-size
PR=bf16
BATCH_SIZE=2
if [ $PR = fp16 ]; then
    pr_options="--fp16"
elif [ $PR = bf16 ]; then
    pr_options="--bf16"
fi
megatron_options="--micro-batch-size ${BATCH_SIZE} ${EXTRA} --global-batch-size 256 --num-layers 32 --hidden-size 4096 \
    --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --pipeline-model-parallel-size 2 \
    --swiglu --normalization RMSNorm --disable-bias-linear --vocab-size 32000"
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py ${megatron_options} ${pr_options} ${load_options} ${te_options} \
    --tensor-model-parallel-size ${TP_SIZE}
