# source: ms-swift docs "Megatron-SWIFT training" quick start (`NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 megatron sft
#   --load … --tensor_model_parallel_size 2 --sequence_parallel true … --max_length 2048`): settings in the environment of
#   the `megatron` wrapper, Megatron's arguments in snake_case with explicit true/false values, --max_length for the
#   sequence length.
# Worked by hand: 8 GPUs on one node (NPROC_PER_NODE=8), TP 2, PP 2, SP on, micro-batch 1, global 16, sequence 4096,
#   full uniform recompute; the model from its Hugging Face id.
# expect: model=qwen2.5-7b tp=2 pp=2 sp=true mbs=1 gbs=16 seq=4096 gpn=8 nodes=1 recompute=full
NPROC_PER_NODE=8 \
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
megatron sft \
    --model Qwen/Qwen2.5-7B \
    --load Qwen2.5-7B-mcore \
    --dataset AI-ModelScope/alpaca-gpt4-data-en \
    --tensor_model_parallel_size 2 \
    --pipeline_model_parallel_size 2 \
    --sequence_parallel true \
    --micro_batch_size 1 \
    --global_batch_size 16 \
    --recompute_granularity full \
    --recompute_method uniform \
    --recompute_num_layers 1 \
    --max_length 4096 \
    --lr 1e-5 \
    --save megatron_output/Qwen2.5-7B
