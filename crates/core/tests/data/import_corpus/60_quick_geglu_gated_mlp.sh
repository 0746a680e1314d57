# source: Megatron-LM examples/gptoss/ launch script (`--quick-geglu`: megatron/training/argument_utils.py sets
#   gated_linear_unit and the quick-GELU activation). Before: an ungated MLP, every fc1 half its size.
# Worked by hand: 8 GPUs, a gated MLP (gated_linear_unit true), 4 experts.
# expect: gpn=8 experts=4 model.gated_linear_unit=true
torchrun --nproc_per_node 8 pretrain_gpt.py \
  --num-layers 12 --hidden-size 1024 --ffn-hidden-size 2048 --num-attention-heads 16 \
  --num-experts 4 --moe-ffn-hidden-size 2048 --moe-router-topk 2 --quick-geglu \
  --seq-length 4096 --max-position-embeddings 4096 --vocab-size 32000 \
  --micro-batch-size 1 --global-batch-size 64 --bf16
