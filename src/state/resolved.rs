//! The resolved plan as the fields show it (greyed, when the plan leaves a field to its default): plan JSON with the
//! value in force at each field's path ([`crate::fields::all`]), plus `model_key` and `model_name`. Read from the typed
//! [`Plan`] field by field (`Plan::field`, and the Model panel's fields here) instead of serialising it, so that
//! serde's `Plan` serializer (14 KB raw) is not in the first render's wasm (docs/web.md, "What went"); a native test
//! checks every value against serde's serialisation.

use crate::fields;
use meshplan_core::Plan;
use meshplan_core::model::{ModelConfig, MoeLayerFreq};
use serde_json::{Map, Value};

/// The fields' resolved values, addressed by the same dotted paths as the plan (`plan_doc::get`).
pub fn shown(plan: &Plan) -> Value {
    let mut out = Value::Object(Map::new());
    out["model_key"] = Value::from(plan.model_key.as_str());
    out["model_name"] = Value::from(plan.model_name.as_str());
    for (section, key) in fields::all().filter_map(|f| f.path.split_once('.')) {
        let value = if section == "model" { model_value(&plan.model, key) } else { plan.field(section, key) };
        if let Some(v) = value {
            // A section not there yet is made (`Value`'s index of a null is an empty object).
            out[section][key] = v;
        }
    }
    out
}

/// The model fields the Model panel edits ([`fields::MODEL`]).
fn model_value(m: &ModelConfig, key: &str) -> Option<Value> {
    let v = match key {
        "num_layers" => Value::from(m.num_layers),
        "hidden_size" => Value::from(m.hidden_size),
        "ffn_hidden_size" => Value::from(m.ffn_hidden_size),
        "num_attention_heads" => Value::from(m.num_attention_heads),
        "num_query_groups" => Value::from(m.num_query_groups),
        "kv_channels" => Value::from(m.kv_channels),
        "vocab_size" => Value::from(m.vocab_size),
        "make_vocab_size_divisible_by" => Value::from(m.make_vocab_size_divisible_by),
        "share_embeddings_and_output_weights" => Value::from(m.share_embeddings_and_output_weights),
        "gated_linear_unit" => Value::from(m.gated_linear_unit),
        "num_moe_experts" => Value::from(m.num_moe_experts),
        "moe_router_topk" => Value::from(m.moe_router_topk),
        "moe_ffn_hidden_size" => Value::from(m.moe_ffn_hidden_size),
        "moe_shared_expert_intermediate_size" => Value::from(m.moe_shared_expert_intermediate_size),
        "moe_layer_freq" => match &m.moe_layer_freq {
            MoeLayerFreq::Every(n) => Value::from(*n),
            MoeLayerFreq::Pattern(list) => Value::from(list.clone()),
        },
        "multi_latent_attention" => Value::from(m.multi_latent_attention),
        "q_lora_rank" => Value::from(m.q_lora_rank),
        "kv_lora_rank" => Value::from(m.kv_lora_rank),
        "qk_head_dim" => Value::from(m.qk_head_dim),
        "qk_pos_emb_head_dim" => Value::from(m.qk_pos_emb_head_dim),
        "v_head_dim" => Value::from(m.v_head_dim),
        "mtp_num_layers" => Value::from(m.mtp_num_layers),
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::plan_doc::{default_plan, get};
    use meshplan_core::presets;
    use serde_json::json;

    /// Every field of every model preset's plan (and of plans that set what presets leave alone: a 0/1 MoE list, no
    /// global batch, Q LoRA, a recompute count, a layout) reads as serde writes the resolved plan: the oracle is
    /// serde's derived serializer, which the page used before.
    #[test]
    fn every_field_reads_as_serde_writes_it() {
        let mut plans: Vec<Value> = presets::catalog().models.iter().map(|m| {
            let mut p = default_plan();
            p["model"] = json!(m.key);
            p
        }).collect();
        let mut custom = default_plan();
        custom["model"] = json!({"preset": "deepseek-v3", "moe_layer_freq": [0, 0, 0, 1, 1, 1, 1, 1], "num_layers": 8, "q_lora_rank": 512});
        custom["training"]["recompute_granularity"] = json!("full");
        custom["training"]["recompute_num_layers"] = json!(2);
        custom["training"].as_object_mut().unwrap().remove("global_batch_size");
        custom["parallelism"]["pipeline_model_parallel_layout"] = json!("Et|tt|tt|ttL");
        custom["cluster"]["nvlink_domain_size"] = json!(16);
        plans.push(custom);
        let mut compared = 0;
        for p in &plans {
            let report = meshplan_core::plan_value(p).unwrap();
            let by_serde = serde_json::to_value(&report.plan).unwrap();
            let shown = shown(&report.plan);
            for path in fields::all().map(|f| f.path).chain(["model_key", "model_name"]) {
                assert_eq!(get(&shown, path), get(&by_serde, path), "{path} of {}", p["model"]);
                compared += 1;
            }
        }
        assert!(plans.len() > 40 && compared >= 40 * plans.len(), "{compared} values of {} plans compared", plans.len());
        // A non-default value of each kind made it through: the list, a null, the layout string.
        let last = shown(&meshplan_core::plan_value(plans.last().unwrap()).unwrap().plan);
        assert_eq!(get(&last, "model.moe_layer_freq"), Some(&json!([0, 0, 0, 1, 1, 1, 1, 1])));
        assert_eq!(get(&last, "training.recompute_num_layers"), Some(&json!(2)));
        assert_eq!(get(&last, "parallelism.pipeline_model_parallel_layout"), Some(&json!("Et|tt|tt|ttL")));
    }
}
