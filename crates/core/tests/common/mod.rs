//! Helpers shared by the integration tests: build plan JSON and run it.
#![allow(dead_code)]

pub mod fields;

use meshplan_core::{Report, plan_value};
use serde_json::{Value, json};

/// The seed checks' small MoE model (64 experts, top-4), so that memory never decides validity.
pub fn small_moe() -> Value {
    json!({"num_layers": 16, "hidden_size": 1024, "ffn_hidden_size": 2816, "num_attention_heads": 16,
           "num_query_groups": 4, "kv_channels": 64, "vocab_size": 32000, "gated_linear_unit": true,
           "num_moe_experts": 64, "moe_router_topk": 4, "moe_ffn_hidden_size": 512})
}

pub fn small_dense() -> Value {
    json!({"num_layers": 16, "hidden_size": 2048, "ffn_hidden_size": 5632, "num_attention_heads": 16,
           "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true})
}

#[derive(Clone)]
pub struct P {
    pub model: Value,
    pub gpus: u64,
    pub per_node: u64,
    pub domain: Option<u64>,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub etp: Option<u64>,
    pub vpp: Option<u64>,
    pub sp: Option<bool>,
    pub seq: u64,
    pub mbs: u64,
    pub gbs: u64,
    pub recompute: &'static str,
}

impl P {
    pub fn new(model: Value, gpus: u64) -> Self {
        P { model, gpus, per_node: 8, domain: None, tp: 1, pp: 1, cp: 1, ep: 1, etp: Some(1), vpp: None, sp: None, seq: 4096, mbs: 1, gbs: 1024, recompute: "selective" }
    }
    pub fn json(&self) -> Value {
        let per = self.per_node.min(self.gpus).max(1);
        let mut cluster = json!({"gpu": "h100-sxm-80gb", "gpus_per_node": per, "num_nodes": (self.gpus / per).max(1)});
        if let Some(d) = self.domain {
            cluster["nvlink_domain_size"] = json!(d);
        }
        let mut par = json!({"tensor_model_parallel_size": self.tp, "pipeline_model_parallel_size": self.pp,
            "virtual_pipeline_model_parallel_size": self.vpp, "context_parallel_size": self.cp,
            "expert_model_parallel_size": self.ep, "sequence_parallel": self.sp.unwrap_or(self.tp > 1)});
        if let Some(e) = self.etp {
            par["expert_tensor_parallel_size"] = json!(e);
        }
        json!({"model": self.model, "cluster": cluster,
               "training": {"seq_length": self.seq, "micro_batch_size": self.mbs, "global_batch_size": self.gbs,
                            "recompute_granularity": self.recompute, "use_distributed_optimizer": true},
               "parallelism": par})
    }
    pub fn run(&self) -> Report {
        plan_value(&self.json()).expect("plan parses")
    }
}

pub fn errors(r: &Report) -> Vec<&str> {
    r.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code.as_str()).collect()
}

pub fn codes(r: &Report) -> Vec<&str> {
    r.diagnostics.iter().map(|d| d.code.as_str()).collect()
}
