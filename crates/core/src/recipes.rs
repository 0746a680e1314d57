//! Megatron Bridge library and performance recipes as data: `data/bridge_recipes.json`, read statically from the Bridge source by
//! `scripts/extract-bridge-recipes.py` at the commit the file records. Each recipe names its model preset (found by the
//! Hugging Face id it builds its model from, `hf_model_id`; none when that model has no preset), the cluster its name
//! states, and its parallelism and training settings in plan keys (every settings-table row it sets, its
//! mixed-precision recipe's fields included); what the static reading could not know is listed under `unresolved`.
//! A plan naming a recipe whose model has no preset must give the model; without one it is a `missing-model` input
//! error naming the Hugging Face id and `model.hf_config`.
//!
//! A plan may name one at its top level (`"recipe": NAME`): [`resolve`] builds the plan the recipe implies and lays
//! the plan's own sections over it key by key, so anything the plan sets explicitly wins. An unknown name is an
//! `unknown-recipe` error (fix: the nearest name); a plan whose explicit model is not the recipe's gets
//! `recipe-model-differs`.
//!
//! The data is compiled in (feature `builtin-recipes`, on by default); a build without it (the page's first-render
//! module) has no recipe until [`install`] is given the same file's text, and says so ([`available`]).
//!
//! It imports `codes`, `diag`, `fields` (the nearest-name pick) and `presets` (the GPU catalogue's node size); `plan`
//! builds on it.

use crate::fields::{nearest, short};
use crate::{Code, Diagnostic, InputError, presets};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::sync::OnceLock;

/// What the static reading of a recipe could not resolve: the plan key, the Bridge path, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unresolved {
    pub field: String,
    pub path: String,
    pub reason: String,
}

/// A throughput Megatron Bridge's performance summary published for a performance recipe's exact configuration (the
/// release of the pinned commit): shown beside the prediction, never fitted to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Published {
    pub release: String,
    pub model_tflops_per_gpu: f64,
    pub tokens_per_s_per_gpu: f64,
    /// The table: file and section at the commit.
    pub source: String,
}

/// One Megatron Bridge recipe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recipe {
    /// The recipe function, importable as `from megatron.bridge.recipes import NAME`.
    pub name: String,
    /// The meshplan model preset key; empty when the recipe's model has no preset (then the plan must give the model:
    /// [`resolve`] says so, naming `hf_model_id`). Serialised as null then.
    #[serde(serialize_with = "preset_or_null")]
    pub model: String,
    /// The Hugging Face id the recipe builds its model from (`AutoBridge.from_hf_pretrained(ID)`), where it states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hf_model_id: Option<String>,
    /// "pretrain", "sft", "peft" (LoRA: its settings in `training`), or "perf" (a performance recipe of `src/megatron/bridge/perf_recipes`, named `perf.<function>`).
    pub kind: String,
    /// For a legacy alias: the recipe it names.
    pub alias_of: Option<String>,
    /// The recipe function in the Bridge source: file:line.
    pub source: String,
    /// meshplan's GPU key of the GPU the recipe's name states (None: the name states none).
    pub gpu: Option<String>,
    /// The GPU count the recipe's name states.
    pub gpus: Option<u64>,
    /// The Bridge mixed-precision recipe it uses, by name (None: a MixedPrecisionConfig built in the recipe).
    pub mixed_precision_recipe: Option<String>,
    /// Plan keys of `parallelism` and `training` the recipe sets.
    pub parallelism: Map<String, Value>,
    pub training: Map<String, Value>,
    pub unresolved: Vec<Unresolved>,
    /// What the performance summary measured for this recipe (performance recipes only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub published: Vec<Published>,
    /// One line: kind, cluster, layout and sequence, as the page and `meshplan presets` list it.
    pub description: String,
}

#[derive(Deserialize, Default, Clone)]
struct RawCluster {
    gpu: Option<String>,
    gpus: Option<u64>,
}

fn preset_or_null<S: serde::Serializer>(model: &str, s: S) -> Result<S::Ok, S::Error> {
    if model.is_empty() { s.serialize_none() } else { s.serialize_str(model) }
}

#[derive(Deserialize, Clone)]
struct RawRecipe {
    name: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    hf_model_id: Option<String>,
    /// Empty for a legacy alias written as its name, target and source only (filled from the target).
    #[serde(default)]
    kind: String,
    #[serde(default)]
    alias_of: Option<String>,
    source: String,
    #[serde(default)]
    cluster: RawCluster,
    #[serde(default)]
    mixed_precision_recipe: Option<String>,
    #[serde(default)]
    parallelism: Map<String, Value>,
    #[serde(default)]
    training: Map<String, Value>,
    #[serde(default)]
    unresolved: Vec<Unresolved>,
    #[serde(default)]
    published: Vec<Published>,
}

#[derive(Deserialize, Default)]
struct RecipesFile {
    source_repository: String,
    recipes: Vec<RawRecipe>,
}

impl RecipesFile {
    /// The recipes with each legacy alias that the file writes as its name, target and source only (no `kind`) given
    /// its target's reading: an alias runs its target's function.
    fn recipes(self) -> (String, Vec<Recipe>) {
        let targets: std::collections::HashMap<String, RawRecipe> =
            self.recipes.iter().filter(|r| r.alias_of.is_none()).map(|r| (r.name.clone(), r.clone())).collect();
        let recipes = self
            .recipes
            .into_iter()
            .map(|r| match (r.kind.is_empty(), r.alias_of.as_ref().and_then(|t| targets.get(t))) {
                (true, Some(t)) => RawRecipe { name: r.name, alias_of: r.alias_of, source: r.source, ..t.clone() },
                _ => r,
            })
            .map(Recipe::from_raw)
            .collect();
        (self.source_repository, recipes)
    }

    /// The file read by hand from a `Value`, as serde's derived reader reads it (tests/catalogue_read.rs checks they
    /// agree): the page then links no serde reader of the recipes. None: the file is unreadable.
    fn read(text: &str) -> Option<RecipesFile> {
        use crate::presets::read::*;
        let v: Value = serde_json::from_str(text).ok()?;
        let o = v.as_object()?;
        let map = |r: &Obj, k: &str| or_default(r, k, |v| v.as_object().cloned());
        let unresolved = |v: &Value| {
            v.as_array()?
                .iter()
                .map(|u| {
                    let u = u.as_object()?;
                    Some(Unresolved { field: string(u, "field")?, path: string(u, "path")?, reason: string(u, "reason")? })
                })
                .collect::<Option<Vec<_>>>()
        };
        let cluster = |v: &Value| {
            let c = v.as_object()?;
            Some(RawCluster { gpu: opt_string(c, "gpu")?, gpus: opt_u64(c, "gpus")? })
        };
        let published = |v: &Value| {
            v.as_array()?
                .iter()
                .map(|p| {
                    let p = p.as_object()?;
                    Some(Published {
                        release: string(p, "release")?,
                        model_tflops_per_gpu: f64(p, "model_tflops_per_gpu")?,
                        tokens_per_s_per_gpu: f64(p, "tokens_per_s_per_gpu")?,
                        source: string(p, "source")?,
                    })
                })
                .collect::<Option<Vec<_>>>()
        };
        let recipes = o.get("recipes")?.as_array()?.iter().map(|r| {
            let r = r.as_object()?;
            Some(RawRecipe {
                name: string(r, "name")?,
                model: string_or_empty(r, "model")?,
                hf_model_id: opt_string(r, "hf_model_id")?,
                kind: string_or_empty(r, "kind")?,
                alias_of: opt_string(r, "alias_of")?,
                source: string(r, "source")?,
                cluster: or_default(r, "cluster", cluster)?,
                mixed_precision_recipe: opt_string(r, "mixed_precision_recipe")?,
                parallelism: map(r, "parallelism")?,
                training: map(r, "training")?,
                unresolved: or_default(r, "unresolved", unresolved)?,
                published: or_default(r, "published", published)?,
            })
        });
        Some(RecipesFile { source_repository: string(o, "source_repository")?, recipes: recipes.collect::<Option<_>>()? })
    }
}

/// The recipes installed at run time (a build without `builtin-recipes`), or compiled in.
static FILE: OnceLock<(String, Vec<Recipe>)> = OnceLock::new();

fn read_file(text: &str) -> Option<(String, Vec<Recipe>)> {
    Some(RecipesFile::read(text)?.recipes())
}

#[cfg(feature = "builtin-recipes")]
fn file() -> &'static (String, Vec<Recipe>) {
    // The data file is checked by tests (tests/recipes.rs); a broken file yields no recipes, never a panic.
    FILE.get_or_init(|| read_file(include_str!(concat!(env!("OUT_DIR"), "/bridge_recipes.json"))).unwrap_or_default())
}

#[cfg(not(feature = "builtin-recipes"))]
fn file() -> &'static (String, Vec<Recipe>) {
    static NONE: (String, Vec<Recipe>) = (String::new(), Vec::new());
    FILE.get().unwrap_or(&NONE)
}

/// Whether the recipes are there: always with `builtin-recipes`, else once [`install`] has taken them.
pub fn available() -> bool {
    cfg!(feature = "builtin-recipes") || FILE.get().is_some()
}

/// Takes the recipes from `text`, the text of `data/bridge_recipes.json` (as written, or minified as the build
/// serves it), in a build without `builtin-recipes`; the first text read wins. Returns how many recipes there are
/// (0 for a text that is not the recipes file: nothing is installed). With the recipes compiled in, it only counts them.
pub fn install(text: &str) -> usize {
    if !available()
        && text.len() <= crate::limits::MAX_RECIPES_FILE_BYTES
        && let Some(f) = read_file(text).filter(|f| !f.1.is_empty())
    {
        let _ = FILE.set(f);
    }
    file().1.len()
}

/// Every recipe, in the data file's order (by name).
pub fn all() -> &'static [Recipe] {
    &file().1
}

/// `github:NVIDIA-NeMo/Megatron-Bridge@COMMIT`, the source the recipes were read from.
pub fn source_repository() -> &'static str {
    &file().0
}

/// The recipe named `name`, exactly.
pub fn find(name: &str) -> Option<&'static Recipe> {
    all().iter().find(|r| r.name == name)
}

impl Recipe {
    fn from_raw(r: RawRecipe) -> Recipe {
        let mut recipe = Recipe {
            name: r.name,
            model: r.model,
            hf_model_id: r.hf_model_id,
            kind: r.kind,
            alias_of: r.alias_of,
            source: r.source,
            gpu: r.cluster.gpu,
            gpus: r.cluster.gpus,
            mixed_precision_recipe: r.mixed_precision_recipe,
            parallelism: r.parallelism,
            training: r.training,
            unresolved: r.unresolved,
            published: r.published,
            description: String::new(),
        };
        recipe.description = recipe.describe();
        recipe
    }

    fn describe(&self) -> String {
        let int = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
        let mut sizes = Vec::new();
        for (label, key) in [
            ("TP", "tensor_model_parallel_size"),
            ("PP", "pipeline_model_parallel_size"),
            ("VPP", "virtual_pipeline_model_parallel_size"),
            ("CP", "context_parallel_size"),
            ("EP", "expert_model_parallel_size"),
        ] {
            if let Some(n) = int(&self.parallelism, key) {
                sizes.push(format!("{label}{n}"));
            }
        }
        let gpu = self.gpu.as_deref().and_then(presets::gpu).map(|g| g.name.as_str());
        let cluster = match (self.gpus, gpu) {
            (Some(n), Some(g)) => format!("{n} × {g}"),
            _ => "cluster not stated".into(),
        };
        let seq = int(&self.training, "seq_length").map_or(String::new(), |s| format!(" · seq {s}"));
        let precision = self.training.get("precision").and_then(Value::as_str).unwrap_or("bf16");
        let alias = self.alias_of.as_deref().map_or(String::new(), |a| format!(" · alias of {a}"));
        format!("{} · {cluster} · {}{seq} · {precision}{alias}", self.kind, sizes.join(" "))
    }

    /// The recipe as `meshplan explain NAME` prints it: source, cluster, and every plan key it sets.
    pub fn explain(&self) -> String {
        let mut out = format!("{} (Megatron Bridge recipe, {})\n\n", self.name, self.description);
        let alias = self.alias_of.as_deref().map_or(String::new(), |a| format!(", legacy alias of {a}"));
        out.push_str(&format!("Source:          {}{alias} in {}\n", self.source, source_repository()));
        match (self.preset(), self.hf_model_id.as_deref()) {
            (Some(p), _) => out.push_str(&format!("Model preset:    {p}\n")),
            (None, hf) => out.push_str(&format!("Model:           {} (no meshplan preset: give its config.json as model.hf_config)\n", hf.unwrap_or("built in the recipe"))),
        }
        out.push_str(&format!("Mixed precision: {}\n", self.mixed_precision_recipe.as_deref().unwrap_or("a MixedPrecisionConfig built in the recipe")));
        for (title, section) in [("parallelism", &self.parallelism), ("training", &self.training)] {
            out.push_str(&format!("\n{title}\n"));
            for (k, v) in section {
                let text = serde_json::to_string(v).unwrap_or_default();
                let text = if text.chars().count() > 100 { text.chars().take(100).collect::<String>() + "…" } else { text };
                out.push_str(&format!("  {k:<40} {text}\n"));
            }
        }
        if !self.unresolved.is_empty() {
            out.push_str("\nunresolved (meshplan's default is planned)\n");
            for u in &self.unresolved {
                out.push_str(&format!("  {:<40} {}: {}\n", u.field, u.path, u.reason));
            }
        }
        out.push_str(&format!("\nPlan it: {{\"recipe\": \"{}\"}} (the plan's own keys override the recipe's)\n", self.name));
        out
    }

    /// The model preset key, None when the recipe's model has no preset.
    pub fn preset(&self) -> Option<&str> {
        Some(self.model.as_str()).filter(|m| !m.is_empty())
    }

    /// The plan this recipe implies, as plan JSON: its model (when it is a preset), a cluster of the GPUs its name states (whole nodes of
    /// the catalogue's node size, or one node of fewer GPUs), its parallelism and training.
    pub fn plan_value(&self) -> Value {
        let mut plan = Map::new();
        if let Some(model) = self.preset() {
            plan.insert("model".into(), Value::from(model));
        }
        if let Some(gpu) = self.gpu.as_deref().and_then(presets::gpu) {
            let mut cluster = Map::new();
            cluster.insert("gpu".into(), Value::from(gpu.key.as_str()));
            if let Some(n) = self.gpus {
                let per_node = gpu.gpus_per_node.min(n).max(1);
                cluster.insert("gpus_per_node".into(), Value::from(per_node));
                cluster.insert("num_nodes".into(), Value::from(n.div_ceil(per_node)));
            }
            plan.insert("cluster".into(), Value::Object(cluster));
        }
        let mut training = self.training.clone();
        // Bridge's OptimizerConfig carries optimizer_offload_fraction = 0.0 with offloading off: nothing offloaded,
        // the same as leaving it unset (as the importers read it), not a setting to flag.
        let offloading = training.get("optimizer_cpu_offload") == Some(&Value::Bool(true));
        if !offloading && training.get("optimizer_offload_fraction").and_then(Value::as_f64) == Some(0.0) {
            training.remove("optimizer_offload_fraction");
        }
        plan.insert("training".into(), Value::Object(training));
        plan.insert("parallelism".into(), Value::Object(self.parallelism.clone()));
        Value::Object(plan)
    }
}

/// The plan a plan file describes once its `recipe` (if any) is applied, and that recipe. Sections the plan gives
/// are laid over the recipe's key by key (`cluster`, `training`, `parallelism`); a `model` the plan gives replaces
/// the recipe's. Without `recipe` the plan is returned as it is.
pub fn resolve<'v>(plan: &'v Value, diags: &mut Vec<Diagnostic>) -> Result<(Cow<'v, Value>, Option<&'static Recipe>), InputError> {
    let Some(given) = plan.get("recipe").filter(|v| !v.is_null()) else { return Ok((Cow::Borrowed(plan), None)) };
    let name = match given {
        Value::String(s) if s.chars().count() <= crate::limits::MAX_STRING_CHARS => s.as_str(),
        other => {
            diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`recipe` must be the name of a Megatron Bridge recipe (at most {} characters), found {}", crate::limits::MAX_STRING_CHARS, short(other)),
                "set `recipe` to a name from `meshplan presets` (ignored meanwhile)",
            ));
            return Ok((Cow::Borrowed(plan), None));
        }
    };
    if !available() {
        let shown: String = name.chars().take(80).collect();
        return Err(InputError::new(
            Code::RecipesLoading,
            format!("the plan names the Megatron Bridge recipe {shown:?}, and the recipes are not loaded yet"),
            "wait for the page to load bridge-recipes.json (served beside index.html); the plan is planned once it has (through the JS API: pass that file's text to installRecipes first)",
        ));
    }
    let Some(recipe) = find(name) else {
        let names: Vec<&str> = all().iter().map(|r| r.name.as_str()).collect();
        let shown: String = name.chars().take(80).collect();
        let near = nearest(name, &names);
        if plan.get("model").is_none_or(Value::is_null) {
            let fix = near.map_or("see `meshplan presets` for the recipes meshplan knows".into(), |n| format!("did you mean \"{n}\"?"));
            return Err(InputError::new(Code::MissingModel, format!("the plan has no `model`, and there is no Megatron Bridge recipe {shown:?} to take it from"), fix));
        }
        let mut d = Diagnostic::new(
            Code::UnknownRecipe,
            format!("there is no Megatron Bridge recipe {shown:?} among the {} meshplan knows; the plan was read without one", names.len()),
            match near {
                Some(n) => format!("did you mean \"{n}\"? (`meshplan presets` lists every recipe)"),
                None => "remove `recipe`, or pick one from `meshplan presets`".into(),
            },
        );
        if let Some(n) = near {
            d = d.with_apply("recipe", n);
        }
        diags.push(d);
        return Ok((Cow::Borrowed(plan), None));
    };
    let given_model = plan.get("model").filter(|m| !m.is_null());
    let Some(preset) = recipe.preset() else {
        // A recipe whose model has no preset: the plan's model is used, and without one there is nothing to plan.
        if given_model.is_none() {
            return Err(no_model(recipe));
        }
        unresolved_note(recipe, plan, diags);
        let mut merged = recipe.plan_value();
        overlay(&mut merged, plan);
        return Ok((Cow::Owned(merged), Some(recipe)));
    };
    if let Some(model) = given_model {
        let named = match model {
            Value::String(s) => Some(s.as_str()),
            Value::Object(m) => m.get("preset").and_then(Value::as_str),
            _ => None,
        };
        if named != Some(preset) {
            let what = named.map_or("a model of its own".to_string(), |n| format!("model {n:?}"));
            diags.push(
                Diagnostic::new(
                    Code::RecipeModelDiffers,
                    format!("the recipe {} trains {preset:?}, but the plan gives {what}: the plan's model is used, with the recipe's parallelism and settings", recipe.name),
                    format!("remove `model` to plan the recipe's own model, or set it to \"{preset}\""),
                )
                .with_apply("model", preset),
            );
        }
    }
    unresolved_note(recipe, plan, diags);
    let mut merged = recipe.plan_value();
    overlay(&mut merged, plan);
    Ok((Cow::Owned(merged), Some(recipe)))
}

/// The input error of a plan that names a recipe whose model has no preset and gives no `model`: what is missing, by
/// the Hugging Face id the recipe builds its model from.
fn no_model(recipe: &Recipe) -> InputError {
    let what = match recipe.hf_model_id.as_deref() {
        Some(hf) => format!("this recipe's model is {hf} (AutoBridge.from_hf_pretrained in {}), which has no meshplan preset", recipe.source),
        None => format!("this recipe builds its model in {} and it has no meshplan preset", recipe.source),
    };
    InputError::new(
        Code::MissingModel,
        format!("the plan names the Megatron Bridge recipe {} and gives no `model`: {what}", recipe.name),
        match recipe.hf_model_id.as_deref() {
            Some(hf) => format!("give {hf}'s config.json as model.hf_config ({{\"model\": {{\"hf_config\": {{…}}}}}}), or a preset key as `model`; the recipe's settings then apply"),
            None => "give the model's config.json as model.hf_config, or a preset key as `model`; the recipe's settings then apply".into(),
        },
    )
}

/// What the recipe sets that its data could not carry (listed under `unresolved`), unless the plan gives it: an info,
/// since the plan then runs meshplan's default there instead of the recipe's value.
fn unresolved_note(recipe: &Recipe, plan: &Value, diags: &mut Vec<Diagnostic>) {
    let given = |field: &str| ["cluster", "training", "parallelism"].iter().any(|s| plan.get(s).and_then(|v| v.get(field)).is_some())
        || plan.get(field).is_some();
    let open: Vec<&Unresolved> = recipe.unresolved.iter().filter(|u| !given(&u.field)).collect();
    if open.is_empty() {
        return;
    }
    let list = open.iter().map(|u| format!("{} ({}: {})", u.field, u.path, u.reason)).collect::<Vec<_>>().join("; ");
    let keys = open.iter().map(|u| u.field.as_str()).collect::<Vec<_>>().join(", ");
    diags.push(Diagnostic::new(
        Code::RecipeUnresolved,
        format!("the recipe {} sets what meshplan's recipe data could not carry, so meshplan's default is planned instead: {list}", recipe.name),
        format!("set {keys} in the plan to the value you run"),
    ));
}

/// The plan with its recipe written out: the recipe's model, cluster, parallelism and training with the plan's own
/// values laid over them as [`resolve`] lays them, and no `recipe` key — the same run, nothing left to the recipe (the
/// page's "no recipe" keeps what the recipe set). None when the plan names no recipe meshplan knows. A plan naming a
/// recipe plans Megatron-Core's plain defaults for what the recipe leaves out unless it asks for tuned ones
/// (`crate::tuned::plain`), so the written-out plan says `"defaults": "megatron-core"` where the plan says nothing.
pub fn expand(plan: &Value) -> Option<Value> {
    let recipe = plan.get("recipe").and_then(Value::as_str).and_then(find)?;
    let mut merged = recipe.plan_value();
    overlay(&mut merged, plan);
    let o = merged.as_object_mut()?;
    o.remove("recipe");
    // crate::tuned::DEFAULTS_KEY and PLAIN (tuned sits above this module).
    o.entry("defaults").or_insert_with(|| Value::from("megatron-core"));
    Some(merged)
}

/// Lays `plan` over `base`: objects key by key one level down (a section's keys), anything else replaced.
fn overlay(base: &mut Value, plan: &Value) {
    let (Some(base), Some(plan)) = (base.as_object_mut(), plan.as_object()) else { return };
    for (key, value) in plan {
        match (base.get_mut(key), value) {
            (Some(Value::Object(section)), Value::Object(given)) if key != "model" => {
                for (k, v) in given {
                    section.insert(k.clone(), v.clone());
                }
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The recipes as `meshplan presets --format json` lists them.
pub fn catalog() -> Value {
    json!({
        "source_repository": source_repository(),
        "recipes": all(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader behind `install` (the page's fetch and the JS API's installRecipes hand it any text): arbitrary
    /// Unicode, 1 MiB of it, deep nesting and a 1 MiB file of junk recipes give no recipes or some, never a panic.
    #[test]
    fn the_recipes_reader_takes_any_text() {
        use proptest::prelude::*;
        proptest!(ProptestConfig::with_cases(256), |(text in "\\PC{0,400}")| {
            let _ = read_file(&text);
        });
        let mut cases = vec!["é€𝄞\u{202e}".repeat(1 << 18), "[".repeat(1 << 20), String::new(), "{}".into()];
        // A file of the right shape whose entries are nonsense: every field missing or of the wrong type.
        let junk = format!(r#"{{"source_repository":"x","recipes":[{}]}}"#, vec![r#"{"name":7,"kind":[],"training":"no"}"#; 1 << 15].join(","));
        assert!(junk.len() > 1 << 20);
        cases.push(junk);
        for text in &cases {
            let _ = read_file(text);
        }
        assert!(read_file("[").is_none() && read_file("{}").is_none_or(|f| f.1.is_empty()));
    }

    /// The file read by hand (`RecipesFile::read`) is what serde's derived reader reads from the data file.
    #[cfg(feature = "builtin-recipes")]
    #[test]
    fn the_file_reads_as_serde_reads_it() {
        let text = include_str!("../data/bridge_recipes.json");
        let serde: RecipesFile = serde_json::from_str(text).unwrap();
        let (repo, recipes) = file();
        let (serde_repo, serde) = serde.recipes();
        assert_eq!(repo, &serde_repo);
        assert!(serde.len() > 100);
        assert_eq!(recipes, &serde);
        assert_eq!(format!("{recipes:?}"), format!("{serde:?}"));
    }
}

