# source: NVIDIA-NeMo/RL examples (`uv run examples/run_grpo_math.py --config examples/configs/grpo_math_1B_megatron.yaml
#   policy.megatron_cfg.tensor_model_parallel_size=… cluster.gpus_per_node=8 cluster.num_nodes=…`): an RL framework's
#   Hydra-style overrides, Megatron's sizes under policy.megatron_cfg, the GPU count under cluster.*.
# Worked by hand: Qwen2.5-7B, TP 4, PP 2, 2 nodes x 8 GPUs, global batch 64, micro-batch 1, sequence 4096.
# expect: model=qwen2.5-7b tp=4 pp=2 nodes=2 gpn=8 gbs=64 mbs=1 seq=4096
uv run examples/run_grpo_math.py --config examples/configs/grpo_math_1B_megatron.yaml \
    policy.model_name=Qwen/Qwen2.5-7B \
    policy.megatron_cfg.enabled=true \
    policy.megatron_cfg.tensor_model_parallel_size=4 \
    policy.megatron_cfg.pipeline_model_parallel_size=2 \
    policy.train_global_batch_size=64 \
    policy.train_micro_batch_size=1 \
    policy.max_total_sequence_length=4096 \
    cluster.gpus_per_node=8 \
    cluster.num_nodes=2
