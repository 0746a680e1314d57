#!/bin/bash
# source: NVIDIA-NeMo/Megatron-Bridge examples/models/gpt_oss/slurm_sft.sh @ 067f987d (overrides gathered in a
#   multi-line variable and appended as `$(echo "$CLI_OVERRIDES" | tr '\n' ' ' | sed 's/  \+/ /g')`, which only makes
#   its whitespace single spaces). Before: a command's output, dropped; the plan showed the recipe's layout unsaid.
# Worked by hand: TP 2, PP 2, EP 4, ETP 1 on 2 nodes of 8; global batch 8; sequence 2,048.
# expect: model=gpt-oss-20b tp=2 pp=2 ep=4 etp=1 gpn=8 nodes=2 gbs=8 seq=2048
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
TP=2
PP=2
EP=4
CLI_OVERRIDES=" \
    model.tensor_model_parallel_size=$TP \
    model.pipeline_model_parallel_size=$PP \
    model.expert_model_parallel_size=$EP \
    model.expert_tensor_parallel_size=1 \
    train.global_batch_size=8 \
    dataset.seq_length=2048 \
"
CMD="uv run --no-sync python scripts/training/run_recipe.py --recipe gpt_oss_20b_sft_config"
CMD="$CMD $(echo "$CLI_OVERRIDES" | tr '\n' ' ' | sed 's/  \+/ /g')"
srun bash -c "$CMD"
