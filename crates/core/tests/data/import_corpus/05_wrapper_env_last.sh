#!/bin/bash
# source: Megatron-MoE-ModelZoo README (`TP=2 PP=8 VPP=4 EP=32 NNODES=32 bash sbatch_benchmarking.sh`), pasted after the
#   wrapper's body, as users paste "the script, then how I run it" into issue threads.
# Worked by hand: the same run as 04: TP 2, PP 8, VPP 4, EP 32, 32 nodes x 8 = 256 GPUs.
# options: model=deepseek-v3
# expect: tp=2 pp=8 vpp=4 ep=32 nodes=32 gpn=8 world=256
# expect-note: environment
TP=${TP:-1}
PP=${PP:-1}
VPP=${VPP:-1}
EP=${EP:-1}
NNODES=${NNODES:-1}
torchrun --nnodes ${NNODES} --nproc-per-node 8 pretrain_gpt.py \
    --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} \
    --num-virtual-stages-per-pipeline-rank ${VPP} --expert-model-parallel-size ${EP} \
    --micro-batch-size 1 --global-batch-size 8192 --seq-length 4096 --bf16 --sequence-parallel
# run as:
TP=2 PP=8 VPP=4 EP=32 NNODES=32 bash sbatch_benchmarking.sh
