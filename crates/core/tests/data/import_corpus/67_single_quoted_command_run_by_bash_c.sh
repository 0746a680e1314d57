#!/bin/bash
# source: NVIDIA-NeMo/Megatron-Bridge examples/models/nemotron/nemotron_3/ultra/slurm_pretrain.sh @ 067f987d (sizes
#   exported, the command in a single-quoted CMD with "$TP"-style quoted expansions, run as `srun … bash -c "$CMD"`),
#   a common Slurm idiom. bash -c reads the string as shell again, so its quotes go. Before: every value read with
#   its quotes ("4"), seven invalid-value errors, the recipe lost, TP 1, PP 1, exit status 0.
# Worked by hand: the recipe's model; TP 4, PP 4, EP 8 on 4 nodes of 8; SP on; global batch 256.
# expect: model=qwen3-30b-a3b tp=4 pp=4 ep=8 gpn=8 nodes=4 gbs=256 sp=true
# expect-no-errors
#SBATCH --nodes=4
#SBATCH --gpus-per-node=8
RECIPE_NAME=qwen3_30b_a3b_pretrain_config
TP=4
PP=4
EP=8
GBS=256
export RECIPE_NAME TP PP EP GBS
CMD='
cd /opt/Megatron-Bridge &&
python scripts/training/run_recipe.py --recipe "$RECIPE_NAME" \
  model.tensor_model_parallel_size="$TP" model.pipeline_model_parallel_size="$PP" \
  model.expert_model_parallel_size="$EP" model.sequence_parallel=True \
  train.global_batch_size="$GBS"
'
srun --mpi=pmix --container-image nvcr.io/nvidia/nemo:25.11 bash -c "$CMD"
