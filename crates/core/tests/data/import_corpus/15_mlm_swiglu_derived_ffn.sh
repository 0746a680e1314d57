#!/bin/bash
# source: meshplan issue 21 (a Megatron-LM script with --swiglu and no --ffn-hidden-size, hidden 1280) and
#   Megatron-LM megatron/training/arguments.py validate_args (ffn_hidden_size under --swiglu).
# Worked by hand: int((4 x 1280 x 2/3) / 64) x 64 = int(3413.33 / 64) x 64 = 53 x 64 = 3392; kv 1280 / 10 = 128.
# expect: ffn=3392 kv=128 hidden=1280 layers=24
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1280 --num-attention-heads 10 --swiglu \
    --normalization RMSNorm --disable-bias-linear --seq-length 2048 --max-position-embeddings 2048 \
    --micro-batch-size 4 --global-batch-size 256 --bf16 --tokenizer-type GPT2BPETokenizer \
    --vocab-file vocab.json --merge-file merges.txt
