#!/bin/bash
set -e
ENV=$1
MODEL_SIZE=7B
BATCH_SIZE=2
GLOBAL_BATCH_SIZE=256
TP=2
PP=2
CP=1
SEQ_LEN=4096
PR=bf16
GPUS_PER_NODE=8
if [ $MODEL_SIZE = 7B ]; then
NUM_LAYERS=32
HIDDEN_SIZE=4096
NUM_ATTENTION_HEADS=32
INTERMEDIATE_SIZE=11008
MAX_POSITION_EMBEDDINGS=4096
elif [ $MODEL_SIZE = 13B ]; then
NUM_LAYERS=40
HIDDEN_SIZE=5120
NUM_ATTENTION_HEADS=40
INTERMEDIATE_SIZE=13824
MAX_POSITION_EMBEDDINGS=4096
fi
if [ $PR = fp16 ]; then
    pr_options=" \
		    --fp16 \
            --apply-query-key-layer-scaling"
elif [ $PR = bf16 ]; then
    pr_options=" \
        --bf16"
fi
megatron_options="  \
        --lr 1e-5 \
        --micro-batch-size ${BATCH_SIZE} \
        --global-batch-size ${GLOBAL_BATCH_SIZE} \
        --num-layers ${NUM_LAYERS} \
        --hidden-size ${HIDDEN_SIZE} \
        --num-attention-heads ${NUM_ATTENTION_HEADS} \
        --ffn-hidden-size ${INTERMEDIATE_SIZE} \
        --seq-length ${SEQ_LEN} \
        --max-position-embeddings ${MAX_POSITION_EMBEDDINGS} \
        --tensor-model-parallel-size ${TP} \
        --pipeline-model-parallel-size ${PP} \
        --context-parallel-size ${CP} \
        --swiglu \
        --normalization RMSNorm \
        --position-embedding-type rope \
        --untie-embeddings-and-output-weights \
        --disable-bias-linear \
        --use-distributed-optimizer \
        --patch-tokenizer-type LLamaTokenizer"
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 2 --node_rank $RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT"
run_cmd="torchrun $DISTRIBUTED_ARGS pretrain_llama.py
 ${megatron_options} ${pr_options} ${load_options} ${te_options} ${activation_checkpoint_options} ${do_options} ${flash_options} ${sft_options} ${vp_options} ${gqa_options}"
echo ${run_cmd}
eval ${run_cmd}
