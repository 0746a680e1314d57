# source: NVIDIA/Megatron-LM PR #2280 (fake distributed process groups: a single process sizes memory for a world
#   given by an exported WORLD_SIZE; no torchrun), as ms-swift PR #8347 does too. torch.distributed's env://
#   initialisation reads WORLD_SIZE where no launcher sets it. Before: the world assumed the layout's smallest (256).
# Worked by hand: WORLD_SIZE 1,024 = 128 nodes of 8; TP 2 × PP 8 × CP 1 = 16 a replica, DP 64.
# expect: tp=2 pp=8 ep=32 world=1024
# expect-note: from WORLD_SIZE=1024
export WORLD_SIZE=1024
export RANK=0
export LOCAL_RANK=0
python pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
  --group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm --disable-bias-linear \
  --position-embedding-type rope --untie-embeddings-and-output-weights \
  --num-experts 64 --moe-ffn-hidden-size 1536 --moe-router-topk 8 \
  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 8 --expert-model-parallel-size 32 --sequence-parallel \
  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 1024 \
  --bf16 --use-distributed-optimizer --vocab-size 32000 --mock-data --fake-process-group
