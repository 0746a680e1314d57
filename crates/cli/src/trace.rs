//! The commands that trace a run back to its configuration: `import`, `diff`, `oom`, `schedule`. Printing only: the
//! core computes everything.

use crate::{Format, Input, emit, print_json, read_input, unreadable};
use meshplan_core::imports::{self, ImportOptions};
use std::process::ExitCode;

pub fn cmd_import(input: &Input, from: Option<&str>, model: Option<String>, gpu: Option<String>, format: Format) -> ExitCode {
    let text = match read_input(&input.file) {
        Ok(t) => t,
        Err(e) => return unreadable(e),
    };
    let opts = ImportOptions { from: from.and_then(imports::Format::from_key), model, gpu };
    let (imported, plan, diags) = match imports::import_plan(&text, &opts) {
        Ok(r) => r,
        Err(e) => return unreadable(e),
    };
    let plan_file = meshplan_core::export::plan_json(&plan);
    match format {
        Format::Json => {
            let plan_value: serde_json::Value = serde_json::from_str(&plan_file).unwrap_or_default();
            print_json(&serde_json::json!({
                "format": imported.format,
                "plan": plan_value,
                "unrecognized": imported.unrecognized,
                "notes": imported.notes,
                "diagnostics": diags,
            }));
        }
        Format::Table => {
            emit(&plan_file);
            eprintln!("meshplan import: read as {}", imported.format.key());
            for n in &imported.notes {
                eprintln!("meshplan import: note: {n}");
            }
            for d in &diags {
                eprintln!("meshplan import: {}[{}]: {}", format!("{:?}", d.severity).to_lowercase(), d.code.as_str(), d.message);
            }
            if !imported.unrecognized.is_empty() {
                eprintln!("meshplan import: {} settings not read:", imported.unrecognized.len());
                for u in &imported.unrecognized {
                    eprintln!("  {} = {} ({})", u.name, u.value, u.why);
                }
            }
        }
    }
    ExitCode::SUCCESS
}
