//! The sanity alarm: a throughput the user measured, set against the GPU's peak and the step-time estimate.

use super::findings::d;
use crate::derive::Derived;
use crate::perf::Performance;
use crate::plan::Plan;
use crate::{Code, Diagnostic};

/// Estimated throughput below which a measurement is flagged: 0.6 of the estimate, about four times the model's
/// held-out median error (docs/calibration.md), so an honest miss of the model does not fire it.
pub const BELOW_PREDICTION: f64 = 0.6;

/// The measured model TFLOP/s per GPU: the given figure, or the measured tokens/s × model FLOPs per token.
fn measured_tflops(p: &Plan, dv: &Derived, perf: &Performance) -> Option<f64> {
    let st = &p.training.settings;
    let per_token = perf.model_flops_per_step / (dv.tokens_per_step.max(1) as f64);
    st.measured_tflops_per_gpu
        .or_else(|| st.measured_tokens_per_s_per_gpu.map(|t| t * per_token / 1e12))
        .filter(|x| x.is_finite() && *x > 0.0)
}

/// measured-above-peak and measured-below-prediction.
pub fn measured(p: &Plan, dv: &Derived, perf: &Performance, out: &mut Vec<Diagnostic>) {
    let Some(m) = measured_tflops(p, dv, perf) else { return };
    let precision = p.training.settings.precision.key();
    // MFU is the model rate over the dense peak of the training precision, so the peak is their ratio.
    let peak = if perf.mfu > 0.0 { perf.model_tflops_per_gpu / perf.mfu } else { 0.0 };
    if peak > 0.0 && m > peak {
        out.push(d(
            Code::MeasuredAbovePeak,
            format!(
                "measured {m:.0} TFLOP/s per GPU is above the {} dense {precision} peak of {peak:.0} TFLOP/s ({:.0}% of peak): the run did less \
                 work per GPU than this plan describes",
                p.gpu.name,
                100.0 * m / peak
            ),
            "check the run's log for the parallel sizes it actually used: a parallelism silently off (e.g. context parallelism with a \
             cp_comm_type that disables it, so each rank attends over less than the plan's sequence) or a FLOP count with other \
             conventions (sparsity peak, recompute counted) gives figures like this"
                .into(),
        ));
        return;
    }
    let predicted = perf.model_tflops_per_gpu;
    if predicted > 0.0 && m < BELOW_PREDICTION * predicted {
        let step = perf.step_time_s.max(f64::MIN_POSITIVE);
        let mut terms = perf.breakdown.terms();
        terms[0].1 = 0.0; // compute is what the run is for; the overheads explain a gap
        crate::sort::stable_by(&mut terms, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let named: Vec<String> =
            terms.iter().filter(|t| t.1 > 0.0).take(3).map(|(n, t)| format!("{n} {t:.3} s ({:.0}% of the step)", 100.0 * t / step)).collect();
        out.push(d(
            Code::MeasuredBelowPrediction,
            format!(
                "measured {m:.0} TFLOP/s per GPU is {:.0}% of the estimate, {predicted:.0} TFLOP/s; the estimate's largest overheads: {}",
                100.0 * m / predicted,
                if named.is_empty() { "none".to_string() } else { named.join(", ") }
            ),
            "profile one step: an exposed communication or bubble larger than estimated (overlap settings off, groups crossing the NVLink \
             domain), more recompute than planned, routing imbalance (moe_routing_imbalance_factor) or host-bound launches \
             (cuda_graph_impl) would each explain a gap of this size"
                .into(),
        ));
    }
}
