# source: microsoft/Megatron-DeepSpeed examples_deepspeed/MoE/ds_pretrain_gpt_350M_PR-MoE32or64.sh @ f4157bea
#   (--num-experts one count per MoE layer, --mlp-type residual, --moe-expert-parallel-size) and DeepSpeed's launcher
#   resource filter (deepspeed --include localhost:0,1,2,3; deepspeed/launcher/runner.py NODE_SPEC); the defaults in
#   megatron/arguments.py l.608-616 (--topk 1, --expert-interval 2). Before: top-2, an MoE layer at every layer, no
#   residual MLP, the world the layout's smallest (4 GPUs happened to be it only by chance at EP 4).
# Worked by hand: 1 node of 4 GPUs; 1-based layers 2, 4, …, 8 MoE (0-based 1, 3, 5, 7); experts max(16, 16, 16, 32) =
#   32; the residual MLP is the dense FFN, 4h = 4 × 512 = 2,048.
# expect: world=4 ep=4 model.moe_router_topk=1 model.num_moe_experts=32 model.moe_shared_expert_intermediate_size=2048 model.moe_layer_freq=[0,1,0,1,0,1,0,1]
# expect-note: Megatron-DeepSpeed's MoE
NUM_LAYERS=8
EP_SIZE=4
deepspeed --include localhost:0,1,2,3 pretrain_gpt.py \
    --num-layers ${NUM_LAYERS} --hidden-size 512 --num-attention-heads 8 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --num-experts 16 16 16 32 --mlp-type residual --moe-expert-parallel-size ${EP_SIZE} \
    --micro-batch-size 4 --global-batch-size 64 --fp16 --vocab-size 50257 \
    --deepspeed --deepspeed_config ds_config.json --zero-stage 0
