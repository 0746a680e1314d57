# source: a terminal paste in a thread: the prompt and the command that ran a wrapper with positional arguments, then the
#   wrapper's text, as Pai-Megatron-Patch's run_mcore_*.sh scripts take their settings ($1 … ${15}: environment, model
#   size, micro and global batch, learning rates, sequence and padding lengths, precision, TP, PP, CP, SP, distributed
#   optimizer, flash attention). Written here, cut to what sizes the run (the script body's other constructs are
#   artefacts 09 and 10; this one is the prompt).
# Worked by hand: $1=dsw sets 8 GPUs on 1 node; $2=7B the 28-layer, 3584-wide shape (28 heads, 4 query groups, FFN
#   18944); $3=1, $4=256 the batches; $7=4096 the sequence; $9=bf16; ${10}=2 TP, ${11}=1 PP, ${12}=1 CP; ${13}=true with
#   TP 2 > 1 turns on sequence parallelism; ${14}=true the distributed optimizer (before: the prompt `user@host:dir#`
#   hid the command, every `$N` was unset and the run read as TP 1, fp32, no batch sizes).
# expect: world=8 nodes=1 tp=2 pp=1 cp=1 layers=28 hidden=3584 mbs=1 gbs=256 seq=4096 precision=bf16 sp=true
# expect: training.use_distributed_optimizer=true
# expect-note: runs the script with the arguments $1=dsw, $2=7B
root@dsw-4821:/workspace/Pai-Megatron-Patch# bash examples/qwen2/run_mcore_qwen.sh dsw 7B 1 256 1e-5 1e-6 4096 4096 bf16 2 1 1 true true true
#!/bin/bash
set -e
ENV=$1
MODEL_SIZE=$2
BATCH_SIZE=$3
GLOBAL_BATCH_SIZE=$4
LR=$5
MIN_LR=$6
SEQ_LEN=$7
PAD_LEN=$8
PR=$9
TP=${10}
PP=${11}
CP=${12}
SP=${13}
DO=${14}
FL=${15}
if [ $ENV = dsw ]; then
    GPUS_PER_NODE=8
    NNODES=1
fi
if [ $MODEL_SIZE = 7B ]; then
    NUM_LAYERS=28
    HIDDEN_SIZE=3584
    NUM_ATTN_HEADS=28
    INTERMEDIATE_SIZE=18944
    NUM_KEY_VALUE_HEADS=4
    gqa_options="--group-query-attention --num-query-groups ${NUM_KEY_VALUE_HEADS}"
fi
if [ $PR = bf16 ]; then
    pr_options="--bf16"
fi
if [ $SP = true ] && [ $TP -gt 1 ]; then
    sp_options="--sequence-parallel"
fi
if [ $DO = true ]; then
    do_options="--use-distributed-optimizer"
fi
megatron_options="--micro-batch-size ${BATCH_SIZE} --global-batch-size ${GLOBAL_BATCH_SIZE} --num-layers ${NUM_LAYERS} --hidden-size ${HIDDEN_SIZE} --num-attention-heads ${NUM_ATTN_HEADS} --ffn-hidden-size ${INTERMEDIATE_SIZE} --seq-length ${SEQ_LEN} --max-position-embeddings ${SEQ_LEN} --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} --context-parallel-size ${CP} --swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear --add-qkv-bias --untie-embeddings-and-output-weights"
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"
torchrun $DISTRIBUTED_ARGS pretrain_qwen.py ${megatron_options} ${pr_options} ${sp_options} ${do_options} ${gqa_options}
