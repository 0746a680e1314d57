#!/bin/bash
# source: Megatron-LM examples/pretrain_gpt_distributed.sh (releases up to core_r0.5): GPUS_PER_NODE / NNODES
#   variables, WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES)), torchrun arguments in one string, a GPT-2 vocab/merge file.
# Worked by hand: TP = 16 / 4 = 4; PP = 8 / 4 = 2; 2 nodes x 8; GPT-2 BPE vocabulary 50,257 (gpt2-vocab.json);
#   no --ffn-hidden-size and no --swiglu: 4 x 1024 = 4096.
# expect: tp=4 pp=2 nodes=2 gpn=8 layers=24 hidden=1024 ffn=4096 heads=16 vocab=50257 precision=fp16 mbs=4 gbs=64 seq=1024
GPUS_PER_NODE=8
NNODES=2
WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES))
TP=$((WORLD_SIZE / 4))
VOCAB_FILE=/data/gpt2-vocab.json
MERGE_FILE=/data/gpt2-merges.txt
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank 0 --master_addr localhost --master_port 6000"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size $((8/4)) \
    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \
    --micro-batch-size 4 --global-batch-size 64 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --vocab-file $VOCAB_FILE --merge-file $MERGE_FILE \
    --fp16
