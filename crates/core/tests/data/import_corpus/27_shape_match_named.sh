#!/bin/bash
# source: Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh's model flags (Llama 3 8B's shape), without --bf16
#   differences: the flags restate a preset.
# Worked by hand: every field given (32 layers, hidden 4096, 32 heads, 8 groups, FFN 14336, vocabulary 128,256, context
#   8192) is the llama-3-8b preset's (Llama 3 8B; the llama-3.1-8b preset has the same shape and a 131,072 context): the
#   import names that preset. (47_shape_match_context.sh keeps a field that differs from every preset.)
# expect: layers=32 hidden=4096 model.max_position_embeddings=8192
# expect-note: the fields given are the llama-3-8b preset's
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu \
    --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope \
    --rotary-base 500000 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 \
    --bf16 --vocab-size 128256
