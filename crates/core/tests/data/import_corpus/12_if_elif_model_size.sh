#!/bin/bash
# source: Alibaba Pai-Megatron-Patch run_mcore_*.sh (`if [ $MODEL_SIZE = 7B ]; then … elif [ $MODEL_SIZE = 14B ]; then`)
#   with the size set in the script.
# Worked by hand: MODEL_SIZE=14B → 48 layers, hidden 5120, 40 heads, FFN 13824, 8 query groups (kv 5120/40 = 128).
# expect: layers=48 hidden=5120 heads=40 ffn=13824 groups=8 kv=128 tp=4 pp=2
MODEL_SIZE=14B
if [ $MODEL_SIZE = 7B ]; then
    NUM_LAYERS=28; HIDDEN_SIZE=3584; NUM_ATTN_HEADS=28; INTERMEDIATE_SIZE=18944; NUM_KEY_VALUE_HEADS=4
elif [ $MODEL_SIZE = 14B ]; then
    NUM_LAYERS=48; HIDDEN_SIZE=5120; NUM_ATTN_HEADS=40; INTERMEDIATE_SIZE=13824; NUM_KEY_VALUE_HEADS=8
else
    echo "unknown size"; exit 1
fi
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel \
    --num-layers $NUM_LAYERS --hidden-size $HIDDEN_SIZE --num-attention-heads $NUM_ATTN_HEADS --ffn-hidden-size $INTERMEDIATE_SIZE \
    --group-query-attention --num-query-groups $NUM_KEY_VALUE_HEADS --swiglu --disable-bias-linear \
    --seq-length 4096 --max-position-embeddings 32768 --micro-batch-size 1 --global-batch-size 128 --bf16 --padded-vocab-size 152064
