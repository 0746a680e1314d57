//! The sizes meshplan accepts, in one place. Every input answers within about a second and 256 MB: work that grows
//! with a size (pipeline stages, layers, ranks, list entries, text) runs only after that size has passed one of
//! these limits; a value beyond one is a diagnostic naming the value and the largest accepted.
//!
//! Each limit says why it is where it is. The costs quoted were measured on the release CLI
//! (`meshplan plan … --format json`, one core of a shared 2-core machine).
//!
//! This module is at the bottom of the core's module graph with `codes`: it imports nothing from the crate.

/// The largest plan file, hub config or share link text read, in bytes (1 MiB). Parsing JSON into values costs up to
/// ~32 bytes per byte of text (a list of one-digit numbers), so 1 MiB of text stays under ~64 MB. The largest honest
/// plan — an exported plan of a [`MAX_LAYERS`]-layer model with a per-layer `moe_layer_freq` list, pretty-printed — is
/// about 200 KB; Hugging Face `config.json` files are a few KB.
pub const MAX_PLAN_BYTES: usize = 1 << 20;

/// The longest log `meshplan oom` and "Explain an OOM" read (bytes; the rest is ignored): a training log around an
/// out-of-memory is often megabytes (per-iteration lines, NCCL's INFO lines). The scan is one pass per marker over the
/// text (`oom::message::scan`): tests/oom.rs measured 11 ms for a 1.5 MiB log of multi-byte lines and 51 ms for a
/// 17 MiB one cut here (debug build, one core), so the limit keeps the read far under the 1 s budget.
pub const MAX_OOM_LOG_BYTES: usize = 16 << 20;

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary: the one way text is
/// cut to a limit, so a multi-byte character (a progress bar's `█`, an ellipsis) straddling the limit is left out
/// whole instead of panicking ("byte index N is not a char boundary"). Constant time: it backs off at most 3 bytes.
pub fn prefix(text: &str, max_bytes: usize) -> &str {
    &text[..text.floor_char_boundary(max_bytes)]
}

/// The most GPUs a shared link may ask for (the page's `#plan=` and `base=`, and the plan it keeps): 2^16, as many as a
/// report lists rank groups for ([`MAX_LAYOUT_WORLD`]: ~0.4 s and ~45 MB natively, more in the browser); beyond it a
/// link is treated as hostile (the page itself still plans whatever is typed in).
pub const MAX_LINK_GPUS: u64 = 65_536;

/// The longest `plan=` parameter read, in characters (64 KiB of base64url, 48 KiB of JSON). The default plan's link
/// is ~560 characters; a plan with a pasted Qwen3.5-397B `config.json` (4 KB) ~6,000; browsers keep URLs of 2 MB.
pub const MAX_LINK_CHARS: usize = 64 * 1024;

/// Most values (numbers, strings, list entries, objects) a link's plan may hold; a plan with a pasted Hugging Face
/// config holds a few hundred (Qwen3.5-397B's: ~240).
pub const MAX_LINK_VALUES: usize = 4096;

/// Largest layer count a link may ask for (any `…layers` field), and most pipeline stages × virtual chunks: each
/// holds at least a layer, and published models have at most a few hundred (DeepSeek-V3: 61, Llama-3.1-405B: 126).
pub const MAX_LINK_LAYERS: u64 = 4096;

/// The longest string or key in a link's plan, in bytes: names and keys are short (the longest settings key is ~50
/// bytes; [`MAX_STRING_CHARS`] is what a plan may hold), and a link's strings are shown in the page.
pub const MAX_LINK_TEXT_BYTES: usize = 200;

/// The deepest nesting in a link's plan: a plan is sections of fields, a pasted config two levels more
/// (`model.hf_config.text_config.rope_scaling.…` is 5).
pub const MAX_LINK_DEPTH: usize = 8;

/// The largest number (in magnitude) a link's plan may hold: 2^53, beyond which JavaScript's numbers, and the page's
/// copy of the plan, are no longer exact.
pub const MAX_LINK_NUMBER: f64 = 9_007_199_254_740_992.0;

/// The most of an out-of-memory message read from its "Tried to allocate" (bytes; the log around it is read up to
/// [`MAX_OOM_LOG_BYTES`]; `oom::message`'s window): PyTorch's longest form, with the hint after it, is under 700
/// bytes, and the messages of `tests/data/oom` (PyTorch's numbers, the processes' use, its
/// `PYTORCH_CUDA_ALLOC_CONF` hint) are 179–637 bytes. The reader looks each number up with one `find` over the message,
/// so a log of one 1 MiB line costs ten finds over 4,000 bytes, not over the mebibyte. Cut on a character boundary ([`prefix`]).
pub const MAX_OOM_MESSAGE_BYTES: usize = 4000;

/// The most operations (forwards and backwards over all stages) a schedule lays out: 2^16 (e.g. PP 8 × VPP 4 × 1,024
/// microbatches; the README example has 10,240). Measured on the release CLI at 2^18: 1.5 s and 110 MB with 64 MB of
/// JSON, so a quarter of that stays within a second.
pub const MAX_SCHEDULE_OPS: u64 = 1 << 16;

/// The longest string field read (characters): GPU and preset keys, `order`, names. Megatron's longest rank order
/// (`tp-cp-ep-dp-pp`) has 14; names are shown in one line. Longer strings are an `invalid-value`.
pub const MAX_STRING_CHARS: usize = 256;

/// The largest integer any field accepts; keeps every product of a few fields inside u128 and f64.
pub const MAX_FIELD: u64 = 1 << 40;

/// Largest parallel size, GPU count per node, or node count accepted (2^24).
pub const MAX_PARALLEL: u64 = 1 << 24;

/// Most layers a model may have (2^14 = 16,384). Pipeline stages and virtual chunks are bounded by the layer count
/// (each builds at least one layer), and a report carries about 1 KB per stage, so this also bounds the per-stage
/// work: 16,384 stages cost ~0.1 s and ~40 MB. The deepest transformer trained is DeepNet's 1,000 layers
/// (Wang et al. 2022); published LLMs have at most ~130.
pub const MAX_LAYERS: u64 = 1 << 14;

/// The longest hybrid layer pattern read, in bytes (2^16): one symbol per layer ([`MAX_LAYERS`]), a `|` between any two,
/// and MTP depths after `/`. Parsing is linear in the length (runs of one symbol, segment lengths), ~1 ms at the limit.
pub const MAX_PATTERN_CHARS: usize = 1 << 16;

/// Most pipeline stages (PP·VPP) a `pipeline_model_parallel_layout` or a hybrid pattern's `|` segments may describe
/// (2^14 = 16,384, as many as [`MAX_LAYERS`]). Without a layout every stage builds at least one layer, so the layers
/// bound the stages; a layout may leave stages empty (`E||t|L`), so it needs a bound of its own. Each stage costs the
/// report about 1 KB, as for layers. Published layouts have at most 40 stages (Llama-3 70B on PP 8 × VPP 5).
pub const MAX_PIPELINE_STAGES: u64 = 1 << 14;

/// The longest `pipeline_model_parallel_layout` text read, in characters, and the longest it may grow to when its
/// `(…)*n` groups are unrolled (2^16 = 65,536). A layout written out in full for a [`MAX_LAYERS`]-layer model with a
/// stage per layer has 2·2^14 characters; Megatron Bridge's longest recipe layout (GLM-5.2 on PP 13 × VPP 2) has 106.
/// The repetition counts are read before anything is unrolled, so `t*999999999` costs no more than `t*9`.
pub const MAX_LAYOUT_CHARS: usize = 1 << 16;

/// Most routed experts a model may have (2^16 = 65,536; published models have at most 512). The search tries every
/// expert-parallel size that divides the expert count.
pub const MAX_EXPERTS: u64 = 1 << 16;

/// Most "unknown field" warnings one section reports before summing up the rest in one more; each looks for the
/// nearest known name, so a section of a million unknown keys would otherwise cost seconds.
pub const MAX_UNKNOWN_FIELDS_REPORTED: usize = 20;

/// The most distinct one-click fixes `remedy::ranked` re-plans (16): each is one full plan, so the ranking costs at
/// most 16 plans (a plan of 16,384 GPUs is about 3 ms in the page, docs/web.md: under 50 ms, off the input path). The
/// guide's DeepSeek-V3 layout on 1,024 H100 offers 4; a plan wrong in every field offers fewer than 16 applies.
pub const MAX_REMEDIES: usize = 16;

/// The largest world whose rank groups a report lists (2^16 = 65,536 GPUs, as many as a shared link may open). Every
/// group of nine kinds is materialised and sent whole: at 2^16 ranks that is ~0.4 s and ~45 MB (JSON ~18 MB); 2^17
/// took 0.87 s and 88 MB, and the former limit 2^21 7.4 s and 1.4 GB (600 MB of JSON).
pub const MAX_LAYOUT_WORLD: u64 = 1 << 16;

/// The largest world whose NVLink crossings a layout counts (2^24 GPUs, as many as the search lays out). Counting
/// walks each group kind's bases by residue class or by the domain boundaries they reach, the shorter, so below this
/// limit a kind costs at most ~2^23 steps; above it a hostile domain size defeats both walks (2^48 GPUs at PP 32
/// with domains of 2^32 − 5 ranks: over 30 s). Above it the layout keeps its order and lists no crossings, and the
/// report says so.
pub const MAX_CROSSING_WORLD: u64 = 1 << 24;

/// The largest world the layout search enumerates (2^24 GPUs): its divisor loops run to the world size.
pub const MAX_SEARCH_WORLD: u64 = 1 << 24;

/// The most work one layout search does, in units of one pipeline stage or virtual chunk of one candidate's memory
/// estimate, a candidate's rules counting [`CANDIDATE_WORK`] (10^8 ≈ 1 s). The search counts the units of every
/// candidate before sizing any; a larger space is an input error. Fitted on release builds (s: seconds measured):
/// DeepSeek-V3 on 16,384 H100 2.2·10^6 (0.02 s); 512 layers, 65,536 experts on 2^24 GPUs 1.0·10^8 (0.89 s);
/// 1,024 layers, 256 experts on 2^24 GPUs 1.1·10^8 (1.1 s); 64 layers, 55,440 experts on 8,648,640 GPUs
/// 3.0·10^8 (1.8 s); the same with 256 layers 9.2·10^8 (4.4 s).
pub const MAX_SEARCH_WORK: u64 = 100_000_000;

/// The most ranked candidates one search returns (`top`, from `meshplan search --top` or the JS API's
/// `search(input, top)`); a larger `top` is clamped to it, with a note in the result. Each pick is re-planned in full
/// and explained against another, outside [`MAX_SEARCH_WORK`]. Measured before the bound (`fuzz` profile, the shared
/// 2-core machine under load): Qwen3-30B-A3B on 20,160 H100, 92,654 valid layouts: top 5 1.9 s, 1,000 2.2 s, 10,000
/// 4.0 s, unbounded (44,667 distinct picks) 24.1 s; DeepSeek-V3 on 16,384 H100: 0.30, 0.25 and 1.5 s (7,764 picks).
/// A thousand picks cost ~0.1–0.3 s over five. The Advisor asks for 10.
pub const MAX_SEARCH_TOP: usize = 1000;

/// A candidate's rules and bookkeeping, in the units of [`MAX_SEARCH_WORK`] (≈ 0.3 µs against ≈ 7 ns per unit).
pub const CANDIDATE_WORK: u64 = 40;

/// The most work one cluster sizing (`crate::size`) does over all its GPU counts, in [`MAX_SEARCH_WORK`]'s units: one
/// search's budget. Each count's layout search runs within what is left; a first count over it is an input error, a
/// later one ends the sizing there (the result says where). The counts are few by construction ([`MAX_SIZE_COUNTS`]);
/// sizing DeepSeek-V3 on 16 … 2,048 nodes of 8 H100 (15 counts, global batch 8,192) costs 7.2·10^7 units — its time
/// is in docs/sizing.md.
pub const MAX_SIZE_WORK: u64 = MAX_SEARCH_WORK;

/// The most GPU counts one sizing tries: the powers of two and three times the powers of two between the node range's
/// ends, and the ends (from 1 to 2^24 nodes: 2·24 + 2 = 50).
pub const MAX_SIZE_COUNTS: usize = 50;

/// The largest cluster a sizing tries when no node range is given, in GPUs (2^16 = 65,536: the largest published
/// training clusters — Llama 3 405B on 16,384 H100, xAI's 100,000-GPU Colossus — are near it).
pub const DEFAULT_SIZE_GPUS: u64 = 1 << 16;

/// The most tokens, training steps, seconds of deadline and GPU-hours a sizing reads (10^18 tokens is ~60,000 times
/// Llama 3's 15.6T; 10^12 steps; a century; 10^12 GPU-hours): beyond them a value is an input error. They keep the
/// products of times, counts and rates finite and exact enough in f64.
pub const MAX_SIZE_TOKENS: f64 = 1e18;
pub const MAX_SIZE_STEPS: u64 = 1_000_000_000_000;
pub const MAX_SIZE_DEADLINE_S: f64 = 100.0 * 365.25 * 86_400.0;
pub const MAX_SIZE_GPU_HOURS: f64 = 1e12;

/// The most words one shell text yields to the readers (`imports::shell`): a long Megatron-LM launch script has ~300;
/// the text's own words are bounded by its length ([`MAX_PLAN_BYTES`]). Names are looked up in a map, so the reading
/// is linear: measured with the debug CLI (`meshplan import`, one core of a shared 2-core machine), 40,000
/// `export V=…` lines (680 KB) 1.5 s (38 s while names were searched in a list, issue 20; 3.2 s in release), 10^5
/// variables in 1 MiB 2.5 s (110 s before), 40,000 nested `if`s 0.1 s; `tests/import_limits.rs` holds each.
pub const MAX_SHELL_WORDS: usize = 100_000;

/// The most `${A:-${B:-…}}` defaults expanded inside one another; a deeper one stays as written. Scripts nest at
/// most two (Megatron Bridge's `RECIPE_NAME="${RECIPE_NAME:-${MODEL_NAME}_pretrain_config}"`).
pub const MAX_SHELL_DEFAULT_DEPTH: usize = 8;

/// The most bytes all expansions of one shell text may produce together (2 MiB, twice the largest text read): an
/// array that doubles itself each line stops here (40 doublings of one word would be 2^40 words); past it, `$NAME`
/// stays as written.
pub const MAX_SHELL_EXPANDED_BYTES: usize = 2 << 20;

/// The deepest `$(( … ))` expression evaluated (parentheses and operators nested): bash's own recursion limit is in
/// the thousands; launch scripts nest two or three. Deeper is "not evaluated" (listed with its line), so 10^5 nested
/// parentheses cost one linear scan.
pub const MAX_SHELL_ARITH_DEPTH: usize = 64;

/// The most settings an import lists one by one as not read (a Megatron-LM argument dump has ~600 arguments); past
/// it, one more entry counts the rest. Each new entry is checked against those listed (a command both echoed and run
/// lists each setting once), by a set, so the listing is linear.
pub const MAX_UNRECOGNIZED: usize = 2048;

/// The deepest YAML nesting read (`imports::yaml`); a Megatron Bridge ConfigContainer nests four deep. Deeper lines are
/// not read, so a 1 MiB staircase of indentation costs one pass.
pub const MAX_YAML_DEPTH: usize = 64;

/// The most failing ranks one OOM log explains (`oom::message`): a 1,024-GPU job that all fail prints 1,024 messages,
/// and the first ones name the stages; each kept message is re-planned once, so this bounds the explanation's work.
pub const MAX_OOM_MESSAGES: usize = 64;

/// The largest micro-batch an OOM request is taken to imply (`oom::culprit`): a larger one would be a batch, not a
/// micro-batch; the implied values tried are integers up to it, so it bounds that search.
pub const MAX_IMPLIED_MICRO_BATCH: u64 = 1024;

/// The most distinct layer kinds a model's table holds (`model::kinds`): 5 mixers × 3 feed-forward blocks (a model
/// declares at most 5 mixers: GPT attention, window attention and Gated DeltaNet; a pattern's; or DeepSeek-V4's three).
/// The table is a fixed array of this many rows, so a model with more is a diagnostic, not an allocation.
pub const MAX_LAYER_KINDS: usize = 15;

/// The most per-kind activation tables (`memory::ActivationMemo`: 1,088 B each at [`MAX_LAYER_KINDS`]) one layout search
/// keeps across its layouts, then it starts again: about 1.2 MB. Measured: the searches of DeepSeek-V3 on 16,384 H100,
/// Llama 3.1 405B / 70B, Mixtral 8x22B, Qwen3-235B, Nemotron-H 56B, Qwen3-30B-A3B, GLM-4.5-Air and Kimi K2 keep 256 to
/// 1,023 (the largest, DeepSeek-V3's, Qwen3's and Kimi's, over 512), so none starts again.
pub const MAX_KEPT_LAYERS: usize = 1024;

/// The most vision-projector linears a model lists (`model_fields::encoder`): Qwen3-VL has a merger and three
/// deepstack mergers of two linears each (8); a longer list is a diagnostic.
pub const MAX_PROJECTOR_LINEARS: usize = 16;

/// The most operations a stage's row of the page's schedule draws one by one (`src/panels/schedule.rs`,
/// `schedule::drawn`): 256 (128 microbatches at VPP 1) leave 5 px an operation on a 1,440 px page's 1,300 px axis and
/// 1.2 px at 390 px; a longer step is drawn with a break standing for its repeated steady state.
pub const MAX_DRAWN_SCHEDULE_OPS_PER_STAGE: u64 = 256;

/// The most characters of user text a message quotes (an unknown rank-order name, `layout::order`).
pub const MAX_QUOTED_CHARS: usize = 40;

/// The largest recipes file `recipes::install` reads (the page's run-time copy of `data/bridge_recipes.json`): 16 MiB,
/// about twenty times today's 0.8 MB file, so that it never refuses the real file; reading is linear in the text.
pub const MAX_RECIPES_FILE_BYTES: usize = 16 << 20;
