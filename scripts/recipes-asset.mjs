// Trunk post_build hook: writes bridge-recipes.json beside index.html — Megatron Bridge's recipes
// (crates/core/data/bridge_recipes.json) as the page's modules read them at run time. The page's wasm is built
// without them (meshplan-core's `builtin-recipes` feature is off, src/state/recipes.rs) and fetches this file once a
// plan names a recipe. Only the keys the core's reader reads (`source_repository`, `recipes`) are kept, without
// indentation, as crates/core/build.rs compiles the file into the CLI.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) throw new Error("recipes-asset.mjs runs as a Trunk post_build hook (no TRUNK_STAGING_DIR)");
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { source_repository, recipes } = JSON.parse(readFileSync(join(root, "crates/core/data/bridge_recipes.json"), "utf8"));
if (!source_repository || !Array.isArray(recipes) || recipes.length === 0) throw new Error("recipes-asset.mjs: no recipes in bridge_recipes.json");
writeFileSync(join(dir, "bridge-recipes.json"), JSON.stringify({ source_repository, recipes }));
