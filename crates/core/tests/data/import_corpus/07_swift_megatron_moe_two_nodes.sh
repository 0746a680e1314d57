# source: ms-swift examples/megatron/multi-node (NNODES / NODE_RANK / NPROC_PER_NODE in the environment of
#   `megatron pt`) with MoE arguments (--expert_model_parallel_size, --moe_grouped_gemm true).
# Worked by hand: 2 nodes x 8 GPUs; EP 8, PP 2; sequence 8192 from --max_length; global batch 32.
# expect: model=qwen3-30b-a3b ep=8 pp=2 nodes=2 gpn=8 seq=8192 gbs=32 mbs=1
NNODES=2 \
NODE_RANK=0 \
MASTER_ADDR=10.0.0.1 \
NPROC_PER_NODE=8 \
megatron pt \
    --model Qwen/Qwen3-30B-A3B \
    --expert_model_parallel_size 8 \
    --pipeline_model_parallel_size 2 \
    --moe_grouped_gemm true \
    --micro_batch_size 1 \
    --global_batch_size 32 \
    --max_length 8192 \
    --packing true
