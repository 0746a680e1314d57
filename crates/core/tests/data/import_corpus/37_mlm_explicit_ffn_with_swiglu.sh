#!/bin/bash
# source: Megatron-LM docs/llama_mistral.md (Llama-2 7B: --ffn-hidden-size 11008 with --swiglu).
# Worked by hand: an explicit --ffn-hidden-size wins over the SwiGLU derivation: 11008.
# expect: ffn=11008 hidden=4096
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --swiglu \
    --ffn-hidden-size 11008 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \
    --bf16 --vocab-size 32000
