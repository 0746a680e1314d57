#!/bin/bash
# source: Ascend/MindSpeed-LLM examples/mcore/deepseek3/pretrain_deepseek3_671b_4k_ptd.sh @ c77308a1
#   (--first-k-dense-replace, --n-shared-experts, --noop-layers padding 61 layers to 64 for PP 8; NPUS_PER_NODE);
#   mindspeed_llm/core/transformer/transformer_block.py l.163-166, features_manager/moe/shared_expert.py. Before: every
#   layer MoE, no shared expert, 64 real layers.
# Worked by hand: 16 layers with 2 noop at the end (14, 15) → 14 layers; PP 4: 4 a stage, the last 4 − 2 = 2;
#   layers 0-1 dense, MoE from 2 on (moe_layer_freq 1); the shared expert 1 × 512 = 512.
# expect: pp=4 ep=4 model.num_layers=14 parallelism.num_layers_in_last_pipeline_stage=2 model.moe_shared_expert_intermediate_size=512 model.moe_layer_freq=[0,0,1,1,1,1,1,1,1,1,1,1,1,1]
# expect-note: MindSpeed-LLM
NPUS_PER_NODE=8
NNODES=2
DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes $NNODES"
MOE_ARGS="
    --num-experts 32 --moe-router-topk 4 --moe-ffn-hidden-size 512 --n-shared-experts 1 \
    --first-k-dense-replace 2 --moe-layer-freq 1 --moe-grouped-gemm --moe-token-dispatcher-type alltoall
"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    --num-layers 16 --hidden-size 1024 --ffn-hidden-size 2816 --num-attention-heads 16 \
    --swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope \
    --tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 --expert-model-parallel-size 4 \
    --noop-layers 14,15 \
    $MOE_ARGS \
    --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \
    --bf16 --use-distributed-optimizer --vocab-size 32000
