//! Times one search of a plan file, ten times: `cargo run --release -p meshplan-core --example search_one -- FILE`.
use meshplan_core::search::{self, SearchOptions};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a plan file");
    let text = std::fs::read_to_string(&path).expect("readable");
    let opts = SearchOptions::default();
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..10 {
        let t = Instant::now();
        let r = search::search_str(&text, &opts).expect("search");
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
        last = Some(r);
    }
    let r = last.expect("ran");
    println!("best of 10: {best:.1} ms; evaluated {} valid {} skipped by memory {}", r.evaluated, r.valid, r.pruned_by_memory);
}
