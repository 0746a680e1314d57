//! Recomputes the calibration error with the embedded constants on the published runs, and the error on the
//! validation runs the fit never sees (reference/validation_runs.json). The bounds are calibrate.rs's `*_BOUND`
//! constants (the measured values of the committed fit rounded up, quoted by docs/calibration.md), so a change that
//! makes the model worse fails here. The leave-one-group-out refits run opt-in (`scripts/check-calibration.sh`).

#[path = "../examples/calibrate.rs"]
mod calibrate;

use meshplan_core::perf;

fn file() -> serde_json::Value {
    serde_json::from_str(include_str!("../data/perf_constants.json")).unwrap()
}

#[test]
fn embedded_constants_reproduce_the_calibration() {
    let path = std::env::var("MESHPLAN_CALIBRATION_RUNS").unwrap_or_else(|_| calibrate::DEFAULT_RUNS.to_string());
    let (runs, skipped) = calibrate::load(&path).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    assert!(runs.len() >= 280, "only {} runs mapped ({} skipped)", runs.len(), skipped.len());
    let (median, p90) = calibrate::summary(&calibrate::errors(&runs, perf::constants()));
    // Measured on the committed fit (data/perf_constants.json): median 3.9%, p90 14.8%, MFU 1.44 points.
    assert!(median < calibrate::IN_SAMPLE_MEDIAN_BOUND, "median |TFLOP/s error| {median}");
    assert!(p90 < calibrate::IN_SAMPLE_P90_BOUND, "p90 |TFLOP/s error| {p90}");
    let (mfu_median, _) = calibrate::summary(&calibrate::mfu_errors(&runs, perf::constants()));
    assert!(mfu_median < calibrate::MFU_MEDIAN_BOUND, "median |MFU error| {mfu_median}");
    // The file records the summary of its own fit.
    let file = file();
    assert!((file["median_abs_tflops_error"].as_f64().unwrap() - median).abs() < 1e-3);
    assert_eq!(file["runs_used"].as_u64(), Some(runs.len() as u64));
    // The Advisor's tie band: the model's median error on the ratio of two runs of one model, GPU, precision, GPU count
    // and sequence (measured 5.2% over 74 pairs), recorded as it is recomputed.
    let ratios = calibrate::ratio_errors(&runs, perf::constants());
    assert!(ratios.len() >= 50, "{} pairs", ratios.len());
    assert!((file["median_abs_ratio_error"].as_f64().unwrap() - calibrate::summary(&ratios).0).abs() < 1e-3);
    assert_eq!(file["ratio_pairs"].as_u64(), Some(ratios.len() as u64));
}

#[test]
fn validation_runs_the_fit_never_saw() {
    let (val, _) = calibrate::load(calibrate::VALIDATION_RUNS).unwrap();
    assert!(val.len() >= 190, "only {} validation runs mapped", val.len());
    let errs = calibrate::errors(&val, perf::constants());
    let (median, _) = calibrate::summary(&errs);
    // Measured: 20.2% over 222 runs (19.2% over 193 before gpt-oss-120b and DeepSeek-V4-Flash were mapped) with tuned defaults for what the 26.x rows' recipe entries leave unstated, each entry's
    // moe_a2a_overlap and unset CUDA graphs stated, a full-iteration graph's MoE permutation at its kernel traffic, and
    // the harness's bf16 gradient buffer, fused loss and (Llama NVFP4) TP overlap off stated (docs/tuned.md); how it
    // moved round by round is docs/calibration.md's appendix.
    assert!(median < calibrate::VALIDATION_MEDIAN_BOUND, "validation median |TFLOP/s error| {median}");
    assert!((file()["validation_median_abs_tflops_error"].as_f64().unwrap() - median).abs() < 1e-3);
}

#[test]
fn leave_one_group_out_is_recorded_for_every_dimension() {
    let held = file()["held_out"].as_array().cloned().unwrap_or_default();
    for dim in calibrate::DIMENSIONS {
        assert!(held.iter().any(|h| h["dimension"] == dim), "no held-out group of {dim}");
    }
    // Measured by the committed fit: 8.8% over groups, worst 35.1% (every dense run held out); the bounds and how the
    // figures moved are in docs/calibration.md.
    let medians: Vec<f64> = held.iter().map(|h| h["held_out"].as_f64().unwrap()).collect();
    let (median, worst) = calibrate::logo_figures(&medians);
    assert!(median < calibrate::LOGO_MEDIAN_BOUND, "median held-out {median} of {medians:?}");
    assert!(worst < calibrate::LOGO_WORST_BOUND, "a held-out group at {worst}: {medians:?}");
}

/// The leave-one-group-out figures recomputed, not read: every fold refitted on the other groups (the calibrate
/// example's own code, as `cargo run --release -p meshplan-core --example calibrate` runs it) and held to the same
/// bounds; the recorded figures in data/perf_constants.json must be these. Opt-in (about 20 s in release, minutes in
/// debug): `scripts/check-calibration.sh`, or `cargo test --release -p meshplan-core --test perf_calibration --
/// --ignored`.
#[test]
#[ignore]
fn leave_one_group_out_recomputed() {
    let (runs, _) = calibrate::load(calibrate::DEFAULT_RUNS).unwrap();
    let held = calibrate::leave_one_group_out(&runs, perf::constants(), 3, calibrate::SWEEPS);
    for dim in calibrate::DIMENSIONS {
        assert!(held.iter().any(|h| h.dimension == dim), "no held-out group of {dim}");
    }
    let medians: Vec<f64> = held.iter().map(|h| h.held_out).collect();
    let (median, worst) = calibrate::logo_figures(&medians);
    assert!(median < calibrate::LOGO_MEDIAN_BOUND, "median held-out {median} of {medians:?}");
    assert!(worst < calibrate::LOGO_WORST_BOUND, "a held-out group at {worst}: {medians:?}");
    // The file's record is this computation's (rounded to 4 places as the example writes it).
    let recorded = file()["held_out"].as_array().cloned().unwrap_or_default();
    assert_eq!(recorded.len(), held.len(), "groups held out");
    for (r, h) in recorded.iter().zip(&held) {
        assert_eq!((r["dimension"].as_str(), r["group"].as_str()), (Some(h.dimension), Some(h.group.as_str())));
        assert!((r["held_out"].as_f64().unwrap() - h.held_out).abs() < 1e-3, "{} {}: recorded {} recomputed {}", h.dimension, h.group, r["held_out"], h.held_out);
    }
}

/// Docs and tests state the same bounds: each row of docs/calibration.md's "What holds now" that names a bound
/// constant gives its value as the constant has it (a bound changed in one place and not the other fails here).
#[test]
fn docs_state_the_bounds_the_tests_hold() {
    let docs = include_str!("../../../docs/calibration.md");
    let bounds = [
        ("IN_SAMPLE_MEDIAN_BOUND", calibrate::IN_SAMPLE_MEDIAN_BOUND, "%"),
        ("IN_SAMPLE_P90_BOUND", calibrate::IN_SAMPLE_P90_BOUND, "%"),
        ("MFU_MEDIAN_BOUND", calibrate::MFU_MEDIAN_BOUND, " points"),
        ("VALIDATION_MEDIAN_BOUND", calibrate::VALIDATION_MEDIAN_BOUND, "%"),
        ("LOGO_MEDIAN_BOUND", calibrate::LOGO_MEDIAN_BOUND, "%"),
        ("LOGO_WORST_BOUND", calibrate::LOGO_WORST_BOUND, "%"),
    ];
    for (name, value, unit) in bounds {
        let line = docs.lines().find(|l| l.contains(&format!("`{name}`"))).unwrap_or_else(|| panic!("docs/calibration.md names no {name}"));
        let stated = format!("< {}{unit}", 100.0 * value);
        assert!(line.contains(&stated), "docs/calibration.md states {name} as {line:?}, the test holds {stated}");
    }
}
