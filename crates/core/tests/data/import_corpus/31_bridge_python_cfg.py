# source: Megatron-Bridge docs/recipe-usage.md (cfg = llama31_8b_pretrain_config(); cfg.model.x = … in Python).
# Worked by hand: the recipe's model (Llama 3.1 8B), TP 4, SP on, global 64.
# expect: model=llama-3.1-8b tp=4 sp=true gbs=64
from megatron.bridge.recipes.llama import llama31_8b_pretrain_config
cfg = llama31_8b_pretrain_config()
cfg.model.tensor_model_parallel_size = 4
cfg.model.sequence_parallel = True
cfg.train.global_batch_size = 64
