# source: verl examples/grpo_trainer/*_megatron*.sh (MODEL_PATH=Qwen/Qwen3-30B-A3B-Base, a base model's Hugging Face id
#   with its variant suffix; actor_rollout_ref.actor.megatron.* for the layout); verl's Megatron engine defaults
#   (verl/trainer/config/engine/megatron.yaml @ volcengine/verl 0b8f32c7: sequence_parallel True,
#   use_distributed_optimizer True). Before: "names no model" (exit 2); with the bare id, SP off and no distributed
#   optimizer.
# Worked by hand: 16 GPUs (8 per node, 2 nodes), TP 4, PP 2, the Qwen3-8B architecture (a "-Base" checkpoint of it);
#   from verl's engine config: sequence parallelism (TP 4 > 1) and the distributed optimizer.
# expect: model=qwen3-8b tp=4 pp=2 sp=true gpn=8 nodes=2 training.use_distributed_optimizer=true
# expect-note: without its variant suffix "-Base"
# expect-note: verl
MODEL_PATH=Qwen/Qwen3-8B-Base
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=2
