#!/bin/bash
# source: Megatron-MoE-ModelZoo README's benchmark invocation (`TP=2 PP=8 VPP=4 EP=32 NNODES=32 bash sbatch_benchmarking.sh`)
#   followed by the wrapper's body, which reads each size as ${NAME:-default}.
# Worked by hand: the wrapper runs with TP 2, PP 8, VPP 4, EP 32 and 32 nodes of 8 GPUs (256); its defaults (1) are not
#   used. DeepSeek-V3 is given (--model), as the wrapper names it only by a YAML file.
# options: model=deepseek-v3
# expect: tp=2 pp=8 vpp=4 ep=32 nodes=32 gpn=8 world=256
TP=2 PP=8 VPP=4 EP=32 NNODES=32 bash sbatch_benchmarking.sh
# ---- sbatch_benchmarking.sh ----
TP=${TP:-1}
PP=${PP:-1}
VPP=${VPP:-1}
EP=${EP:-1}
NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
torchrun --nnodes ${NNODES} --nproc-per-node ${GPUS_PER_NODE} pretrain_gpt.py \
    --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} \
    --num-virtual-stages-per-pipeline-rank ${VPP} --expert-model-parallel-size ${EP} \
    --micro-batch-size 1 --global-batch-size 8192 --seq-length 4096 --bf16 --sequence-parallel
