#!/bin/bash
# source: Alibaba Pai-Megatron-Patch examples/qwen2_5/README (`sh run_mcore_qwen.sh dsw 7B 1 8 …`) followed by the
#   script's body: the positional parameters come from the command line; `if [ $MODEL_SIZE = 7B ]; then … elif …`,
#   `if [ $SP = true ] && [ $TP -gt 1 ]`, --padded-vocab-size.
# Worked by hand: dsw → 1 node x 8; 7B → 28 layers, hidden 3584, 28 heads, FFN 18944, 4 KV heads; micro-batch 1,
#   global 8, sequence 4096, bf16, TP 2, PP 2, SP on (true and TP 2 > 1), EP 1; vocabulary 152,064 (--padded-vocab-size).
# expect: nodes=1 gpn=8 layers=28 hidden=3584 heads=28 ffn=18944 groups=4 mbs=1 gbs=8 seq=4096 precision=bf16 tp=2 pp=2 sp=true ep=1 vocab=152064
sh run_mcore_qwen.sh dsw 7B 1 8 4096 bf16 2 2 true 1
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
