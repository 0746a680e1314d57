# source: THUDM/slime scripts/run-qwen3-4B.sh and run-qwen3-30B-A3B.sh (ray job submit … -- python3 train.py with
#   --actor-num-nodes / --actor-num-gpus-per-node, --rollout-batch-size, --n-samples-per-prompt,
#   --num-steps-per-rollout, --use-dynamic-batch-size --max-tokens-per-gpu, --hf-checkpoint); slime 624b824a
#   slime/backends/megatron_utils/arguments.py _set_default_megatron_args (distributed optimizer always, bf16 = not
#   fp16) and validate_args (allgather → alltoall); slime/utils/dp_schedule.py (max_tokens_per_gpu × cp_size a bin).
#   Before: 1 × 2 GPUs (the layout's smallest), fp32, no distributed optimizer, sequence 4096, "names no model".
# Worked by hand: world 1 × 8; the model from the checkpoint's directory Qwen3-4B; TP 2; a micro-batch packs
#   9,216 tokens × CP 1 = 9,216, sized as one sequence; 64 prompts × 4 samples // 1 step = 256 samples a step.
# expect: model=qwen3-4b tp=2 gpn=8 nodes=1 seq=9216 mbs=1 gbs=256 training.precision=bf16 training.use_distributed_optimizer=true training.moe_token_dispatcher_type=alltoall
# expect-note: slime: what it sets
SLIME_DIR=/root/slime
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --sequence-parallel
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
)
ROLLOUT_ARGS=(
   --rollout-batch-size 64
   --n-samples-per-prompt 4
   --num-steps-per-rollout 1
   --rollout-max-response-len 8192
)
ray job submit --address="http://127.0.0.1:8265" -- python3 ${SLIME_DIR}/train.py \
   --actor-num-nodes 1 \
   --actor-num-gpus-per-node 8 \
   --colocate \
   --hf-checkpoint /root/Qwen3-4B \
   --ref-load /root/Qwen3-4B_torch_dist \
   ${PERF_ARGS[@]} ${ROLLOUT_ARGS[@]}
