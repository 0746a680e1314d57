#!/bin/bash
# source: Megatron-LM docs/llama_mistral.md (Llama-2 with --tokenizer-type Llama2Tokenizer --tokenizer-model
#   <path>/tokenizer.model).
# Worked by hand: Llama 2's SentencePiece model: 32,000 tokens; Llama-2 7B: 32 layers, hidden 4096, FFN 11008, 32 heads.
# expect: vocab=32000 layers=32 hidden=4096 ffn=11008 heads=32 tp=1 pp=1
# expect-note: vocab_size: 32000
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --ffn-hidden-size 11008 --swiglu --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights \
    --position-embedding-type rope --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
    --global-batch-size 1024 --bf16 --tokenizer-type Llama2Tokenizer --tokenizer-model /models/llama-2-7b/tokenizer.model
