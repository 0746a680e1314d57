# source: microsoft/Megatron-DeepSpeed examples_deepspeed/pretrain_llama2_distributed.sh (`--num-key-value-heads`, its
#   grouped-query attention flag) and examples_deepspeed/MoE/ds_pretrain_gpt_*_MoE*.sh (`--moe-expert-parallel-size`,
#   its expert-parallel size); both flags defined in its megatron/arguments.py. Before: multi-head attention (16 query
#   groups) and EP 1, each flag "not a setting".
# Worked by hand: 8 GPUs, TP 1, 4 key-value heads (GQA), 8 experts with expert parallelism 4.
# expect: tp=1 ep=4 groups=4 experts=8 gpn=8
torchrun --nproc_per_node 8 pretrain_gpt.py \
  --num-layers 16 --hidden-size 2048 --num-attention-heads 16 --num-key-value-heads 4 \
  --ffn-hidden-size 5504 --swiglu --normalization rmsnorm --disable-bias-linear \
  --seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 \
  --num-experts 8 --moe-expert-parallel-size 4 \
  --micro-batch-size 2 --global-batch-size 64 --bf16 \
  --deepspeed --deepspeed_config ds_config.json --zero-stage 1
