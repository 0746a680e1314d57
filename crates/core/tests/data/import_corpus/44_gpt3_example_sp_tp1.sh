#!/bin/bash
# source: Megatron-LM examples (gpt3 / llama / mixtral train_*.sh) as users edit them down to one node: TP set to 1
#   while --sequence-parallel stays in the argument array.
# Worked by hand: validate_args switches SP off at TP 1: the plan has no error and SP is off.
# expect: tp=1 sp=false pp=2
# expect-no-errors
GPUS_PER_NODE=8
NUM_NODES=1
DISTRIBUTED_ARGS=(--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES)
MODEL_PARALLEL_ARGS=(--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --sequence-parallel)
GPT_MODEL_ARGS=(--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048)
TRAINING_ARGS=(--micro-batch-size 1 --global-batch-size 64 --bf16 --use-distributed-optimizer)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${GPT_MODEL_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]} ${TRAINING_ARGS[@]} \
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt
