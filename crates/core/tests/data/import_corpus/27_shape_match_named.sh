#!/bin/bash
# source: Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh's model flags (Llama 3 8B's shape), without --bf16
#   differences: the flags restate a preset.
# Worked by hand: the shape (32 layers, hidden 4096, 32 heads, 8 groups, FFN 14336) is the llama-3.1-8b preset's; the
#   sequence (8192) is not the preset's 131,072: the import names the preset and that field, and keeps the input's.
# expect: layers=32 hidden=4096 model.max_position_embeddings=8192
# expect-note: matched by shape to the llama-3.1-8b preset
# expect-note: max_position_embeddings 8192 (preset 131072)
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu \
    --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope \
    --rotary-base 500000 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 \
    --bf16 --vocab-size 128256
