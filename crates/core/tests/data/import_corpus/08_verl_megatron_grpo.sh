set -x
# source: verl examples/grpo_trainer/run_qwen2-7b_math_megatron.sh: Hydra overrides of verl's trainer, Megatron's sizes
#   under actor_rollout_ref.actor.megatron.*, the GPU count as trainer.n_gpus_per_node / trainer.nnodes, the model as
#   actor_rollout_ref.model.path.
# Worked by hand: TP 2, PP 2 for the actor; 2 nodes x 8 GPUs; Qwen2.5-7B.
# expect: model=qwen2.5-7b tp=2 pp=2 gpn=8 nodes=2
python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=2 $@
