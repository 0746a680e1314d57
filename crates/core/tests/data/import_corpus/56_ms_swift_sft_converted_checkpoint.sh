# source: ms-swift examples/train/megatron (`megatron sft --load Qwen2.5-7B-Instruct-mcore …`): the model named only by
#   the directory of its Megatron conversion, an instruct variant's; ms-swift's own argument defaults (swift/megatron/
#   argument/megatron_args.py MegatronArguments @ modelscope/ms-swift 00840e65) fill what the command leaves out.
#   Before: "names no model" (exit 2); with --model given, fp32 and no distributed optimizer (Megatron-LM's defaults).
# Worked by hand: 2 GPUs (NPROC_PER_NODE=2), TP 2, micro-batch 2, global 32, sequence 4096 (--max_length); the
#   Qwen2.5-7B architecture (the instruct tune and the conversion keep it); from ms-swift: bf16 (the model's torch_dtype),
#   the distributed optimizer, selective recompute of core attention.
# expect: model=qwen2.5-7b tp=2 mbs=2 gbs=32 seq=4096 gpn=2 precision=bf16 recompute=selective training.use_distributed_optimizer=true
# expect-note: without its variant suffix "-Instruct-mcore"
# expect-note: ms-swift
NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 \
megatron sft \
    --load /data/ckpt/Qwen2.5-7B-Instruct-mcore \
    --dataset my-org/chat-data \
    --tensor_model_parallel_size 2 \
    --micro_batch_size 2 \
    --global_batch_size 32 \
    --max_length 4096 \
    --train_iters 200 \
    --save /data/out/run1
