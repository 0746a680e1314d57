#!/bin/bash
# source: Alibaba Pai-Megatron-Patch examples/*/run_mcore_*.sh: every size a positional parameter of the script
#   (ENV=$1 … EP=${10}), pasted without the command line that gives them.
# Worked by hand: nothing sets $1 … ${10}: each is a note "unset: `$N` (give it)", never an invalid-value error; the
#   model is given (--model); TP, PP, EP and the batch stay Megatron's defaults (1; micro-batch 1).
# options: model=qwen2.5-7b
# expect: tp=1 pp=1 ep=1 mbs=1
# expect-note: unset: `$3` (give it)
# expect-note: unset: `${10}` (give it)
# expect-no-code: invalid-value
ENV=$1
MODEL_SIZE=$2
BATCH_SIZE=$3
GLOBAL_BATCH_SIZE=$4
SEQ_LEN=$5
PR=$6
TP=$7
PP=$8
SP=$9
EP=${10}
if [ $ENV = dsw ]; then
    NNODES=1
    GPUS_PER_NODE=8
fi
if [ $MODEL_SIZE = 7B ]; then
    NUM_LAYERS=28
    HIDDEN_SIZE=3584
    NUM_ATTN_HEADS=28
    INTERMEDIATE_SIZE=18944
    NUM_KEY_VALUE_HEADS=4
elif [ $MODEL_SIZE = 14B ]; then
    NUM_LAYERS=48
    HIDDEN_SIZE=5120
    NUM_ATTN_HEADS=40
    INTERMEDIATE_SIZE=13824
    NUM_KEY_VALUE_HEADS=8
fi
if [ $PR = fp16 ]; then
    pr_options="--fp16"
elif [ $PR = bf16 ]; then
    pr_options="--bf16"
fi
if [ $SP = true ] && [ $TP -gt 1 ]; then
    sp_options="--sequence-parallel"
else
    sp_options=""
fi
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_qwen.py \
    --micro-batch-size ${BATCH_SIZE} --global-batch-size ${GLOBAL_BATCH_SIZE} \
    --seq-length ${SEQ_LEN} --max-position-embeddings ${SEQ_LEN} \
    --num-layers ${NUM_LAYERS} --hidden-size ${HIDDEN_SIZE} --num-attention-heads ${NUM_ATTN_HEADS} \
    --ffn-hidden-size ${INTERMEDIATE_SIZE} --group-query-attention --num-query-groups ${NUM_KEY_VALUE_HEADS} \
    --swiglu --normalization RMSNorm --disable-bias-linear --add-qkv-bias --untie-embeddings-and-output-weights \
    --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} --expert-model-parallel-size ${EP} \
    --padded-vocab-size 152064 ${pr_options} ${sp_options}
