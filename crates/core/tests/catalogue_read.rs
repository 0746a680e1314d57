//! The catalogue files are read by hand from a `serde_json::Value` (presets.rs `read`), so that the page links no
//! typed serde reader: each reading must equal what serde's derived `Deserialize` of the same struct reads from the
//! data file (docs/web.md, "What went").

use meshplan_core::presets::{self, BridgeRecipe, GpuSpec, ModelPreset};
use meshplan_core::rules::advice::{AdviceTables, tables};
use meshplan_core::settings::{MixedPrecisionRecipe, mixed_precision_recipes};
use serde::Deserialize;

#[test]
fn models_read_as_serde_reads_them() {
    let serde: Vec<ModelPreset> = serde_json::from_str(include_str!("../data/models.json")).unwrap();
    assert!(!serde.is_empty());
    assert_eq!(presets::models(), &serde[..]);
}

#[test]
fn gpus_read_as_serde_reads_them() {
    let serde: Vec<GpuSpec> = serde_json::from_str(include_str!("../data/gpus.json")).unwrap();
    assert!(!serde.is_empty());
    assert_eq!(presets::gpus(), &serde[..]);
    // Every field compared bit for bit, floats included (PartialEq would let -0.0 equal 0.0).
    for (a, b) in presets::gpus().iter().zip(&serde) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

#[test]
fn bridge_recipes_of_presets_read_as_serde_reads_them() {
    #[derive(Deserialize)]
    struct File {
        recipes: Vec<BridgeRecipe>,
    }
    let serde: File = serde_json::from_str(include_str!("../data/recipes.json")).unwrap();
    assert!(!serde.recipes.is_empty());
    assert_eq!(presets::bridge_recipes(), &serde.recipes[..]);
}

#[test]
fn mixed_precision_recipes_read_as_serde_reads_them() {
    let serde: Vec<MixedPrecisionRecipe> = serde_json::from_str(include_str!("../data/mixed_precision.json")).unwrap();
    assert!(!serde.is_empty());
    assert_eq!(mixed_precision_recipes(), &serde[..]);
}

#[test]
fn advice_tables_read_as_serde_reads_them() {
    let serde: AdviceTables = serde_json::from_str(include_str!("../data/advice.json")).unwrap();
    assert!(!serde.dense_model_size.rows.is_empty() && !serde.moe_models.rows.is_empty() && !serde.sequence_length.rows.is_empty());
    assert_eq!(format!("{:?}", tables()), format!("{serde:?}"));
}

/// A GPU named as people write it: torch's device name ("NVIDIA H100 80GB HBM3", torch.cuda.get_device_name on an H100
/// SXM), nvidia-smi's ("A100-SXM4-80GB"), a system's ("gb200-nvl72"), a key with a form the catalogue leaves out
/// ("h800-sxm-80gb", which the edit distance took for "a800-sxm-80gb"). A plan reads each as the one entry it names, said
/// in an info diagnostic; a name that fits two entries (an A100 without its memory size) or none of them (a PCIe card,
/// a 16 GB V100, GH200) stays an unknown GPU, the ambiguous one with both keys in its fix.
#[test]
fn a_gpu_named_another_way_is_read_as_the_entry_it_names() {
    use meshplan_core::presets::gpus_named;
    let keys = |name: &str| gpus_named(name).iter().map(|g| g.key.as_str()).collect::<Vec<_>>();
    assert_eq!(keys("NVIDIA H100 80GB HBM3"), ["h100-sxm-80gb"]);
    assert_eq!(keys("A100-SXM4-80GB"), ["a100-sxm-80gb"]);
    assert_eq!(keys("gb200-nvl72"), ["gb200"]);
    assert_eq!(keys("h800-sxm-80gb"), ["h800"]);
    assert_eq!(keys("H100SXM5"), ["h100-sxm-80gb"]);
    assert_eq!(keys("A100"), ["a100-sxm-40gb", "a100-sxm-80gb"]);
    for none in ["H100 PCIe", "H100 NVL", "Tesla V100-SXM2-16GB", "NVIDIA GH200 480GB", "a1000"] {
        assert!(keys(none).is_empty(), "{none}: {:?}", keys(none));
    }
    let plan = |gpu: &str| serde_json::json!({"model": "llama-3.1-8b", "cluster": {"gpu": gpu, "gpus_per_node": 8, "num_nodes": 1}});
    let r = meshplan_core::plan_value(&plan("NVIDIA H100 80GB HBM3")).unwrap();
    assert_eq!(r.plan.gpu.key, "h100-sxm-80gb");
    assert!(r.diagnostics.iter().any(|d| d.code.as_str() == "gpu-name-read" && d.message.contains("h100-sxm-80gb")));
    let e = meshplan_core::plan_value(&plan("A100")).unwrap_err();
    assert!(e.fix.starts_with("name one of a100-sxm-40gb, a100-sxm-80gb"), "{}", e.fix);
}
