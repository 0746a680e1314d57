//! Hostile launch texts answer, quickly, with a diagnostic or a plan: a 1 MiB script, 40,000 `export` lines and
//! 10^5 variables (issue 20: names were searched in a list, so these were quadratic), deep `if` nesting, 10^5 nested
//! arithmetic parentheses, an unterminated quote, binary garbage. Each case runs in its own thread with a timeout well
//! above what it costs now and below what it cost before (debug builds, one core of a shared 2-core machine: 40,000
//! `export` lines 38 s on main at 1834a18, 1.5 s now; 10^5 variables 110 s before, 2.5 s now), so the quadratic
//! reading fails the test instead of hanging it.

use meshplan_core::imports::{self, ImportOptions};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// The debug-build budget of one import (see the module doc for what the cases cost before and now).
const TIMEOUT: Duration = Duration::from_secs(15);

/// Imports `text` in its own thread: Ok(notes) or Err(the input error's code), failing on a panic or a timeout.
fn answers(what: &str, text: String) -> Result<Vec<String>, String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let opts = ImportOptions::default();
        let r = imports::import_plan(&text, &opts).map(|(i, _, _)| i.notes).map_err(|e| format!("{e}"));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: no answer within {TIMEOUT:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

const RUN: &str = "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --vocab-size 32000";

#[test]
fn forty_thousand_exports_are_read_in_linear_time() {
    // ~700 KB, as issue 20's 777 KB script.
    let mut text: String = (0..40_000u32).map(|i| format!("export V{i}=v{i}\n")).collect();
    text.push_str(&format!("{RUN} --tensor-model-parallel-size $((V0_N + 2))\n"));
    text = text.replace("V0_N", "0");
    assert!(text.len() < 1 << 20);
    let notes = answers("40,000 exports", text).expect("read");
    // `$((0 + 2))` = 2 was read after all the exports.
    assert!(notes.iter().all(|n| !n.contains("not evaluated")), "{notes:?}");
}

#[test]
fn a_hundred_thousand_variables_answer() {
    let mut text: String = (0..100_000).map(|i| format!("V{i}={i}\n")).collect();
    text.truncate((1 << 20) - 200);
    text.push_str(&format!("\n{RUN}\n"));
    answers("10^5 variables", text).expect("read");
}

#[test]
fn more_than_a_mebibyte_is_an_input_error() {
    let text = format!("{RUN} {}", "x".repeat(1 << 20));
    let e = answers("1 MiB + script", text).unwrap_err();
    assert!(e.contains("plan-too-large"), "{e}");
}

#[test]
fn deep_nesting_unterminated_quotes_and_garbage_answer() {
    let deep = format!("X=1\n{}{RUN}\n{}", "if [ $X = 1 ]; then\n".repeat(40_000), "fi\n".repeat(40_000));
    answers("40,000 nested ifs", deep).expect("read");
    let arith = format!("A=$(({}1{}))\n{RUN} --pipeline-model-parallel-size $A\n", "(".repeat(100_000), ")".repeat(100_000));
    let notes = answers("10^5 nested parentheses", arith).expect("read");
    assert!(notes.iter().any(|n| n.contains("not evaluated")), "{notes:?}");
    answers("an unterminated quote", format!("{RUN} \"--x {}", "y ".repeat(200_000))).expect("read");
    answers("an unterminated $(", format!("{RUN} $(( {}", "1 + ".repeat(200_000))).expect("read");
    // Bytes of every value, as text (lossy): no model in it, so an input error that says so.
    let garbage: String = String::from_utf8_lossy(&(0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<u8>>()).into_owned();
    let garbage: String = garbage.chars().take(300_000).collect();
    let e = answers("binary garbage", garbage).unwrap_err();
    assert!(e.contains("import-no-model") || e.contains("plan-too-large"), "{e}");
}

/// Found by the fuzzer (issue 20, docs/fuzzing.md): 50,000 `${` opened one inside the other and never closed, on one
/// 100 KB line. Each `${` looked for its closing brace to the end of the line, so the line cost 50,000 scans of up to
/// 100 KB: 3.6 s of CPU on the release build (fuzz profile), far more in a debug one. Now one pass pairs the braces.
#[test]
fn fifty_thousand_unclosed_braces_answer() {
    let text = format!("{RUN} --tensor-model-parallel-size ${}\n", "${".repeat(50_000));
    answers("50,000 unclosed ${", text).expect("read");
    // The same, closed: each `${` is an expansion inside the one before, deeper than the reader evaluates.
    let closed = format!("{RUN} --tensor-model-parallel-size {}X{}\n", "${A:-".repeat(50_000), "}".repeat(50_000));
    answers("50,000 nested ${A:-", closed).expect("read");
}

/// Arithmetic expansions nested inside one another, `$(( $(( … )) ))`, 30,000 deep: each level was expanded
/// recursively with no bound on the depth (a stack overflow aborts the process, the page's tools module with it).
#[test]
fn thirty_thousand_nested_arithmetic_expansions_answer() {
    let text = format!("A={}1{}\n{RUN} --pipeline-model-parallel-size $A\n", "$((1 + ".repeat(30_000), "))".repeat(30_000));
    answers("30,000 nested $((", text).expect("read");
}

/// A NeMo 2 script of ~1 MiB whose recipe call passes 600 names (within the 8 KiB of a call read): each name is a pass
/// over the text, so only the first few are looked up (the rest listed as not evaluated), and the import answers.
#[test]
fn a_recipe_call_naming_six_hundred_variables_answers() {
    let mut text: String = (0..60_000u32).map(|i| format!("v{i} = {i}\n")).collect();
    text.truncate((1 << 20) - 16 * 1024);
    text.push_str("recipe = llm.llama3_8b.pretrain_recipe(");
    text.extend((0..600u32).map(|i| format!("a{i}=v{i},")));
    text.push_str(")\n");
    assert!(text.len() < 1 << 20);
    let notes = answers("a recipe call naming 600 variables", text).expect("read");
    // The first names were read off the script's assignments.
    assert!(notes.iter().any(|n| n == "a0: 0, from `v0 = 0` in the script"), "{notes:?}");
}

/// A mebibyte of launchers: 60,000 `srun`/`mpirun` lines each with options it drops (one note each, bounded in
/// number), and a Kubernetes manifest whose `…ReplicaSpecs:` keys nest in a staircase (a key inside replica specs
/// already scanned is not scanned again). Both answer within the budget.
#[test]
fn a_mebibyte_of_launchers_and_nested_replica_specs_answers() {
    let mut text: String = (0..60_000u32).map(|i| format!("srun -x n{i} -N 1 mpirun --mca a b -np 8 true\n")).collect();
    text.truncate((1 << 20) - 256);
    text.push_str(&format!("\n{RUN}\n"));
    // A plan or an input error (the words past the reader's bound are not read): an answer, not a hang.
    let _ = answers("60,000 launcher lines", text);
    let mut manifest = String::from("apiVersion: v1\nkind: PyTorchJob\n");
    let mut depth = 0usize;
    while manifest.len() < (1 << 20) - 4096 {
        manifest.push_str(&format!("{}xReplicaSpecs:\n", " ".repeat(depth % 4000)));
        depth += 1;
    }
    manifest.push_str(&format!("command: [\"{}\"]\n", RUN.replace(' ', "\", \"")));
    let _ = answers("a staircase of replica specs", manifest);
}

/// An AutoBridge script of ~1 MiB setting 40,000 provider attributes from names: each name is a pass over the text,
/// so only the first few are looked up (the rest listed as not evaluated), and the import answers.
#[test]
fn forty_thousand_provider_attributes_from_names_answer() {
    let mut text = String::from("bridge = AutoBridge.from_hf_pretrained(\"meta-llama/Llama-3.1-8B\")\nprovider = bridge.to_megatron_provider()\n");
    for i in 0..40_000u32 {
        text.push_str(&format!("provider.tensor_model_parallel_size = v{i}\n"));
    }
    text.truncate((1 << 20) - 64);
    assert!(text.len() < 1 << 20);
    let _ = answers("40,000 provider attributes", text);
}
