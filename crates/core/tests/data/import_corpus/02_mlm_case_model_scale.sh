#!/bin/bash
# source: Megatron-LM examples/mamba/train.sh: MODEL_SCALE="800M" and case "${MODEL_SCALE}" in "800M") … ;; "8B") … ;;
#   *) … esac choosing the sizes; --sequence-parallel given whatever TP the branch chose.
# Worked by hand: the "800M" branch: TP 1, 24 layers, hidden 1536, 16 heads, GBS 32. Megatron-LM's validate_args turns
#   --sequence-parallel off at TP 1 (with a warning), so SP is off and the plan has no sp-requires-tp error.
# expect: tp=1 sp=false layers=24 hidden=1536 heads=16 gbs=32 mbs=2 seq=4096 precision=bf16
# expect-note: --sequence-parallel
# expect-no-code: sp-requires-tp
MODEL_SCALE="800M" # or "8B"
case "${MODEL_SCALE}" in
    "800M")
        TENSOR_MODEL_PARALLEL_SIZE=1
        NUM_LAYERS=24
        HIDDEN_SIZE=1536
        NUM_ATTENTION_HEADS=16
        GLOBAL_BATCH_SIZE=32
        ;;
    "8B")
        TENSOR_MODEL_PARALLEL_SIZE=4
        NUM_LAYERS=32
        HIDDEN_SIZE=4096
        NUM_ATTENTION_HEADS=32
        GLOBAL_BATCH_SIZE=8
        ;;
    *)
        echo "Invalid version specified"
        exit 1
        ;;
esac
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --tensor-model-parallel-size ${TENSOR_MODEL_PARALLEL_SIZE} \
    --sequence-parallel \
    --pipeline-model-parallel-size 1 \
    --num-layers ${NUM_LAYERS} --hidden-size ${HIDDEN_SIZE} --num-attention-heads ${NUM_ATTENTION_HEADS} \
    --seq-length 4096 --max-position-embeddings 4096 \
    --micro-batch-size 2 --global-batch-size ${GLOBAL_BATCH_SIZE} \
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt \
    --bf16
