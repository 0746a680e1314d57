#!/bin/bash
# source: Megatron-LM issue threads' minimal repro scripts (a custom model, --mock-data, no tokenizer arguments).
# Worked by hand: nothing states the vocabulary: meshplan's 32,000 is an assumption, and the import says so.
# expect: vocab=32000 layers=4 hidden=512
# expect-note: vocab_size
torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --seq-length 512 --max-position-embeddings 512 --micro-batch-size 2 --global-batch-size 16 --mock-data --bf16
