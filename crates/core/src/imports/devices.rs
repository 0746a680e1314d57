//! The GPU an environment report pasted with a launch artefact names: PyTorch's `collect_env` (`GPU models and
//! configuration:` then `GPU 0: NVIDIA A100-SXM4-80GB`), `nvidia-smi -L` (`GPU 0: NVIDIA H100 80GB HBM3 (UUID: …)`) and
//! nvidia-smi's table (`|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |`). Threads paste them
//! beside the script: PyTorch's issue template asks for `collect_env`.
//!
//! Bounded: one pass over the lines; a name is read from at most the first 120 characters of its cell.

use crate::presets;

/// The catalogue GPU every device line of `text` names, with the note that says where it was read; None when there
/// is no device line, or any line names no catalogue GPU or several (an H100 PCIe, an "A100" without its size), or two
/// lines name different ones.
pub(crate) fn named(text: &str) -> Option<(String, String)> {
    let mut key: Option<&'static str> = None;
    let mut shown = String::new();
    for line in text.lines() {
        let Some(name) = device_name(line) else { continue };
        let found = presets::gpus_named(name);
        let [one] = found.as_slice() else { return None };
        if key.is_some_and(|k| k != one.key) {
            return None;
        }
        if key.is_none() {
            shown = name.chars().take(60).collect();
        }
        key = Some(one.key.as_str());
    }
    let key = key?;
    Some((key.to_string(), format!("cluster: the GPU is {key}, as the environment report pasted with the input names it (`{shown}`)")))
}

/// The device name of one line of an environment report, if it is one: `GPU 0: NAME` (collect_env, `nvidia-smi -L`,
/// the UUID cut off) or an nvidia-smi table row's first cell, `|   0  NAME   On  |`.
fn device_name<'a>(line: &'a str) -> Option<&'a str> {
    let t = line.trim();
    // `GPU 0: NAME` at the line's start, or after collect_env's `GPU models and configuration: `.
    let listed = |rest: &'a str| -> Option<&'a str> {
        let (index, name) = rest.split_once(':')?;
        let name = name.split(" (UUID").next().unwrap_or("").trim();
        (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty()).then_some(name)
    };
    if let Some(name) = t.strip_prefix("GPU ").and_then(listed).or_else(|| t.find(": GPU ").and_then(|i| listed(&t[i + ": GPU ".len()..]))) {
        return Some(name);
    }
    let cell = t.strip_prefix('|')?.split('|').next()?.trim();
    let (index, rest) = cell.split_once(' ')?;
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest.trim();
    let name = rest.strip_suffix(" On").or_else(|| rest.strip_suffix(" Off"))?.trim();
    (name.starts_with("NVIDIA") || name.starts_with("Tesla") || name.starts_with("AMD")).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_form() {
        // Lines written here in each tool's format.
        assert_eq!(device_name("GPU 0: NVIDIA A100-SXM4-80GB"), Some("NVIDIA A100-SXM4-80GB"));
        assert_eq!(device_name("GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-1234abcd)"), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(device_name("GPU models and configuration: GPU 0: NVIDIA H200"), Some("NVIDIA H200"));
        assert_eq!(device_name("|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |"), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(device_name("| N/A   34C    P0    68W / 700W |  80995MiB / 81559MiB |    100%      Default |"), None);
        assert_eq!(device_name("GPU 0 has a total capacity of 79.11 GiB"), None);
        let report = "GPU models and configuration:\nGPU 0: NVIDIA A100-SXM4-40GB\nGPU 1: NVIDIA A100-SXM4-40GB\n";
        assert_eq!(named(report).map(|(k, _)| k), Some("a100-sxm-40gb".into()));
        // Two different GPUs, or a name of no catalogue entry: none.
        assert_eq!(named("GPU 0: NVIDIA A100-SXM4-40GB\nGPU 1: NVIDIA H100 80GB HBM3\n"), None);
        assert_eq!(named("GPU 0: NVIDIA GeForce RTX 4090\n"), None);
    }
}
