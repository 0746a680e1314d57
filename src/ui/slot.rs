//! The slots the page renders for the tools' panels (`<div id=… class="tools-slot">`): the page names them, the tools
//! module ([`crate::tools`]) mounts its panels into them. They live here, below both, so that neither imports the other.

pub const IMPORT: &str = "tools-import";
pub const COMPARE: &str = "tools-compare";
pub const ADVISOR: &str = "tools-advisor";
pub const EXPORTS: &str = "tools-exports";
pub const OOM: &str = "tools-oom";
pub const SCHEDULE: &str = "tools-schedule";
/// In the Model panel, below the presets: the Megatron Bridge recipe picker.
pub const RECIPE: &str = "tools-recipe";
/// In the Model panel, below its fields: the Hugging Face config.json box.
pub const HF_CONFIG: &str = "tools-hf-config";
/// In the Training panel, below its fields: the "Advanced memory" section.
pub const ADVANCED: &str = "tools-advanced";
/// In the Memory panel, below the stage chart's legend: the figures per stage and every term of a stage.
pub const MEMORY_DETAILS: &str = "tools-memory-details";
/// In the Memory panel, below the terms: the memory sweep.
pub const SWEEP: &str = "tools-sweep";
/// In the results column, below the derived sizes: the assumed settings and the tuned / Megatron-Core switch.
pub const ASSUMED: &str = "tools-assumed";
/// In the header's actions, after "Compare with…": the "Embed" action (the iframe snippet and its preview).
pub const EMBED: &str = "tools-embed";
