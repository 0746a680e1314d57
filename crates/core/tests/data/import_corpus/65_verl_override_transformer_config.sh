# source: verl examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh and others (+actor_rollout_ref.actor.megatron.
#   override_transformer_config.recompute_* = verl's only way to recompute; actor.optim.override_optimizer_config.*);
#   verl/trainer/config/engine/megatron.yaml @ 0b8f32c7. Before: every one "not a setting", no recompute.
# Worked by hand: recompute full, uniform, 1 layer; the optimizer state on the CPU.
# expect: model=qwen2.5-7b tp=4 world=8 training.recompute_granularity=full training.recompute_method=uniform training.recompute_num_layers=1 training.optimizer_cpu_offload=true
python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer.yaml \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1 \
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True \
    trainer.n_gpus_per_node=8 trainer.nnodes=1
