//! `import`, `diff`, `oom`, `schedule` as a user drives them: exit statuses, the JSON shapes, what goes to stderr.

mod common;
use common::run;
use serde_json::Value;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/llama-3.1-70b.json");

#[test]
fn an_export_imports_back_as_the_plan() {
    let (code, flags, _) = run(&["export", EXAMPLE, "--kind", "megatron-lm"], None);
    assert_eq!(code, 0);
    let (code, plan, err) = run(&["import", "-"], Some(&flags));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&plan).expect("a plan file");
    assert_eq!(v["model"]["preset"], "llama-3.1-70b");
    assert_eq!(v["parallelism"]["tensor_model_parallel_size"], 8);
    assert_eq!(v["parallelism"]["virtual_pipeline_model_parallel_size"], 5);
    assert!(err.contains("read as megatron-args") && !err.contains("settings not read"), "{err}");
    // The plan it prints plans.
    let (code, _, _) = run(&["plan", "-"], Some(&plan));
    assert_eq!(code, 0);
}

#[test]
fn import_lists_what_it_did_not_read_and_refuses_an_input_without_a_model() {
    let (code, out, err) = run(&["import", "-", "--format", "json"], Some("pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --lr 3e-4 --bf16"));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "megatron-args");
    assert_eq!(v["unrecognized"][0]["name"], "--lr");
    assert_eq!(v["plan"]["training"]["precision"], "bf16");
    // A value the plan cannot take is an error: the plan file is still printed, with exit status 1 (it was 0).
    let (code, out, err) = run(&["import", "-"], Some("pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --tensor-model-parallel-size abc"));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("invalid-value") && out.contains("\"model\""), "{err}");
    let (code, _, err) = run(&["import", "-", "--from", "bridge-overrides"], Some("train.global_batch_size=8"));
    assert_eq!(code, 2);
    assert!(err.contains("import-no-model") && err.contains("--model"), "{err}");
}

#[test]
fn diff_of_a_plan_with_itself_and_with_an_invalid_one() {
    let (code, out, _) = run(&["diff", EXAMPLE, EXAMPLE, "--format", "json"], None);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    for key in ["settings", "stages", "step_time", "findings_added", "findings_removed", "crossings"] {
        assert!(v[key].is_array(), "{key}");
    }
    assert_eq!(v["settings"].as_array().unwrap().len(), 0);
    let text = std::fs::read_to_string(EXAMPLE).unwrap().replace("\"tensor_model_parallel_size\": 8", "\"tensor_model_parallel_size\": 2");
    let (code, out, _) = run(&["diff", EXAMPLE, "-"], Some(&text));
    assert_eq!(code, 1, "B runs out of memory: exit 1");
    assert!(out.contains("parallelism.tensor_model_parallel_size") && out.contains("out-of-memory"), "{out}");
}

#[test]
fn oom_explains_a_message_and_refuses_text_without_one() {
    let msg = "[rank35]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.00 GiB is free. Of the allocated memory 67.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.";
    let (code, out, err) = run(&["oom", EXAMPLE, "-", "--format", "json"], Some(msg));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["rank"].as_u64(), v["pipeline_stage"].as_u64(), v["cause"].as_str()), (Some(35), Some(2), Some("overrun")));
    assert!(!v["fixes"].as_array().unwrap().is_empty());
    let (code, _, err) = run(&["oom", EXAMPLE, "-"], Some("NCCL error: unhandled system error"));
    assert_eq!(code, 2);
    assert!(err.contains("no CUDA out-of-memory message"), "{err}");
}

/// A thread's paste is the run's log — the arguments Megatron-LM printed at start-up, then the out-of-memory — or its
/// launch script beside the message: `meshplan oom LOG` reads the plan from the log itself, and PLAN may be any
/// artefact `meshplan import` reads (before: "the plan is not valid JSON"). By hand: 80 layers, TP 8 · PP 4 on
/// world_size 64 (DP 2); order tp-cp-ep-dp-pp puts rank 35 at tp 3, dp 0, pp 35 / 16 = 2. Log written here.
#[test]
fn oom_reads_the_plan_from_a_log_or_a_launch_script() {
    let args = "------------------------ arguments ------------------------\n  global_batch_size ............................... 128\n  hidden_size ..................................... 8192\n  micro_batch_size ................................ 1\n  num_attention_heads ............................. 64\n  num_layers ...................................... 80\n  pipeline_model_parallel_size .................... 4\n  seq_length ...................................... 4096\n  tensor_model_parallel_size ...................... 8\n  vocab_size ...................................... 32000\n  world_size ...................................... 64\n-------------------- end of arguments ---------------------\n";
    let msg = "[rank35]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.00 GiB is free. Of the allocated memory 67.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.\n";
    let log = format!("{args}> building GPT model ...\n{msg}");
    let (code, out, err) = run(&["oom", "-", "--format", "json"], Some(&log));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["rank"].as_u64(), v["pipeline_stage"].as_u64()), (Some(35), Some(2)));
    assert!(err.contains("the plan is read from PLAN as megatron-args"), "{err}");

    let script = "torchrun --nproc_per_node 8 --nnodes 8 pretrain_gpt.py --num-layers 80 --hidden-size 8192 --num-attention-heads 64 --seq-length 4096 --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --vocab-size 32000 --bf16\n";
    let dir = std::env::temp_dir().join(format!("meshplan-oom-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("train.sh");
    std::fs::write(&path, script).unwrap();
    let (code, out, err) = run(&["oom", path.to_str().unwrap(), "-", "--format", "json"], Some(msg));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["rank"].as_u64(), v["pipeline_stage"].as_u64()), (Some(35), Some(2)));
    // The log names no GPU: the message's device (39.39 GiB) is an A100 40GB's memory, taken for the plan.
    let small = log.replace("79.11 GiB of which 1.00", "39.39 GiB of which 1.00").replace("67.00 GiB is allocated", "37.00 GiB is allocated");
    let (code, out, err) = run(&["oom", "-", "--format", "json"], Some(&small));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("the memory of the a100-sxm-40gb, taken"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["capacity_bytes"].as_u64(), Some((39.39 * (1u64 << 30) as f64).round() as u64));
    // `meshplan import` of a log longer than an import reads: its printed arguments.
    let long = format!("{args}{}{msg}", " [2026-01-01 10:00:00] iteration        0/     100 | training ...\n".repeat(20_000));
    assert!(long.len() > 1 << 20);
    let (code, out, err) = run(&["import", "-"], Some(&long));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["parallelism"]["tensor_model_parallel_size"], 8);
    // A plan file is read as before, silently.
    let (code, _, err) = run(&["oom", EXAMPLE, "-"], Some(msg));
    assert_eq!(code, 0);
    assert!(!err.contains("read from PLAN"), "{err}");
}

/// The page's "Explain an OOM" renders the core's `oom::explain_all`, one explanation per failing rank; `meshplan oom
/// --format json` prints the same explanations (the first at the top level, the others in `other_ranks`): for a log
/// with two failing ranks (`[rank5]:` on stage 0, `[rank53]:` on stage 3 of the README plan) they agree value for value.
#[test]
fn oom_cli_and_page_agree_rank_by_rank() {
    let m = |r: u64, req: &str| format!("[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 5 has a total capacity of 79.11 GiB of which 0.10 GiB is free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 0.05 GiB is reserved by PyTorch but unallocated.\n");
    let log = m(5, "2.00 GiB") + &m(53, "252.00 MiB");
    let (code, out, err) = run(&["oom", EXAMPLE, "-", "--format", "json"], Some(&log));
    assert_eq!(code, 0, "{err}");
    let cli: Value = serde_json::from_str(&out).unwrap();
    let plan: Value = serde_json::from_str(&std::fs::read_to_string(EXAMPLE).unwrap()).unwrap();
    let report = meshplan_core::plan_value(&plan).unwrap();
    let page = meshplan_core::oom::explain_all(&plan, &report, &log, None).unwrap();
    assert_eq!(page.len(), 2);
    let mut first = cli.clone();
    let others = first.as_object_mut().unwrap().remove("other_ranks").unwrap();
    // Compared through JSON text (floats printed the same way on both sides).
    let text = |v: &Value| serde_json::to_string(v).unwrap();
    assert_eq!(text(&first), text(&serde_json::to_value(&page[0]).unwrap()));
    assert_eq!(text(&others), text(&serde_json::to_value(&page[1..]).unwrap()));
    assert_eq!((cli["pipeline_stage"].as_u64(), others[0]["pipeline_stage"].as_u64()), (Some(0), Some(3)));
    // The table names each rank.
    let (_, table, _) = run(&["oom", EXAMPLE, "-"], Some(&log));
    assert!(table.contains("Failing rank 5 (") && table.contains("Failing rank 53 ("), "{table}");
}

#[test]
fn schedule_draws_every_stage() {
    let (code, out, _) = run(&["schedule", EXAMPLE, "--width", "40"], None);
    assert_eq!(code, 0);
    assert!(out.starts_with("interleaved schedule · PP 4 · VPP 5 · 256 microbatches"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("  pp ")).count(), 4);
}

/// PP 4 → 8 without VPP on the README plan's 64 GPUs: 80 layers, 20 a stage → 10 a stage; B's stage 1 (layers 10–19)
/// is set beside A's stage 0 (layers 0–19), and the JSON carries the pairs and the layer ranges.
#[test]
fn diff_pairs_stages_by_the_layers_they_hold() {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let a = text.replace("\"virtual_pipeline_model_parallel_size\": 5", "\"virtual_pipeline_model_parallel_size\": null");
    let b = a.replace("\"pipeline_model_parallel_size\": 4", "\"pipeline_model_parallel_size\": 8");
    let dir = std::env::temp_dir().join(format!("meshplan-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pa = dir.join("a.json");
    std::fs::write(&pa, &a).unwrap();
    let (code, out, err) = run(&["diff", pa.to_str().unwrap(), "-"], Some(&b));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stage 0 (layers 0–19) → stage 1 (layers 10–19)"), "{out}");
    assert!(out.contains("stage 3 (layers 60–79) → stage 7 (layers 70–79)"), "{out}");
    let (_, out, _) = run(&["diff", pa.to_str().unwrap(), "-", "--format", "json"], Some(&b));
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["stages_by_layers"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    assert_eq!((rows[1]["a_pipeline_rank"].as_u64(), rows[1]["b_pipeline_rank"].as_u64()), (Some(0), Some(1)));
    assert_eq!(rows[1]["b_layers"], serde_json::json!([[10, 20]]));
    assert_eq!(v["peak_stages"]["paired_by"], "peak");
    std::fs::remove_dir_all(&dir).ok();
}

/// `meshplan oom` takes `--model` and `--gpu` as `meshplan import` does, for a launch artefact that names neither
/// (ms-swift #6387's construct: a run named only by a checkpoint path meshplan cannot read, on H20s, with a message
/// that carries no capacity). Before: the import's "names no model" error, whose fix named `meshplan import --model`,
/// and no way to give the GPU. Script written here.
#[test]
fn oom_takes_the_model_and_gpu_an_artefact_leaves_out() {
    let script = "NPROC_PER_NODE=8 megatron sft --load /ckpt/run-17 --tensor_model_parallel_size 2 --micro_batch_size 1 --global_batch_size 16 --max_length 2048\n";
    let msg = "[rank3]: RuntimeError: CUDA error: out of memory\n";
    let dir = std::env::temp_dir().join(format!("meshplan-oom-opts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sft.sh");
    std::fs::write(&path, script).unwrap();
    let p = path.to_str().unwrap();
    let (code, _, err) = run(&["oom", p, "-"], Some(msg));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names no model"), "{err}");
    let (code, out, err) = run(&["oom", p, "-", "--model", "qwen2.5-7b", "--gpu", "h20", "--format", "json"], Some(msg));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // H20: 96 GB of memory (the catalogue's), the capacity the verdict used.
    assert_eq!(v["capacity_bytes"].as_u64(), Some(96 * (1u64 << 30)), "{err}");
    assert!(err.contains("qwen2.5-7b"), "{err}");
}
