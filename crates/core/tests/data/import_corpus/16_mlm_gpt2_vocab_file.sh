#!/bin/bash
# source: Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh (--vocab-file $VOCAB_FILE --merge-file $MERGE_FILE,
#   the GPT-2 BPE files) with a small custom model.
# Worked by hand: GPT-2 BPE has 50,257 tokens (the vocabulary meshplan must not replace by 32,000).
# expect: vocab=50257 layers=12 hidden=768 heads=12 ffn=3072
# expect-note: 50257
VOCAB_FILE=$2 #<Specify path to file>/gpt2-vocab.json
MERGE_FILE=$3 #<Specify path to file>/gpt2-merges.txt
torchrun --nproc_per_node 1 pretrain_gpt.py --num-layers 12 --hidden-size 768 --num-attention-heads 12 \
    --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 8 --global-batch-size 64 --fp16 \
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt
