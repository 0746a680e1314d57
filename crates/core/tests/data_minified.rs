//! The catalogue files are compiled in without their indentation (crates/core/build.rs): each compiled-in text must
//! read as exactly the JSON value of its file in data/ (less the top-level keys no reader reads, named here), and carry
//! no whitespace outside its strings.

use serde_json::Value;

macro_rules! same {
    ($($name:literal $(without $($key:literal)*)?),*) => {$(
        let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/", $name)).unwrap();
        let compiled = include_str!(concat!(env!("OUT_DIR"), "/", $name));
        #[allow(unused_mut)] // mutated only for a file with keys left out
        let (mut a, b): (Value, Value) = (serde_json::from_str(&file).unwrap(), serde_json::from_str(compiled).unwrap());
        $($(assert!(a.as_object_mut().unwrap().remove($key).is_some(), "{} has {}", $name, $key);)*)?
        assert_eq!(a, b, "{}", $name);
        // A JSON string cannot hold a raw newline, so any newline was indentation and must be gone.
        assert!(!compiled.contains('\n') && file.contains('\n'), "{}", $name);
        assert!(compiled.len() < file.len(), "{}", $name);
    )*};
}

#[test]
fn compiled_in_catalogue_files_are_their_data_files_without_whitespace() {
    same!("models.json", "gpus.json", "recipes.json" without "comment" "source_repository" "without_recipe",
        "bridge_recipes.json" without "comment" "skipped", "perf_constants.json", "perf_assumptions.json", "advice.json", "mixed_precision.json");
}

#[test]
fn a_string_keeps_its_spaces_and_escaped_quotes() {
    // models.json's notes are prose: their spaces are inside strings and stay.
    let compiled = include_str!(concat!(env!("OUT_DIR"), "/models.json"));
    let v: Value = serde_json::from_str(compiled).unwrap();
    let prose = v.as_array().unwrap().iter().filter_map(|m| m.get("notes")?.as_str()).find(|n| n.contains(' '));
    assert!(prose.is_some(), "some model note has spaces");
}

#[test]
fn the_readers_still_get_every_recipe() {
    // The recipe lists are the files' `recipes` arrays, counted in the files themselves.
    let count = |text: &str| serde_json::from_str::<Value>(text).unwrap()["recipes"].as_array().unwrap().len();
    let bridge = count(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/bridge_recipes.json")).unwrap());
    let presets = count(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/recipes.json")).unwrap());
    assert!(bridge > 0 && presets > 0);
    assert_eq!(meshplan_core::recipes::all().len(), bridge);
    assert_eq!(meshplan_core::presets::bridge_recipes().len(), presets);
    assert!(!meshplan_core::recipes::source_repository().is_empty());
}
