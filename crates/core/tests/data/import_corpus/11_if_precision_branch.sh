#!/bin/bash
# source: Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh (`if [[ "$TOKENIZER_ARG" == "MOCK" ]]; then … else … fi`
#   choosing arguments) — here the branch chooses the precision, as Megatron-Bridge's and NeMo's launch scripts do.
# Worked by hand: PRECISION=bf16, so the `else` branch: --bf16 only, no FP8.
# expect: precision=bf16 tp=2 layers=16 hidden=2048
PRECISION=bf16
if [[ "$PRECISION" == "fp8" ]]; then
    PREC_ARGS="--bf16 --fp8-format hybrid --fp8-amax-history-len 1024"
else
    PREC_ARGS="--bf16"
fi
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel \
    --num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
    --micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 $PREC_ARGS
