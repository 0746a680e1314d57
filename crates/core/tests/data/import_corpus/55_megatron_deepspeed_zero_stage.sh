#!/bin/bash
# source: Megatron-DeepSpeed's example scripts (microsoft/Megatron-DeepSpeed examples_deepspeed/: the ZeRO stage in a
#   variable written both into the ds_config heredoc's zero_optimization.stage and into --zero-stage, started by the
#   deepspeed launcher). Written here with a 13B-like shape.
# Worked by hand: deepspeed --num_nodes 2 --num_gpus 8: 16 GPUs; TP 2 · PP 2, DP 4; ZeRO-1 shards the optimizer state
#   over data parallelism as Megatron-Core's distributed optimizer does (before: "--zero-stage not a setting meshplan
#   models", the optimizer state a full copy on every GPU).
# expect: world=16 nodes=2 tp=2 pp=2 layers=40 hidden=5120 mbs=2 gbs=256 precision=bf16
# expect: training.use_distributed_optimizer=true
# expect-note: --zero-stage 1 with --deepspeed is Megatron-DeepSpeed's DeepSpeed ZeRO stage
# expect-unread: --deepspeed-activation-checkpointing
# expect-unread: --deepspeed-config
MICRO_BATCH_SIZE=2
GLOBAL_BATCH_SIZE=256
ZERO_STAGE=1
TP=2
PP=2
config_json="./ds_config.json"
cat <<EOT > $config_json
{
  "train_micro_batch_size_per_gpu": $MICRO_BATCH_SIZE,
  "train_batch_size": $GLOBAL_BATCH_SIZE,
  "gradient_clipping": 1.0,
  "zero_optimization": {
    "stage": $ZERO_STAGE
  },
  "bf16": {
    "enabled": true
  }
}
EOT
deepspeed --num_nodes 2 --num_gpus 8 pretrain_gpt.py \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    --num-layers 40 --hidden-size 5120 --num-attention-heads 40 --seq-length 2048 --max-position-embeddings 2048 \
    --micro-batch-size $MICRO_BATCH_SIZE --global-batch-size $GLOBAL_BATCH_SIZE --bf16 \
    --deepspeed --deepspeed_config $config_json --zero-stage $ZERO_STAGE --deepspeed-activation-checkpointing --vocab-size 50257
