//! Text generators for the readers that take free text (launch scripts, argument dumps, Bridge overrides and YAML,
//! out-of-memory logs, share links): Unicode of every width (multi-byte, combining marks, right-to-left and
//! zero-width characters), long lines, inputs of about a mebibyte with a multi-byte character across the limit, and
//! char-level mutations of real seeds (the corpora under `crates/core/tests/data`, read when the harness starts).

use crate::plans::Rng;
use std::path::Path;

/// Characters that have hurt text readers: 2-, 3- and 4-byte UTF-8 (a progress bar's `█`, an ellipsis, CJK, a
/// mathematical letter, an emoji), combining marks (U+0301, U+0308, U+20DD), right-to-left text and controls (Hebrew,
/// Arabic, U+202E, U+200F), zero-width characters and a BOM, NUL, CR, tab, and the shell's and YAML's own syntax.
pub const NOISE: &[&str] = &[
    "█", "…", "é", "ü", "中文", "𝔘", "🦀", "👩‍👩‍👧", "e\u{301}", "a\u{308}\u{308}\u{308}", "\u{20dd}", "שלום", "مرحبا",
    "\u{202e}", "\u{200f}", "\u{200b}", "\u{feff}", "\0", "\r", "\t", "\\", "\"", "'", "$(", "${", "}", "`", "=", "--",
    " ", "\n", "#", ":", "- ", "[", "]", "{", "*", "|", "&&", ";", "<<EOF", "\\\n",
];

/// A string of about `len` bytes drawn from [`NOISE`] and ASCII letters.
pub fn unicode(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 8);
    while s.len() < len {
        if rng.chance(40) {
            s.push_str(*rng.pick(NOISE));
        } else {
            s.push(char::from(b'a' + rng.below(26) as u8));
        }
    }
    s
}

/// The byte offsets of `s`'s characters (and its end), so that edits fall on char boundaries.
fn boundary(rng: &mut Rng, s: &str) -> usize {
    let n = s.chars().count() as u64;
    let k = rng.below(n + 1) as usize;
    s.char_indices().nth(k).map_or(s.len(), |(i, _)| i)
}

/// A seed's text with char-level edits: Unicode inserted, spans cut, a line repeated or made very long, a piece of
/// another seed spliced in; sometimes byte-level edits on top (invalid UTF-8 read lossily, as a page would paste it).
pub fn mutate(rng: &mut Rng, seed: &str, other: &str) -> String {
    let mut s = seed.to_string();
    for _ in 0..1 + rng.below(5) {
        let i = boundary(rng, &s);
        match rng.below(8) {
            0 | 1 => {
                let len = 1 + rng.below(12) as usize;
                let noise = unicode(rng, len);
                s.insert_str(i, &noise);
            }
            2 => {
                let j = s.floor_char_boundary(i + rng.below(200) as usize);
                s.replace_range(i..j, "");
            }
            3 => {
                // One line repeated: many short lines.
                let line = s[i..].lines().next().unwrap_or("").to_string();
                let copies: usize = *rng.pick(&[2, 100, 10_000]);
                s.insert_str(i, &format!("{line}\n").repeat(copies.min((1 << 20) / (line.len() + 1))));
            }
            4 => {
                // A very long line: a word repeated without a newline.
                let word = if rng.chance(50) { "--x 1 " } else { *rng.pick(NOISE) };
                let times = *rng.pick(&[1000usize, 50_000]);
                s.insert_str(i, &word.repeat(times));
            }
            5 => {
                let k = boundary(rng, other);
                s.truncate(i);
                s.push_str(&other[k..]);
            }
            6 => s = crate::plans::mutate_bytes(rng, &s, other),
            _ => {}
        }
    }
    s
}

/// `text` repeated to about `limit` bytes: just under, at, or just over it, with a multi-byte character straddling
/// `limit` itself when possible (the cut every bounded reader makes).
pub fn around(rng: &mut Rng, text: &str, limit: usize) -> String {
    let unit = if text.is_empty() { "█" } else { text };
    let mut s = String::with_capacity(limit + 64);
    while s.len() + unit.len() < limit.saturating_sub(8) {
        s.push_str(unit);
        if !unit.ends_with('\n') && rng.chance(50) {
            s.push('\n');
        }
    }
    while s.len() < limit - 1 {
        s.push('x');
    }
    // `█` (3 bytes) from limit − 1: bytes limit − 1 .. limit + 2, across the limit.
    s.push('█');
    match rng.below(3) {
        0 => s.truncate(s.floor_char_boundary(limit.saturating_sub(1 + rng.below(4) as usize))),
        1 => {}
        _ => s.push_str(&unit[..unit.floor_char_boundary(rng.below(unit.len() as u64 + 1) as usize)]),
    }
    s
}

/// Every file directly in `dir` (the corpora of the import and OOM tests), as text; none if it is absent.
pub fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    names.sort();
    names.iter().filter(|p| p.file_name().is_some_and(|n| n != "SOURCES.md")).filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}
