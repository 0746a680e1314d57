//! A fuzz harness that needs no nightly toolchain: generates inputs for every entry point of the core — the plan (with
//! `hf_config`), each import format, the OOM reader with and without a plan, the share-link decoder and the search —
//! runs each as the CLI and the page do, and reports per entry point how many ran, panicked, took over 1 s or
//! allocated over 256 MB, and the slowest.
//!
//! ```sh
//! cargo run --profile fuzz -p meshplan-core --example fuzz -- 1000000 [--seconds S] [--seed N] [--only WORD]
//! ```
//!
//! The number is the most inputs per entry point; `--seconds` ends the run sooner, each entry point having had an
//! equal share of the time (so the cheap ones run more inputs); `--only` keeps the entry points whose name contains
//! WORD. The `fuzz` profile is the release build with panics that unwind, so a panic is caught, counted and saved;
//! under `--release` (panic = abort) the first panic is saved and ends the run.
//!
//! Inputs (`plans.rs`, `text.rs`): structured plans with every plan and Hugging Face `config.json` field drawn from
//! plausible and hostile values; value-, byte- and char-level mutations of the seeds (presets, README examples,
//! `fuzz_seeds.json`, the import and OOM test corpora, every export of the seed plans); Unicode of every width,
//! combining marks, right-to-left text, long lines, and inputs of about 1 MiB with a multi-byte character across the
//! limit. Each entry point has its own random stream (seed + its index), so its inputs do not depend on the others'
//! timing. Each input is timed (its thread's CPU time, and wall time), and its heap peak measured by a counting
//! allocator. Panicking inputs (the first five
//! per entry point) and each entry point's slowest input are written to `target/fuzz/`.

mod plans;
mod targets;
mod text;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};
use targets::{Corpus, Kind};

/// The system allocator, counting the bytes live and their peak since the last reset.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            PEAK.fetch_max(LIVE.fetch_add(layout.size(), Relaxed) + layout.size(), Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                PEAK.fetch_max(LIVE.fetch_add(grow, Relaxed) + grow, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

thread_local! {
    static CURRENT: RefCell<String> = const { RefCell::new(String::new()) };
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The bound every input is held to.
const SECOND: Duration = Duration::from_secs(1);
const MEMORY: usize = 256 << 20;

/// This thread's CPU time: what an input costs, whatever else the machine runs (its wall time is kept too).
fn cpu_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is handed.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// What one entry point did.
struct Tally {
    kind: Kind,
    rng: plans::Rng,
    runs: u64,
    read: u64,
    panics: u64,
    /// Inputs over 1 s of CPU time, and over 1 s of wall time.
    over_one_second: u64,
    over_one_second_wall: u64,
    over_memory: u64,
    /// CPU time spent, and the slowest input by CPU time (its wall time beside it).
    spent: Duration,
    slowest: (Duration, Duration, String),
    heap_peak: (usize, usize),
}

impl Tally {
    /// Runs one input: times it, measures its heap peak over what was live before, catches a panic.
    fn run_one(&mut self, corpus: &Corpus, dir: &Path) {
        let text = targets::input(self.kind, &mut self.rng, corpus);
        let pick = self.rng.next();
        CURRENT.with(|c| c.replace(text.clone()));
        let base = LIVE.load(Relaxed);
        PEAK.store(base, Relaxed);
        let (start, cpu) = (Instant::now(), cpu_now());
        let out = catch_unwind(AssertUnwindSafe(|| targets::run(self.kind, &text, pick, corpus)));
        let (took, wall) = (cpu_now().saturating_sub(cpu), start.elapsed());
        let heap = PEAK.load(Relaxed).saturating_sub(base);
        self.runs += 1;
        self.spent += took;
        self.read += u64::from(out.as_ref().is_ok_and(|&r| r));
        self.over_one_second += u64::from(took > SECOND);
        self.over_one_second_wall += u64::from(wall > SECOND);
        self.over_memory += u64::from(heap > MEMORY);
        if took > self.slowest.0 {
            self.slowest = (took, wall, text.clone());
        }
        if heap > self.heap_peak.0 {
            self.heap_peak = (heap, text.len());
        }
        if out.is_err() {
            self.panics += 1;
            let message = PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default();
            if self.panics <= 5 {
                let path = dir.join(format!("{}-panic-{}.txt", slug(self.kind), self.panics));
                let _ = std::fs::write(&path, &text);
                eprintln!("PANIC in {} ({message}); input saved to {}", self.kind.name(), path.display());
            }
        }
    }
}

fn slug(kind: Kind) -> String {
    kind.name().chars().take_while(|c| *c != '(').map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect::<String>().trim_matches('-').to_string()
}

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The figures as docs/fuzzing.md's table.
fn table(tallies: &[Tally], elapsed: Duration) -> String {
    let mut s = String::from(
        "| entry point | inputs | read | panics | over 1 s CPU (wall) | over 256 MB | slowest, CPU (wall) | largest heap peak |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for t in tallies {
        s += &format!(
            "| {} | {} | {} | {} | {} ({}) | {} | {:.1} ms ({:.1} ms), {} bytes | {:.1} MB ({} bytes of input) |\n",
            t.kind.name(), t.runs, t.read, t.panics, t.over_one_second, t.over_one_second_wall, t.over_memory,
            t.slowest.0.as_secs_f64() * 1e3, t.slowest.1.as_secs_f64() * 1e3, t.slowest.2.len(), t.heap_peak.0 as f64 / 1e6, t.heap_peak.1
        );
    }
    s + &format!("\n{:.0} s elapsed; peak RSS {} KB\n", elapsed.as_secs_f64(), peak_rss_kb().map_or("?".into(), |k| k.to_string()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let number = |name: &str| flag(name).and_then(|v| v.parse::<u64>().ok());
    let inputs = args.first().and_then(|a| a.parse::<u64>().ok()).unwrap_or(10_000);
    let budget = number("--seconds").map_or(Duration::MAX, Duration::from_secs);
    let seed = number("--seed").unwrap_or(1);
    let only = flag("--only").cloned().unwrap_or_default();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz");
    let _ = std::fs::create_dir_all(&dir);
    let abort_path = dir.join("abort-input.txt");
    std::panic::set_hook(Box::new(move |info| {
        // Under panic = abort nothing returns from here: keep the input that did it.
        CURRENT.with(|c| drop(std::fs::write(&abort_path, c.borrow().as_bytes())));
        PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
    }));
    let corpus = Corpus::load();
    let mut tallies: Vec<Tally> = Kind::all()
        .into_iter()
        .enumerate()
        .filter(|(_, k)| k.name().contains(&only))
        .map(|(i, kind)| Tally {
            kind,
            rng: plans::Rng(seed.wrapping_mul(0x100).wrapping_add(i as u64)),
            runs: 0, read: 0, panics: 0, over_one_second: 0, over_one_second_wall: 0, over_memory: 0,
            spent: Duration::ZERO, slowest: (Duration::ZERO, Duration::ZERO, String::new()), heap_peak: (0, 0),
        })
        .collect();
    println!("fuzz: up to {inputs} inputs for each of {} entry points (seed {seed}); {} plan, {} import and {} OOM seeds",
        tallies.len(), corpus.plans.len(), corpus.imports.len(), corpus.ooms.len());
    let start = Instant::now();
    let mut report_at = Duration::from_secs(60);
    // The entry point that has had the least CPU time goes next, until each has run `inputs` or the time is up.
    while let Some(t) = tallies.iter_mut().filter(|t| t.runs < inputs).min_by_key(|t| t.spent) {
        if start.elapsed() > budget {
            break;
        }
        t.run_one(&corpus, &dir);
        if start.elapsed() > report_at {
            println!("{}", table(&tallies, start.elapsed()));
            report_at += Duration::from_secs(300);
        }
    }
    for t in &tallies {
        let _ = std::fs::write(dir.join(format!("slowest-{}.txt", slug(t.kind))), &t.slowest.2);
    }
    println!("final:\n{}", table(&tallies, start.elapsed()));
}
