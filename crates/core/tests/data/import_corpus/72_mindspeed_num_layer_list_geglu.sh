#!/bin/bash
# source: Ascend/MindSpeed-LLM examples/mcore/gemma2/pretrain_gemma2_27b_ptd.sh @ c77308a1 (--num-layer-list each
#   stage's layers, --gelu-tanh a gated GELU MLP: mindspeed_llm/core/transformer/mlp.py l.85-96). Before: an even
#   split, a plain GELU MLP.
# Worked by hand: PP 2 with 10 and 14 layers: the layout E + 10 t | 14 t + L; gated GELU.
# expect: pp=2 parallelism.pipeline_model_parallel_layout=Etttttttttt|ttttttttttttttL model.gated_linear_unit=true model.activation_func=gelu
# expect-note: MindSpeed-LLM
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 24 --hidden-size 2048 --ffn-hidden-size 8192 --num-attention-heads 16 \
    --gelu-tanh --normalization RMSNorm --disable-bias-linear --position-embedding-type rope \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --num-layer-list 10,14 \
    --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \
    --bf16 --use-distributed-optimizer --vocab-size 32000
