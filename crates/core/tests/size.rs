//! Cluster sizing (size.rs) against hand-worked cases: time = steps × step time = tokens ÷ (tokens/s), GPU-hours =
//! GPUs × hours, the fewest GPUs that hold a model, the fewest nodes that meet a deadline, the fastest run within a
//! budget; and the readers of the request's text.

use meshplan_core::Code;
use meshplan_core::size::{self, SizeRequest, SizeResult};
use serde_json::{Value, json};

fn req(pairs: &[(&str, &str)]) -> SizeRequest {
    let map: serde_json::Map<String, Value> = pairs.iter().map(|(k, x)| (k.to_string(), json!(x))).collect();
    SizeRequest::from_value(&Value::Object(map)).expect("a request")
}

fn plan(model: &str, seq: u64, gbs: u64) -> Value {
    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8},
           "training": {"seq_length": seq, "global_batch_size": gbs}})
}

fn sized(model: &str, seq: u64, gbs: u64, pairs: &[(&str, &str)]) -> SizeResult {
    size::size_value(&plan(model, seq, gbs), &req(pairs)).expect("sizes")
}

#[test]
fn quantities_and_durations_read_as_written() {
    // 15T = 15·10^12; 500B = 5·10^11 (B: billion, as G); 500k = 5·10^5; separators are ignored.
    assert_eq!(size::read_quantity("15T"), Some(15e12));
    assert_eq!(size::read_quantity("500B"), Some(500e9));
    assert_eq!(size::read_quantity("500g"), Some(500e9));
    assert_eq!(size::read_quantity("500k"), Some(5e5));
    assert_eq!(size::read_quantity("1_000,000"), Some(1e6));
    assert_eq!(size::read_quantity("1.5e12"), Some(1.5e12));
    assert_eq!(size::read_quantity("-3"), None);
    assert_eq!(size::read_quantity("15X"), None);
    assert_eq!(size::read_quantity("ÿ"), None);
    // 30 days = 30 × 86,400 s; 12 h = 43,200 s; 2 weeks = 1,209,600 s; 90 min = 5,400 s.
    assert_eq!(size::read_duration("30d"), Some(2_592_000.0));
    assert_eq!(size::read_duration("12 h"), Some(43_200.0));
    assert_eq!(size::read_duration("2w"), Some(1_209_600.0));
    assert_eq!(size::read_duration("90min"), Some(5_400.0));
    assert_eq!(size::read_duration("30"), None, "a deadline needs its unit");
    assert_eq!(size::read_duration("30y"), None);
}

#[test]
fn counts_are_the_ends_powers_of_two_and_three_times_them() {
    // 16 … 2,048: 2^4 … 2^11 (8 counts) and 3·2^3 … 3·2^9 = 24 … 1,536 (7 counts).
    assert_eq!(size::counts(16, 2048), vec![16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]);
    assert_eq!(size::counts(5, 7), vec![5, 6, 7]);
    assert_eq!(size::counts(1, 1), vec![1]);
    // 1 … 2^24: 2^0 … 2^24 (25) and 3 … 3·2^22 (23): 48 counts, within MAX_SIZE_COUNTS.
    assert_eq!(size::counts(1, 1 << 24).len(), 48);
}

#[test]
fn batch_for_is_the_largest_multiple_of_the_world_it_can_be() {
    // 24 GPUs, 256 … 1,024 sequences: ⌊1024 / 24⌋ = 42, 42 × 24 = 1,008 ≥ 256.
    assert_eq!(size::batch_for(24, 256, 1024), 1008);
    // 24 GPUs, 1,000 … 1,007: 41 × 24 = 984 < 1,000; 83 × 12 = 996 < 1,000; 167 × 6 = 1,002.
    assert_eq!(size::batch_for(24, 1000, 1007), 1002);
    // 7 GPUs, 3 … 5: no multiple of 7, and 7 is odd: the largest accepted, 5.
    assert_eq!(size::batch_for(7, 3, 5), 5);
}

#[test]
fn time_is_whole_steps_times_step_time_and_tokens_over_throughput() {
    // Llama 3.1 8B, global batch 128 × 8,192 = 1,048,576 tokens a step: 1,048,576,000 tokens are exactly 1,000 steps,
    // one token more is 1,001 (Megatron trains whole steps).
    let r = sized("llama-3.1-8b", 8192, 128, &[("tokens", "1048576000"), ("nodes", "1..2")]);
    assert_eq!(r.points.len(), 2);
    for q in &r.points {
        let best = q.best.as_ref().expect("an 8B model fits on one node");
        assert_eq!(q.train_iters, 1000);
        let time = q.time_to_train_s.unwrap();
        assert!((time - 1000.0 * best.step_time_s).abs() <= 1e-9 * time);
        // tokens ÷ (tokens/s): the same time, since the tokens are whole steps.
        let tokens_per_s = best.tokens_per_s_per_gpu * q.gpus as f64;
        assert!((time - 1_048_576_000.0 / tokens_per_s).abs() <= 1e-9 * time, "{time} vs {}", 1_048_576_000.0 / tokens_per_s);
        // GPU-hours: every GPU for the whole time.
        assert!((q.gpu_hours.unwrap() - q.gpus as f64 * time / 3600.0).abs() <= 1e-9 * q.gpu_hours.unwrap());
    }
    let r = sized("llama-3.1-8b", 8192, 128, &[("tokens", "1048576001"), ("nodes", "1")]);
    assert_eq!(r.points[0].train_iters, 1001);
    // Steps instead of tokens: the steps are the steps.
    let r = sized("llama-3.1-8b", 8192, 128, &[("steps", "250k"), ("nodes", "1")]);
    assert_eq!(r.points[0].train_iters, 250_000);
}

#[test]
fn the_fewest_gpus_that_hold_a_model_and_why_fewer_do_not() {
    // Llama 3.1 70B (70.55·10^9 parameters) in bf16 with Megatron's distributed optimizer keeps 2 (bf16 weights)
    // + 4 (fp32 gradients) + 12 (fp32 main weights and two Adam moments, sharded over DP) bytes a parameter. On 8 GPUs
    // the least any GPU holds is at DP 1: 18 × 70.55·10^9 / 8 = 158.7·10^9 B = 147.8 GiB > 80 GiB. Weights,
    // gradients and states alone need ⌈18 × 70.55·10^9 / 80 GiB⌉ = 15 GPUs, so no fewer than 2 nodes of 8.
    let r = sized("llama-3.1-70b", 8192, 512, &[("tokens", "1T"), ("nodes", "1..3")]);
    let one = &r.points[0];
    let why = one.no_fit.as_ref().expect("one node cannot hold 70B");
    assert_eq!(why.code, Code::OutOfMemory);
    let min = r.min_gpus.expect("three nodes hold it");
    assert!(min >= 16, "{min}");
    assert!(why.message.contains(&format!("holds from {min} GPUs")), "{}", why.message);
    // The minimum is the first count with a layout; every count below it has none.
    for q in &r.points {
        assert_eq!(q.best.is_some(), q.gpus >= min, "{} GPUs", q.gpus);
    }
}

#[test]
fn the_chosen_count_is_the_fewest_that_meets_the_deadline() {
    let tokens = ("tokens", "10B");
    let all = sized("llama-3.1-8b", 4096, 256, &[tokens, ("nodes", "1..4")]);
    let times: Vec<(u64, f64)> = all.points.iter().map(|q| (q.num_nodes, q.time_to_train_s.unwrap())).collect();
    assert_eq!(times.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    // A deadline exactly the 3-node time: the answer is the fewest nodes whose time is at most it.
    let deadline = times[2].1;
    let fewest = times.iter().find(|t| t.1 <= deadline).map(|t| t.0);
    let r = sized("llama-3.1-8b", 4096, 256, &[tokens, ("nodes", "1..4"), ("deadline", &format!("{deadline}s"))]);
    assert_eq!(r.fewest_nodes_meeting_deadline, fewest);
    assert!(fewest.unwrap() <= 3);
    for q in &r.points {
        assert_eq!(q.meets_deadline, Some(q.time_to_train_s.unwrap() <= deadline));
    }
    // Half the fastest time: no count meets it.
    let fastest = times.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    let r = sized("llama-3.1-8b", 4096, 256, &[tokens, ("nodes", "1..4"), ("deadline", &format!("{}s", fastest / 2.0))]);
    assert_eq!(r.fewest_nodes_meeting_deadline, None);
}

#[test]
fn the_budget_picks_the_fastest_run_whose_gpu_hours_fit() {
    let tokens = ("tokens", "10B");
    let all = sized("llama-3.1-8b", 4096, 256, &[tokens, ("nodes", "1..4")]);
    // A budget of the 2-node run's GPU-hours: every run at or under it is allowed; the fastest of them is the answer.
    let budget = all.points[1].gpu_hours.unwrap();
    let r = sized("llama-3.1-8b", 4096, 256, &[tokens, ("nodes", "1..4"), ("gpu_hours", &format!("{budget}"))]);
    let mut best: Option<(f64, u64)> = None;
    for q in &all.points {
        let (t, h) = (q.time_to_train_s.unwrap(), q.gpu_hours.unwrap());
        if h <= budget && best.is_none_or(|b| t < b.0) {
            best = Some((t, q.num_nodes));
        }
    }
    assert_eq!(r.fastest_within_budget, best.map(|b| b.1));
    for q in &r.points {
        assert_eq!(q.within_budget, Some(q.gpu_hours.unwrap() <= budget));
    }
}

#[test]
fn a_batch_range_gives_each_count_a_batch_its_gpus_divide() {
    // 2M … 4M tokens of 4,096: 489 … 976 sequences (⌈2,000,000 / 4,096⌉ = 489, ⌊4,000,000 / 4,096⌋ = 976). 1 node: 976
    // = 122 × 8; 3 nodes: ⌊976 / 24⌋ × 24 = 960.
    let r = sized("llama-3.1-8b", 4096, 1, &[("tokens", "10B"), ("nodes", "1..3"), ("batch_tokens", "2M..4M")]);
    let batches: Vec<(u64, u64)> = r.points.iter().map(|q| (q.num_nodes, q.global_batch_size)).collect();
    assert_eq!(batches, vec![(1, 976), (2, 976), (3, 960)]);
    // 10·10^9 tokens at 960 × 4,096 = 3,932,160 a step: ⌈2,543.1⌉ = 2,544 steps.
    assert_eq!(r.points[2].train_iters, 2544);
}

#[test]
fn a_deadline_without_a_range_stops_two_counts_past_the_first_that_meets_it() {
    // Llama 3.1 8B on 1B tokens meets a 30-day deadline on one node already: 1 (meets), 2, 3, then stop.
    let r = sized("llama-3.1-8b", 4096, 256, &[("tokens", "1B"), ("deadline", "30d")]);
    assert_eq!(r.fewest_nodes_meeting_deadline, Some(1));
    assert_eq!(r.points.iter().map(|q| q.num_nodes).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(r.notes.iter().any(|n| n.contains("two counts past")), "{:?}", r.notes);
    assert!(r.assumptions.iter().any(|a| a.contains("node range 1..8192")), "{:?}", r.assumptions);
}

#[test]
fn the_request_refuses_what_it_cannot_read() {
    let code = |v: Value| SizeRequest::from_value(&v).and_then(|r| r.read()).err().map(|e| e.code);
    assert_eq!(code(json!({"tokens": "15T", "deadline": "30d", "nodes": "16..512", "efficiency": 0.7})), None);
    assert_eq!(code(json!({"tokns": "15T"})), Some(Code::SizeInvalidValue));
    assert_eq!(code(json!({"tokens": [1]})), Some(Code::SizeInvalidValue));
    assert_eq!(code(json!({"tokens": "0.4"})), Some(Code::SizeZeroTokens));
    assert_eq!(code(json!({"steps": "2.5"})), Some(Code::SizeInvalidValue));
    assert_eq!(code(json!({"gpu_hours": "0"})), Some(Code::SizeZeroDeadline));
    assert_eq!(code(json!({"efficiency": "1.5"})), Some(Code::SizeInvalidValue));
    assert_eq!(code(json!({"tokens": "1e19"})), Some(Code::SizeInvalidValue));
    // A long value is quoted cut to 40 characters, on a character boundary.
    let long = "é".repeat(100);
    let e = SizeRequest::from_value(&json!({"tokens": long})).and_then(|r| r.read()).unwrap_err();
    assert!(e.message.contains(&"é".repeat(40)) && !e.message.contains(&"é".repeat(41)), "{}", e.message);
}

#[test]
fn scaling_efficiency_is_against_the_best_smaller_count() {
    // 4,000, 4,000, 3,800, nothing, 4,200, 3,000 tokens/s per GPU: the best so far is 4,000 until 4,200, so
    // 1, 1, 0.95, -, 1, 3,000 / 4,200 = 0.714.
    let e = size::scaling_efficiency(&[Some(4000.0), Some(4000.0), Some(3800.0), None, Some(4200.0), Some(3000.0)]);
    assert_eq!(e[..5], [Some(1.0), Some(1.0), Some(0.95), None, Some(1.0)]);
    assert!((e[5].unwrap() - 3000.0 / 4200.0).abs() < 1e-15);
}
