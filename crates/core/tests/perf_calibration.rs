//! Recomputes the calibration error with the embedded constants on the published runs.

#[path = "../examples/calibrate.rs"]
mod calibrate;

use meshplan_core::perf;

#[test]
fn embedded_constants_reproduce_the_calibration() {
    let path = std::env::var("MESHPLAN_CALIBRATION_RUNS").unwrap_or_else(|_| calibrate::DEFAULT_RUNS.to_string());
    let (runs, skipped) = calibrate::load(&path).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    assert!(runs.len() >= 200, "only {} runs mapped ({} skipped)", runs.len(), skipped.len());
    let (median, p90) = calibrate::summary(&calibrate::errors(&runs, perf::constants()));
    assert!(median < 0.025, "median |MFU error| {median}");
    assert!(p90 < 0.12, "p90 |MFU error| {p90}");
    // The file records the summary of its own fit.
    let file: serde_json::Value = serde_json::from_str(include_str!("../data/perf_constants.json")).unwrap();
    assert!((file["median_abs_mfu_error"].as_f64().unwrap() - median).abs() < 1e-3);
    assert_eq!(file["runs_used"].as_u64(), Some(runs.len() as u64));
}
