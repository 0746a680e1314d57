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
