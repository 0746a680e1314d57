//! The layer strip: one row per pipeline rank, its virtual chunks side by side, each chunk's decoder layers drawn as
//! runs of one kind (the report's `derived.layer_runs_per_chunk`) with the embedding, MTP and loss where the report's
//! `pipeline_placement` puts them. Plain SVG text from the report's figures (no plotters: rectangles only), tested
//! natively; the Memory panel draws it above the stage chart.
//!
//! A layer written with two pattern symbols (a GPT layer: mixer then MLP, `*-`, `+E`) is drawn as two halves, the mixer
//! above its MLP; a hybrid pattern's one-symbol layer fills its cell. Runs are snapped to whole pixels and a run that
//! covers no pixel of its own is left to its neighbours, so a row never has more rectangles than pixels however many
//! runs it has.

use meshplan_core::pipeline::{ChunkRef, Placement};
use meshplan_core::report::KindRun;
use std::fmt::Write;

/// A layer-kind symbol of Megatron-Core's hybrid pattern: its name and its colour (Okabe–Ito, safe for colour-blind
/// readers), in legend order.
pub const KINDS: [(char, &str, &str); 7] = [
    ('*', "attention", "#0072b2"),
    ('+', "MLA", "#56b4e9"),
    ('D', "DSA attention", "#cc79a7"),
    ('M', "Mamba-2", "#009e73"),
    ('G', "Gated DeltaNet", "#f0e442"),
    ('-', "dense MLP", "#999999"),
    ('E', "MoE", "#e69f00"),
];
/// The embedding and the output layer and loss, drawn in the page's ink; the MTP layers in vermillion.
pub const MTP_COLOUR: &str = "#d55e00";
fn ink(dark: bool) -> &'static str {
    if dark { "#e8e8e8" } else { "#222222" }
}

fn colour(symbol: char) -> &'static str {
    KINDS.iter().find(|k| k.0 == symbol).map_or("#bbbbbb", |k| k.2)
}

/// What the strip draws: the report's runs per chunk and placement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Strip {
    pub runs: Vec<Vec<Vec<KindRun>>>,
    pub placement: Placement,
    pub has_mtp: bool,
}

/// A module drawn as a one-layer cell after the decoder layers (the embedding's cell goes before them).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mark {
    Mtp,
    Loss,
}

impl Strip {
    /// The marks of chunk (rank, v): the embedding first, MTP and loss last, as the report places them.
    fn marks(&self, rank: usize, v: usize) -> (bool, Vec<Mark>) {
        let here = |c: &ChunkRef| c.pipeline_rank == rank as u64 && c.virtual_rank == v as u64;
        let mut after = Vec::new();
        if self.has_mtp && self.placement.mtp.as_ref().is_some_and(here) {
            after.push(Mark::Mtp);
        }
        if here(&self.placement.loss) {
            after.push(Mark::Loss);
        }
        (here(&self.placement.embedding), after)
    }

    /// Layer and mark cells of the widest rank, so every rank shares one scale.
    fn widest(&self) -> (u64, u64) {
        let mut widest = (0, 0);
        for (rank, chunks) in self.runs.iter().enumerate() {
            let layers: u64 = chunks.iter().flatten().map(|r| r.count).sum();
            let marks: u64 = (0..chunks.len())
                .map(|v| {
                    let (e, after) = self.marks(rank, v);
                    u64::from(e) + after.len() as u64
                })
                .sum();
            if layers + marks > widest.0 + widest.1 {
                widest = (layers, marks);
            }
        }
        widest
    }

    /// The symbols the strip uses, in legend order, for the legend below it.
    pub fn symbols(&self) -> Vec<char> {
        KINDS.iter().map(|k| k.0).filter(|&s| self.runs.iter().flatten().flatten().any(|r| r.symbols.contains(s))).collect()
    }
}

/// A chunk's layers as text: runs as `M`, `(*-)×4`, and the modules around them by name ("embedding", "MTP", "loss":
/// the layout's `E` would read as the pattern's MoE).
fn chunk_text(runs: &[KindRun], embedding: bool, after: &[Mark]) -> String {
    let layers: Vec<String> = runs
        .iter()
        .map(|r| {
            let s = if r.symbols.chars().count() > 1 { format!("({})", r.symbols) } else { r.symbols.clone() };
            if r.count == 1 { s } else { format!("{s}×{}", r.count) }
        })
        .collect();
    let mut parts: Vec<String> = Vec::new();
    if embedding {
        parts.push("embedding".into());
    }
    if !layers.is_empty() {
        parts.push(layers.join(" "));
    }
    parts.extend(after.iter().map(|m| if *m == Mark::Mtp { "MTP" } else { "loss" }.to_string()));
    if parts.is_empty() { "—".into() } else { parts.join(" · ") }
}

/// Row height and gap for `ranks` rows: 18 px rows for a few ranks, down to 2 px rows at 128 and more.
fn row_size(ranks: usize) -> (f64, f64) {
    let h = (360.0 / ranks.max(1) as f64).clamp(2.0, 18.0).floor();
    (h, if h >= 8.0 { 3.0 } else if h >= 4.0 { 1.0 } else { 0.0 })
}

/// The strip as SVG `width` pixels wide.
pub fn layer_strip(s: &Strip, dark: bool, width: u32) -> String {
    let ranks = s.runs.len();
    if ranks == 0 || width < 80 {
        return String::new();
    }
    let (row_h, gap) = row_size(ranks);
    let label_w = if row_h >= 9.0 { 40.0 } else { 0.0 };
    let max_chunks = s.runs.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let chunk_gap = if max_chunks > 1 { 3.0 } else { 0.0 };
    let avail = (width as f64 - label_w - chunk_gap * (max_chunks - 1) as f64 - 1.0).max(10.0);
    let (layers, marks) = s.widest();
    // One scale for every rank: a layer is `px` wide, a mark `mark` (at least 4 px, so it shows at any width).
    let px0 = avail / (layers + marks).max(1) as f64;
    let mark = px0.clamp(4.0, 14.0).min(avail / (marks.max(1) as f64 * 2.0));
    let px = (avail - mark * marks as f64) / layers.max(1) as f64;
    let height = ranks as f64 * (row_h + gap);
    let fg = ink(dark);
    let mut svg = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#);
    for (rank, chunks) in s.runs.iter().enumerate() {
        let y = rank as f64 * (row_h + gap);
        let texts: Vec<String> = (0..chunks.len())
            .map(|v| {
                let (e, after) = s.marks(rank, v);
                chunk_text(&chunks[v], e, &after)
            })
            .collect();
        let _ = write!(svg, r#"<g><title>pp {rank}: {}</title>"#, escape(&texts.join(" | ")));
        if label_w > 0.0 {
            let _ = write!(svg, r#"<text x="0" y="{}" font-size="{}" fill="{fg}">pp {rank}</text>"#, y + row_h - 2.0, (row_h - 3.0).min(12.0));
        }
        let mut x = label_w;
        for (v, runs) in chunks.iter().enumerate() {
            let (embedding, after) = s.marks(rank, v);
            if embedding {
                rect(&mut svg, x, x + mark, y, row_h, fg);
                x += mark;
            }
            let mut at = x;
            for r in runs {
                let end = at + r.count as f64 * px;
                let (x0, x1) = (at.round(), end.round());
                if x1 > x0 {
                    let symbols: Vec<char> = r.symbols.chars().collect();
                    let part = row_h / symbols.len().max(1) as f64;
                    for (i, c) in symbols.iter().enumerate() {
                        rect(&mut svg, x0, x1, y + part * i as f64, part, colour(*c));
                    }
                }
                at = end;
            }
            x = at;
            for m in &after {
                rect(&mut svg, x, x + mark, y, row_h, if *m == Mark::Mtp { MTP_COLOUR } else { fg });
                x += mark;
            }
            x += chunk_gap;
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

fn rect(svg: &mut String, x0: f64, x1: f64, y: f64, h: f64, fill: &str) {
    let _ = write!(svg, r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}"/>"#, trim(x0), trim(y), trim(x1 - x0), trim(h));
}

/// A coordinate with at most one decimal.
fn trim(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 { format!("{}", r as i64) } else { format!("{r:.1}") }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshplan_core::pipeline::ChunkRef;

    fn run(s: &str, n: u64) -> KindRun {
        KindRun { symbols: s.into(), count: n }
    }

    fn at(pp: u64, v: u64) -> ChunkRef {
        ChunkRef { pipeline_rank: pp, virtual_rank: v }
    }

    #[test]
    fn chunks_read_as_megatron_writes_them() {
        // DeepSeek-V3's first chunk of Bridge's PP 2 layout: the embedding, three dense MLA layers, one MoE layer.
        assert_eq!(chunk_text(&[run("+-", 3), run("+E", 1)], true, &[]), "embedding · (+-)×3 (+E)");
        assert_eq!(chunk_text(&[run("M", 1), run("E", 1), run("*", 1)], false, &[Mark::Mtp, Mark::Loss]), "M E * · MTP · loss");
        assert_eq!(chunk_text(&[], false, &[]), "—");
    }

    #[test]
    fn a_two_rank_strip_by_hand() {
        // PP 2, one chunk each: rank 0 = E + 4 layers of *-, rank 1 = 4 layers of *E + L. Both ranks are 5 cells wide.
        // At 245 px: label 40, avail 245 − 40 − 1 = 204; px0 = 204 / 5 = 40.8, mark = min(clamp(40.8, 4, 14), 204 / 2)
        // = 14; a layer is (204 − 14) / 4 = 47.5 px. Rank 0: E at 40–54, the run 54–244 split into a mixer half (y 0–9)
        // and an MLP half (y 9–18).
        let s = Strip {
            runs: vec![vec![vec![run("*-", 4)]], vec![vec![run("*E", 4)]]],
            placement: Placement { embedding: at(0, 0), loss: at(1, 0), mtp: None },
            has_mtp: false,
        };
        let svg = layer_strip(&s, false, 245);
        assert!(svg.contains(r##"<rect x="40" y="0" width="14" height="18" fill="#222222"/>"##), "{svg}");
        assert!(svg.contains(r##"<rect x="54" y="0" width="190" height="9" fill="#0072b2"/>"##), "{svg}");
        assert!(svg.contains(r##"<rect x="54" y="9" width="190" height="9" fill="#999999"/>"##), "{svg}");
        // Rank 1 (y = 21: row 18 + gap 3): the run from 40 to 230, then L at 230–244.
        assert!(svg.contains(r##"<rect x="40" y="30" width="190" height="9" fill="#e69f00"/>"##), "{svg}");
        assert!(svg.contains(r##"<rect x="230" y="21" width="14" height="18" fill="#222222"/>"##), "{svg}");
        assert!(svg.contains("<title>pp 0: embedding · (*-)×4</title>") && svg.contains("<title>pp 1: (*E)×4 · loss</title>"));
        assert_eq!(s.symbols(), vec!['*', '-', 'E']);
    }

    #[test]
    fn many_runs_never_draw_more_rectangles_than_pixels() {
        // 2,048 one-layer runs alternating M and E on one rank, 300 px wide: at most one rectangle per pixel column
        // (300 − 40 label − 1 = 259 px), where one per run would be 2,048.
        let runs: Vec<KindRun> = (0..2048).map(|i| run(if i % 2 == 0 { "M" } else { "E" }, 1)).collect();
        let s = Strip { runs: vec![vec![runs]], placement: Placement::default(), has_mtp: false };
        let svg = layer_strip(&s, false, 300);
        let rects = svg.matches("<rect").count();
        assert!(rects <= 260 + 2, "{rects} rectangles");
    }

    #[test]
    fn rows_shrink_with_many_ranks() {
        assert_eq!(row_size(4), (18.0, 3.0));
        assert_eq!(row_size(32), (11.0, 3.0));
        assert_eq!(row_size(128), (2.0, 0.0));
        // 128 ranks × 2 px = 256 px tall.
        let s = Strip { runs: vec![vec![vec![run("*-", 1)]]; 128], placement: Placement::default(), has_mtp: false };
        assert!(layer_strip(&s, false, 800).contains(r#"height="256""#));
    }
}
