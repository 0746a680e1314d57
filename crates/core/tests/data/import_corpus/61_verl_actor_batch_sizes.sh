# source: verl examples/grpo_trainer/*_megatron*.sh and recipe/dapo/*.sh (data.max_prompt_length,
#   data.max_response_length, actor_rollout_ref.actor.ppo_mini_batch_size, actor_rollout_ref.rollout.n,
#   actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu set from shell variables); verl/workers/megatron_workers.py
#   normalises the mini-batch as ppo_mini_batch_size × rollout.n samples an optimizer step. Before: sequence 4096 and
#   micro-batch 1 assumed, one microbatch a step.
# Worked by hand: 2 nodes × 8 GPUs, TP 2, PP 2 (DP 4); a sample is prompt + response = 2,048 + 8,192 = 10,240 tokens;
#   32 prompts × 16 responses = 512 samples an optimizer step; 2 a micro-batch.
# expect: model=qwen3-8b tp=2 pp=2 gpn=8 nodes=2 seq=10240 gbs=512 mbs=2
# expect-note: verl: the actor's training batch
max_prompt_length=$((1024 * 2))
max_response_length=$((1024 * 8))
n_resp_per_prompt=16
python3 -m verl.trainer.main_ppo \
    data.max_prompt_length=${max_prompt_length} \
    data.max_response_length=${max_response_length} \
    actor_rollout_ref.model.path=/models/Qwen3-8B \
    actor_rollout_ref.rollout.n=${n_resp_per_prompt} \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=2
