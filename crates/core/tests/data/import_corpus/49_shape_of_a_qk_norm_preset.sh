#!/bin/bash
# source: Llama 2 7B fine-tuning scripts in Megatron-LM's OOM threads (Megatron-LM issue #606: TP=1, NUM_KV_HEADS=32,
#   `torchrun $DISTRIBUTED_ARGS pretrain_gpt.py`), whose shape is also OLMo 2 7B's.
# Worked by hand: 32 layers, hidden 4096, 32 heads in 32 groups, FFN 11008 is olmo-2-7b's shape, but the script gives no
#   --qk-layernorm: Megatron-LM runs it without (TransformerConfig qk_layernorm = False), so the run is not OLMo 2 (a
#   QK-norm model) and no preset lends it a name or its QK layernorm (before: "OLMo 2 7B (modified)", QK norm on).
# expect: layers=32 hidden=4096 ffn=11008 groups=32 vocab=32000 model.qk_layernorm=false model.normalization=RMSNorm model.position_embedding_type=rope
TP=1
NUM_KV_HEADS=32
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 32 --hidden-size 4096 \
    --ffn-hidden-size 11008 --num-attention-heads 32 --group-query-attention --num-query-groups $NUM_KV_HEADS \
    --seq-length 64 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 8 \
    --tokenizer-type Llama2Tokenizer --swiglu --normalization RMSNorm --use-rotary-position-embeddings \
    --untie-embeddings-and-output-weights --disable-bias-linear --bf16
