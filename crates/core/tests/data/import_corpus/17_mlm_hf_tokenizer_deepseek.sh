#!/bin/bash
# source: Megatron-LM examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh (--tokenizer-type HuggingFaceTokenizer
#   --tokenizer-model deepseek-ai/DeepSeek-V3) on a smaller MoE of the same family.
# Worked by hand: DeepSeek-V3's tokenizer: vocabulary 129,280 (its config.json vocab_size).
# expect: vocab=129280 layers=8 hidden=2048 experts=16 ep=4
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 --num-attention-heads 16 \
    --ffn-hidden-size 8192 --num-experts 16 --moe-router-topk 2 --moe-ffn-hidden-size 1024 --swiglu \
    --expert-model-parallel-size 4 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
    --global-batch-size 64 --bf16 --tokenizer-type HuggingFaceTokenizer --tokenizer-model deepseek-ai/DeepSeek-V3
