//! How the page writes numbers: bytes, parameter counts, fractions, durations and colours. Every
//! panel and chart formats through here, so one figure reads the same everywhere. Plain Rust,
//! tested natively.

use meshplan_core::Report;
use meshplan_core::pipeline::ChunkRef;

/// Pipeline rank `rank`'s virtual chunks as the report places them: `E 4 · 4 · … · 1 m L` (decoder layers per chunk,
/// and the chunks that build the embedding, the MTP layers and the output layer and loss).
pub fn chunks(r: &Report, rank: u64) -> String {
    let d = &r.derived;
    let place = &d.pipeline_placement;
    let Some(chunks) = d.layers_per_chunk.get(rank as usize) else { return String::new() };
    let cells: Vec<String> = chunks
        .iter()
        .enumerate()
        .map(|(v, n)| {
            let here = |c: &ChunkRef| c.pipeline_rank == rank && c.virtual_rank == v as u64;
            let mut parts = Vec::new();
            if here(&place.embedding) {
                parts.push("E".to_string());
            }
            parts.push(n.to_string());
            if place.mtp.as_ref().is_some_and(here) {
                parts.push("m".into());
            }
            if here(&place.loss) {
                parts.push("L".into());
            }
            parts.join(" ")
        })
        .collect();
    cells.join(" · ")
}

/// Bytes per GiB.
pub const GIB: f64 = (1u64 << 30) as f64;

/// Bytes in GiB, as a number (chart coordinates, table cells).
pub fn in_gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// "36.9 GiB".
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", in_gib(bytes))
}

/// "36.9" (a GiB column whose header carries the unit).
pub fn gib_figure(bytes: u64) -> String {
    format!("{:.1}", in_gib(bytes))
}

/// A parameter count: "8.03 B", "1.02 T", "350 M".
pub fn billions(n: u64) -> String {
    if n >= 1_000_000_000_000 {
        format!("{:.2} T", n as f64 / 1e12)
    } else if n >= 1_000_000_000 {
        format!("{:.2} B", n as f64 / 1e9)
    } else {
        format!("{:.0} M", n as f64 / 1e6)
    }
}

/// A fraction as a percentage with one decimal: 0.0312 → "3.1%".
pub fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// A duration in a table or a sentence: "255 ms" below a second, else "6.74 s".
pub fn seconds(x: f64) -> String {
    if x < 1.0 { format!("{:.0} ms", x * 1e3) } else { format!("{x:.2} s") }
}

/// A duration on a chart's axis: "0" at the origin, milliseconds below 0.1 s, else "1.50 s".
pub fn axis_seconds(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() < 0.1 {
        format!("{:.0} ms", x * 1e3)
    } else {
        format!("{x:.2} s")
    }
}

/// "yes" or "no".
pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// "1 error", "3 errors".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// A colour as CSS `#rrggbb`.
pub fn hex_colour([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_counts() {
        // 36.9 GiB = 36.9 × 2^30 = 39,621,115,494 bytes (rounded to the byte).
        assert_eq!(gib(39_621_115_494), "36.9 GiB");
        assert_eq!(gib(80 << 30), "80.0 GiB");
        assert_eq!(gib_figure(3 << 29), "1.5");
        assert_eq!(billions(8_030_261_248), "8.03 B");
        assert_eq!(billions(1_020_000_000_000), "1.02 T");
        assert_eq!(billions(350_000_000), "350 M");
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(3, "reason"), "3 reasons");
    }

    #[test]
    fn fractions_and_durations() {
        // A bubble of (PP − 1)/m = 1/32 = 3.125 % shows as 3.1 %.
        assert_eq!(percent(1.0 / 32.0), "3.1%");
        assert_eq!(seconds(0.255), "255 ms");
        assert_eq!(seconds(6.7412), "6.74 s");
        assert_eq!(axis_seconds(0.0), "0");
        assert_eq!(axis_seconds(0.05), "50 ms");
        assert_eq!(axis_seconds(0.5), "0.50 s");
        assert_eq!(yes_no(true), "yes");
    }

    #[test]
    fn colours() {
        assert_eq!(hex_colour([0xD5, 0x5E, 0x00]), "#d55e00");
        assert_eq!(hex_colour([0, 0x72, 0xB2]), "#0072b2");
    }
}
