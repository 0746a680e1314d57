use meshplan_core::*;
fn main() {
    let text = std::fs::read_to_string("/tmp/sp/deepseek-v3-16384.json").unwrap();
    let (mut p, _) = parse_plan_str(&text).unwrap();
    p.parallelism.tensor_model_parallel_size = 8; p.parallelism.pipeline_model_parallel_size = 16;
    p.parallelism.expert_model_parallel_size = 8; p.parallelism.expert_tensor_parallel_size = 1; p.parallelism.sequence_parallel = true;
    p.parallelism.num_layers_in_first_pipeline_stage = Some(1);
    let n = 5000;
    let par = p.parallelism.clone();
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box(pipeline::split_layers(61, par.pp(), 1, Some(1), None).unwrap()); }
    println!("split {:?}", t.elapsed() / n);
    let split = pipeline::split_layers(61, par.pp(), 1, Some(1), None).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box(report::derive(&p, Some(&split))); }
    println!("derive {:?}", t.elapsed() / n);
    let d = report::derive(&p, Some(&split));
    let mut v = Vec::new();
    let t = std::time::Instant::now();
    for _ in 0..n { v.clear(); rules::check(&p, &d, None, &mut v); }
    println!("rules {:?} ({} diags)", t.elapsed() / n, v.len());
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box(memory::estimate(&p, &d, &split)); }
    println!("memory {:?}", t.elapsed() / n);
    let mem = memory::estimate(&p, &d, &split);
    let t = std::time::Instant::now();
    for _ in 0..n { v.clear(); rules::check_memory(&p, &mem, &mut v); }
    println!("check_memory {:?}", t.elapsed() / n);
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box(perf::estimate(&p, &d)); }
    println!("perf {:?}", t.elapsed() / n);
    let t = std::time::Instant::now();
    for _ in 0..n { std::hint::black_box(p.model.param_counts()); }
    println!("param_counts {:?}", t.elapsed() / n);
}
