//! Recomputes the calibration error with the embedded constants on the published runs, and the error on the
//! validation runs the fit never sees (reference/validation_runs.json). Thresholds are the measured values of the
//! committed fit rounded up (docs/calibration.md), so a change that makes the model worse fails here.

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
    // Measured (docs/calibration.md, perf-logo round): median 3.8%, p90 16.2%, MFU 1.48 points.
    assert!(median < 0.04, "median |TFLOP/s error| {median}");
    assert!(p90 < 0.165, "p90 |TFLOP/s error| {p90}");
    let (mfu_median, _) = calibrate::summary(&calibrate::mfu_errors(&runs, perf::constants()));
    assert!(mfu_median < 0.015, "median |MFU error| {mfu_median}");
    // The file records the summary of its own fit.
    let file = file();
    assert!((file["median_abs_tflops_error"].as_f64().unwrap() - median).abs() < 1e-3);
    assert_eq!(file["runs_used"].as_u64(), Some(runs.len() as u64));
}

#[test]
fn validation_runs_the_fit_never_saw() {
    let (val, _) = calibrate::load(calibrate::VALIDATION_RUNS).unwrap();
    assert!(val.len() >= 190, "only {} validation runs mapped", val.len());
    let errs = calibrate::errors(&val, perf::constants());
    let (median, _) = calibrate::summary(&errs);
    // Measured: 19.8% with tuned defaults for what the 26.x rows' recipe entries leave unstated (docs/tuned.md; 20.4%
    // with Megatron-Core's), 20.7% (docs/calibration.md; 21.4% before each validation row ran with its own 26.x release's recipe settings, 21.6% before the grouped GEMM's rows scaled with the tile width, 18.7% before the GEMM half-rate width scaled with SMs × tile width, 18.6% before the output layer's GEMM took its vocabulary width, 20.6%
    // before the logits ran on the last stage, 21.8% before unpublished VPs
    // were read from their sibling rows, 21.9% before the slowest pipeline stage set the step, 20.4% before
    // block-scaled FP8 GEMMs ran at their measured share of the tensorwise rate, 19.3% before EP and CP were priced by
    // mechanism — never fitted to).
    assert!(median < 0.22, "validation median |TFLOP/s error| {median}");
    assert!((file()["validation_median_abs_tflops_error"].as_f64().unwrap() - median).abs() < 1e-3);
}

#[test]
fn leave_one_group_out_is_recorded_for_every_dimension() {
    let held = file()["held_out"].as_array().cloned().unwrap_or_default();
    for dim in calibrate::DIMENSIONS {
        assert!(held.iter().any(|h| h["dimension"] == dim), "no held-out group of {dim}");
    }
    // Measured by the committed fit (docs/calibration.md): the median over groups of the held-out median is 8.8% since
    // the grouped GEMM's half-rate rows also scale with the tile width (10.3% with the SMs × tile width alone, 12.5%
    // before it; Hopper held out 10.7 → 4.9%, Blackwell 15.1 → 9.6%), and the worst group is every dense run held out,
    // 35.1% (fitted on the MoE runs alone the fold trades fp8_efficiency against the MoE costs); MoE held out 24.6%.
    // Before: (10.9% before the output layer's logits ran on the last stage, 12.6% with them there before the output GEMM took
    // its vocabulary width), and the worst group is every MoE run held out, 24.9% (over-predicted: the fold keeps the
    // physical MoE first guesses); dense held out 12.7% (39.3% before the vocabulary width, 34.2% on main).
    let mut medians: Vec<f64> = held.iter().map(|h| h["held_out"].as_f64().unwrap()).collect();
    medians.sort_by(f64::total_cmp);
    assert!(medians[(medians.len() - 1) / 2] < 0.10, "median held-out {medians:?}");
    assert!(medians.iter().all(|&m| m < 0.36), "a held-out group above 36%: {medians:?}");
}
