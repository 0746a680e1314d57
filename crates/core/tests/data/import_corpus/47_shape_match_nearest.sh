#!/bin/bash
# source: Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh's model flags (Llama 3 8B's shape) with a vocabulary of
#   the user's own (--vocab-size), as scripts that train a new tokenizer on the Llama 3 architecture give it.
# Worked by hand: the shape (32 layers, hidden 4096, 32 heads, 8 groups, FFN 14336) is both llama-3.1-8b's (context
#   131,072) and llama-3-8b's (8192). The vocabulary 128,000 is neither's (128,256; padded to 128 at TP 1 they still
#   differ), so it is a shape match: llama-3.1-8b differs in two given fields (vocabulary, context), llama-3-8b in one
#   (vocabulary), so llama-3-8b is named with that field, and the input's 128,000 is kept.
# expect: layers=32 hidden=4096 vocab=128000 model.max_position_embeddings=8192
# expect-note: matched by shape to the llama-3-8b preset
# expect-note: vocab_size 128000 (preset 128256)
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu \
    --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope \
    --rotary-base 500000 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 \
    --bf16 --vocab-size 128000
