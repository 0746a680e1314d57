//! The catalogue files are compiled in without their indentation (crates/core/build.rs): each compiled-in text must
//! read as exactly the JSON value of its file in data/ (less the keys no reader reads, named here), and carry
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
    same!("gpus.json", "recipes.json" without "comment" "source_repository" "without_recipe",
        "bridge_recipes.json" without "comment" "skipped", "advice.json" without "comment", "mixed_precision.json");
}

#[test]
fn models_json_is_compiled_in_without_the_presets_notes() {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/models.json")).unwrap()).unwrap();
    let compiled_text = include_str!(concat!(env!("OUT_DIR"), "/models.json"));
    let compiled: Value = serde_json::from_str(compiled_text).unwrap();
    let mut expected = file.clone();
    let mut notes = 0;
    for m in expected.as_array_mut().unwrap() {
        notes += usize::from(m.as_object_mut().unwrap().remove("notes").is_some());
    }
    // The file's presets carry notes (every one of the 75 when this was written), the compiled copy none.
    assert!(notes > 0);
    assert_eq!(compiled, expected);
    assert!(!compiled_text.contains("\"notes\":") && !compiled_text.contains('\n'));
    // Every other key of every preset is there, strings as written (a name's spaces stay).
    assert_eq!(compiled.as_array().unwrap().len(), file.as_array().unwrap().len());
}

#[test]
fn the_perf_files_keep_what_perf_reads() {
    let file = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()).unwrap()
    };
    // perf_constants.json: only `constants` and the median ratio error (the Advisor's tie band) are compiled in (the
    // calibration's other figures stay in the file).
    let constants = file("perf_constants.json");
    let compiled: Value = serde_json::from_str(include_str!(concat!(env!("OUT_DIR"), "/perf_constants.json"))).unwrap();
    assert!(constants.get("held_out").is_some() && constants.get("comment").is_some());
    assert_eq!(
        compiled,
        serde_json::json!({ "constants": constants["constants"], "median_abs_ratio_error": constants["median_abs_ratio_error"] })
    );
    // perf_assumptions.json: each assumption's value, without its source and without the file's comment; every
    // assumption in the file has a source.
    let assumptions = file("perf_assumptions.json");
    let compiled_text = include_str!(concat!(env!("OUT_DIR"), "/perf_assumptions.json"));
    let compiled: Value = serde_json::from_str(compiled_text).unwrap();
    let expected: serde_json::Map<String, Value> = assumptions
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "comment")
        .map(|(k, v)| {
            assert!(v["source"].as_str().is_some_and(|s| !s.is_empty()), "{k} has a source in the file");
            (k.clone(), serde_json::json!({ "value": v["value"] }))
        })
        .collect();
    assert_eq!(expected.len(), 21, "the file's assumptions, counted in data/perf_assumptions.json");
    assert_eq!(compiled, Value::Object(expected));
    assert!(!compiled_text.contains("source") && !compiled_text.contains('\n'));
    // build.rs compiles both in as Rust constants: they are what serde reads from the data files, field by field
    // (two values also read off data/perf_assumptions.json by hand).
    use meshplan_core::perf::{Assumptions, Constants, assumptions as assumed, constants as fitted};
    let serde_constants: Constants = serde_json::from_value(constants["constants"].clone()).unwrap();
    let serde_assumptions: Assumptions = serde_json::from_value(assumptions.clone()).unwrap();
    assert_eq!(*fitted(), serde_constants);
    assert_eq!(*assumed(), serde_assumptions);
    assert_eq!(assumed().tf32_per_bf16.value, 0.5);
    assert_eq!(assumed().host_link_gbps_per_gpu.value, 50.0);
}

#[test]
fn a_string_keeps_its_spaces_and_escaped_quotes() {
    // models.json's names and sources are prose: their spaces are inside strings and stay.
    let compiled = include_str!(concat!(env!("OUT_DIR"), "/models.json"));
    let v: Value = serde_json::from_str(compiled).unwrap();
    let prose = v.as_array().unwrap().iter().filter_map(|m| m.get("source")?.as_str()).find(|n| n.contains(' '));
    assert!(prose.is_some(), "some model source has spaces");
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
