//! The name of a Megatron Bridge table row's perf-recipe entry, shared by the calibrate and advisor_ranks examples.

use serde_json::Value;

/// `<MODEL>_<GPU>_<PRECISION>` as Bridge's scripts/performance workload_base_configs.py names its entries (B300 runs
/// read B200's); None for a model or GPU Bridge has no entry for.
pub fn entry_name(r: &Value, fp8_recipe: Option<&str>) -> Option<String> {
    let model = match r["model_key"].as_str()? {
        "llama-3.1-8b" => "LLAMA3_8B",
        "llama-3.1-70b" => "LLAMA3_70B",
        "llama-3.1-405b" => "LLAMA31_405B",
        "deepseek-v3" => "DEEPSEEK_V3",
        "qwen3-30b-a3b" => "QWEN3_30B_A3B",
        "qwen3-235b-a22b" => "QWEN3_235B_A22B",
        _ => return None,
    };
    let gpu = match r["gpu_type"].as_str()? {
        "GB300" => "GB300",
        "GB200" => "GB200",
        "B200" | "B300" => "B200",
        "H100-SXM-80GB" => "H100",
        _ => return None,
    };
    let precision = match (r["precision_normalized"].as_str(), fp8_recipe) {
        (Some("bf16"), _) => "BF16",
        (Some(p), _) if p.contains("fp4") => "NVFP4",
        (_, Some("mxfp8")) => "FP8_MX",
        (_, Some("blockwise")) => "FP8_SC",
        _ => "FP8_CS",
    };
    Some(format!("{model}_{gpu}_{precision}"))
}
