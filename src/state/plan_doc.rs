//! The plan document: the app's one source of truth, the plan file's JSON exactly as
//! `meshplan plan` reads it, edited by dotted path (`share.rs` carries it in the URL hash).
//!
//! Plain Rust (no DOM), so all of it is tested natively.

use meshplan_core::recipes;
use serde_json::{Map, Value, json};

/// The plan the page opens with.
pub fn default_plan() -> Value {
    json!({
        "model": "llama-3.1-8b",
        "cluster": { "gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2 },
        "training": {
            "seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128,
            "recompute_granularity": "selective", "use_distributed_optimizer": true, "precision": "bf16"
        },
        "parallelism": {
            "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2,
            "context_parallel_size": 1, "expert_model_parallel_size": 1,
            "sequence_parallel": true, "order": "tp-cp-ep-dp-pp"
        }
    })
}

/// The value at a dotted path (`parallelism.tensor_model_parallel_size`), if any.
pub fn get<'a>(plan: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(plan, |v, key| v.get(key))
}

/// Whether a plan's model is a Hugging Face config (only such a plan waits for the page's config.json reader, `hf.rs`).
pub fn names_hf_config(plan: &Value) -> bool {
    plan.get("model").and_then(|m| m.get("hf_config")).is_some()
}

/// Sets the value at a dotted path, creating objects on the way. Setting a model field while
/// `model` is a preset key turns it into `{"preset": key, field: value}`, which the core reads
/// as that preset with an override. `Value::Null` removes the field (Megatron's default applies).
pub fn set(plan: &mut Value, path: &str, value: Value) {
    let keys: Vec<&str> = path.split('.').collect();
    if keys.len() > 1 && keys[0] == "model" {
        if let Some(Value::String(key)) = plan.get("model") {
            let preset = json!({ "preset": key });
            plan["model"] = preset;
        } else if plan.get("model").is_none_or(Value::is_null)
            && let Some(preset) = plan.get("recipe").and_then(Value::as_str).and_then(recipes::find).and_then(|r| r.preset())
        {
            // A plan that takes its model from its recipe: the override goes on the recipe's preset (a recipe whose
            // model is no preset gives none: the field is set alone, and the plan asks for the model).
            plan["model"] = json!({ "preset": preset });
        }
    }
    let mut node = plan;
    for key in &keys[..keys.len() - 1] {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        node = node.as_object_mut().expect("made an object").entry(*key).or_insert_with(|| Value::Object(Map::new()));
    }
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    let map = node.as_object_mut().expect("made an object");
    let last = keys[keys.len() - 1];
    if value.is_null() {
        map.remove(last);
    } else {
        map.insert(last.to_string(), value);
    }
}

/// The plan that starts from Megatron Bridge recipe `name`: the recipe alone (it supplies the model, its cluster, its
/// parallelism and settings; anything the plan kept would override them), with the plan's cluster kept when the
/// recipe's name states none.
pub fn with_recipe(plan: &Value, name: &str) -> Value {
    let mut next = json!({ "recipe": name });
    let states_cluster = recipes::find(name).is_some_and(|r| r.gpu.is_some() && r.gpus.is_some());
    if !states_cluster && let Some(cluster) = plan.get("cluster") {
        next["cluster"] = cluster.clone();
    }
    next
}

/// The plan without its recipe, keeping the run: the recipe's values written in where the plan does not give its own
/// (`recipes::expand`); a plan without a known recipe loses the key and nothing else.
pub fn without_recipe(plan: &Value) -> Value {
    recipes::expand(plan).unwrap_or_else(|| {
        let mut p = plan.clone();
        if let Some(m) = p.as_object_mut() {
            m.remove("recipe");
        }
        p
    })
}

/// What an edited text box means: an integer or a number if it reads as one, `true`/`false`,
/// nothing (remove the field) when empty, otherwise the text itself — so any value can be
/// typed and the core flags what is wrong instead of the form blocking it.
pub fn typed_value(text: &str) -> Value {
    let t = text.trim();
    if t.is_empty() {
        return Value::Null;
    }
    if let Ok(n) = t.parse::<u64>() {
        return Value::from(n);
    }
    if let Ok(n) = t.parse::<i64>() {
        return Value::from(n);
    }
    if let Some(x) = decimal_f64(t)
        && let Some(n) = serde_json::Number::from_f64(x)
    {
        return Value::Number(n);
    }
    match t {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(t.to_string()),
    }
}

/// The number a decimal text stands for, when the text is one in Rust's float grammar (`f64::from_str`: a sign, digits
/// with at most one point and at least one digit, an optional exponent) — its `inf`/`nan` spellings give `None` here,
/// as `Number::from_f64` turned them away anyway. In the browser the value is JavaScript's `parseFloat`, which rounds
/// correctly as Rust's parser does (ECMAScript `StringToNumber`; V8's strtod), so the page links no copy of Rust's
/// float parser and its 10 KB power-of-five table (docs/web.md, "What went").
fn decimal_f64(t: &str) -> Option<f64> {
    let b = t.as_bytes();
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let whole = digits(i);
    i += whole;
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        fraction = digits(i + 1);
        i += 1 + fraction;
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let exponent = digits(i);
        if exponent == 0 {
            return None;
        }
        i += exponent;
    }
    (i == b.len()).then(|| parse_decimal(t))
}

#[cfg(target_arch = "wasm32")]
fn parse_decimal(t: &str) -> f64 {
    js_sys::parse_float(t)
}

#[cfg(not(target_arch = "wasm32"))]
fn parse_decimal(t: &str) -> f64 {
    t.parse().unwrap_or(f64::NAN)
}

/// What the layout box's text is in the plan: nothing when empty, the list form when it reads as a JSON list, else the
/// string as typed (untrimmed: Megatron reads a space as an invalid layer character, and the report says so).
pub fn layout_value(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Null;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(list @ Value::Array(_)) => list,
        _ => Value::String(text.to_string()),
    }
}

/// What the config.json box's text is in the plan (`model.hf_config`): read as the CLI reads a plan or config file
/// (`meshplan_core::plan::read_json`: at most 1 MiB, and Python's `Infinity` / `NaN`, which Nemotron-H configs carry,
/// as null), and a JSON object; else why not, in the core's words.
pub fn hf_config_value(text: &str) -> Result<Value, String> {
    match meshplan_core::plan::read_json(text) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("a config.json is a JSON object".into()),
        Err(e) => Err(e.message),
    }
}

/// How a plan value shows in a text box.
pub fn display_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_box_reads_as_the_cli_does() {
        // Nemotron-H's config.json carries `"time_step_limit": [0.0, Infinity]` (Python's json module); the CLI reads
        // it with Infinity as null. Before: serde_json::from_str refused it ("not valid JSON").
        let v = hf_config_value(r#"{"architectures": ["NemotronHForCausalLM"], "time_step_limit": [0.0, Infinity], "x": NaN}"#).unwrap();
        assert_eq!(v["time_step_limit"], json!([0.0, null]));
        assert_eq!(v["x"], Value::Null);
        // Over 1 MiB is refused before parsing, naming the size (2^20 + 9 bytes).
        let big = format!("{{\"a\": \"{}\"}}", "x".repeat(1 << 20));
        let e = hf_config_value(&big).unwrap_err();
        assert!(e.contains(&(big.len()).to_string()) && e.contains("1048576"), "{e}");
        assert_eq!(hf_config_value("[1]").unwrap_err(), "a config.json is a JSON object");
        assert!(hf_config_value("{nope").is_err());
    }

    #[test]
    fn layout_text_is_kept_as_typed() {
        assert_eq!(layout_value("Et*3|(tt|)*29,m|L"), json!("Et*3|(tt|)*29,m|L"));
        assert_eq!(layout_value("Et |tL"), json!("Et |tL"));
        assert_eq!(layout_value("  "), Value::Null);
        assert_eq!(layout_value(r#"[["embedding", "decoder"], ["decoder", "loss"]]"#), json!([["embedding", "decoder"], ["decoder", "loss"]]));
        assert_eq!(layout_value("[not json"), json!("[not json"));
    }

    #[test]
    fn set_and_get_by_path() {
        let mut p = default_plan();
        set(&mut p, "parallelism.tensor_model_parallel_size", json!(4));
        assert_eq!(get(&p, "parallelism.tensor_model_parallel_size"), Some(&json!(4)));
        set(&mut p, "parallelism.virtual_pipeline_model_parallel_size", json!(2));
        set(&mut p, "parallelism.virtual_pipeline_model_parallel_size", Value::Null);
        assert_eq!(get(&p, "parallelism.virtual_pipeline_model_parallel_size"), None);
        set(&mut p, "new.section.field", json!("x"));
        assert_eq!(get(&p, "new.section.field"), Some(&json!("x")));
    }

    #[test]
    fn editing_a_model_field_keeps_the_preset_as_base() {
        let mut p = default_plan();
        set(&mut p, "model.num_layers", json!(40));
        assert_eq!(p["model"], json!({"preset": "llama-3.1-8b", "num_layers": 40}));
        let report = meshplan_core::plan_value(&p).unwrap();
        assert_eq!(report.plan.model.num_layers, 40);
        assert_eq!(report.plan.model.hidden_size, 4096);
    }

    #[test]
    fn recipes_in_and_out() {
        // Qwen3-30B-A3B's 16-GPU H100 recipe states its cluster (2 nodes of 8 H100): picking it drops the rest of the plan.
        let name = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config";
        let p = with_recipe(&default_plan(), name);
        assert_eq!(p, json!({ "recipe": name }));
        let r = meshplan_core::plan_value(&p).unwrap();
        assert_eq!((r.plan.model_key.as_str(), r.derived.world_size), ("qwen3-30b-a3b", 16));
        // Editing a model field under it overrides the recipe's preset, not a model of its own.
        let mut q = p.clone();
        set(&mut q, "model.num_layers", json!(40));
        assert_eq!(q["model"], json!({"preset": "qwen3-30b-a3b", "num_layers": 40}));
        // "No recipe" keeps the run: the same world size and peak, and the recipe's values written in.
        let out = without_recipe(&p);
        assert!(out.get("recipe").is_none());
        let r2 = meshplan_core::plan_value(&out).unwrap();
        assert_eq!((r2.derived.world_size, r2.memory.peak_bytes), (16, r.memory.peak_bytes));
        assert_eq!(without_recipe(&default_plan()), default_plan());
    }

    #[test]
    fn typed_values() {
        assert_eq!(typed_value(" 8 "), json!(8));
        assert_eq!(typed_value("-2"), json!(-2));
        assert_eq!(typed_value("2.5"), json!(2.5));
        assert_eq!(typed_value(""), Value::Null);
        assert_eq!(typed_value("true"), json!(true));
        assert_eq!(typed_value("four"), json!("four"));
        assert_eq!(display_value(Some(&json!(8))), "8");
        assert_eq!(display_value(Some(&json!("tp-cp-ep-dp-pp"))), "tp-cp-ep-dp-pp");
    }

    #[test]
    fn decimal_grammar_is_rusts() {
        // Rust's own parser is the oracle: every text it reads as a finite number is a decimal here with the same
        // value, and every text it rejects (or reads as inf/nan) is not. Hand-picked edges, then every string of up
        // to four characters over the grammar's alphabet.
        let edges = ["2.5", "-.5", "+1.", "1e5", "1E+05", "1e-400", "1e400", ".", "+", "-e5", "e5", "1e", "1e+", "1.2.3",
            "1_0", " 1", "0x10", "inf", "-Infinity", "NaN", "00.1", "1.e3", ".e3", "4.9e-324", "1.7976931348623157e308"];
        let alphabet = ['1', '0', '.', 'e', 'E', '+', '-', 'n', ' '];
        let mut texts: Vec<String> = edges.iter().map(|s| s.to_string()).collect();
        let mut layer = vec![String::new()];
        for _ in 0..4 {
            layer = layer.iter().flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}"))).collect();
            texts.extend(layer.iter().cloned());
        }
        for t in &texts {
            let rust = t.parse::<f64>().ok().filter(|x| x.is_finite() || t.to_ascii_lowercase().trim_start_matches(['+', '-']).starts_with(|c: char| c.is_ascii_digit() || c == '.'));
            assert_eq!(decimal_f64(t).map(f64::to_bits), rust.map(f64::to_bits), "{t:?}");
        }
        assert_eq!(typed_value("1e400"), json!("1e400"));
        assert_eq!(typed_value("-.5e1"), json!(-5.0));
    }
}
