//! The GPU grid as one picture: geometry (where each GPU, or each node when cells would be too
//! small, is drawn), hit testing, and a pixel renderer into an RGBA buffer that the canvas
//! shows with a single `putImageData`. Plain Rust, tested natively; the rank groups come from
//! the core's layout, this module only draws them.

use crate::format::hex_colour;

/// Colour-blind-safe palette (Okabe & Ito), in the order fills are used.
pub const PALETTE: [[u8; 3]; 8] = [
    [0xE6, 0x9F, 0x00], // orange
    [0x56, 0xB4, 0xE9], // sky blue
    [0x00, 0x9E, 0x73], // bluish green
    [0xF0, 0xE4, 0x42], // yellow
    [0x00, 0x72, 0xB2], // blue
    [0xD5, 0x5E, 0x00], // vermillion
    [0xCC, 0x79, 0xA7], // reddish purple
    [0x99, 0x99, 0x99], // grey
];
/// Fill patterns, so that fills stay distinct without colour: solid, stripes, dots.
pub const PATTERNS: usize = 3;
pub const PATTERN_NAMES: [&str; PATTERNS] = ["solid", "striped", "dotted"];

/// The fill of group (or stage) `index`: a palette colour and a pattern; repeats every 24.
pub fn fill(index: u32) -> ([u8; 3], usize) {
    let i = index as usize;
    (PALETTE[i % PALETTE.len()], (i / PALETTE.len()) % PATTERNS)
}

/// A 14-pixel legend swatch for a fill, as SVG (presentation attributes only: the page's CSP
/// forbids style attributes).
pub fn swatch_svg(index: u32) -> String {
    let (rgb, pattern) = fill(index);
    let ink = hex_colour(mix(rgb, [0, 0, 0], 0.45));
    let marks = match pattern {
        1 => format!(r#"<path d="M0 4L4 0M0 9L9 0M0 14L14 0M5 14L14 5M10 14L14 10" stroke="{ink}" stroke-width="1.5"/>"#),
        2 => (0..3).flat_map(|y| (0..3).map(move |x| (x, y))).map(|(x, y)| format!(r#"<rect x="{}" y="{}" width="2" height="2" fill="{ink}"/>"#, 2 + 4 * x, 2 + 4 * y)).collect(),
        _ => String::new(),
    };
    format!(r#"<svg width="14" height="14" viewBox="0 0 14 14" xmlns="http://www.w3.org/2000/svg"><rect width="14" height="14" fill="{}"/>{marks}</svg>"#, hex_colour(rgb))
}

/// Where things go, in device pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    pub world: u32,
    pub gpus_per_node: u32,
    /// Ranks per drawn cell: 1, or `gpus_per_node` when whole nodes are drawn as one cell.
    pub unit: u32,
    pub units: u32,
    /// Cell side, gap between cells, height of the NVLink-domain strip under each cell,
    /// gap between node blocks.
    pub cell: u32,
    pub gap: u32,
    pub strip: u32,
    pub block_gap: u32,
    /// Cells per block row and rows per block (a block is one node, or one cell when aggregated).
    pub block_cols: u32,
    pub block_rows: u32,
    pub blocks_per_row: u32,
    pub width: u32,
    pub height: u32,
    pub scale: u32,
}

impl Geometry {
    fn pitch_x(&self) -> u32 {
        self.cell + self.gap
    }
    fn pitch_y(&self) -> u32 {
        self.cell + self.strip + self.gap
    }
    fn block_w(&self) -> u32 {
        self.block_cols * self.pitch_x() - self.gap
    }
    fn block_h(&self) -> u32 {
        self.block_rows * self.pitch_y() - self.gap
    }
    fn per_block(&self) -> u32 {
        self.block_cols * self.block_rows
    }

    pub fn aggregated(&self) -> bool {
        self.unit > 1
    }

    /// Top-left corner of cell `unit`.
    pub fn origin(&self, unit: u32) -> (u32, u32) {
        let (block, within) = (unit / self.per_block(), unit % self.per_block());
        let (bx, by) = (block % self.blocks_per_row, block / self.blocks_per_row);
        let x = bx * (self.block_w() + self.block_gap) + (within % self.block_cols) * self.pitch_x();
        let y = by * (self.block_h() + self.block_gap) + (within / self.block_cols) * self.pitch_y();
        (x, y)
    }

    /// The cell under a point (device pixels), if any.
    pub fn hit(&self, x: u32, y: u32) -> Option<u32> {
        let (bw, bh) = (self.block_w() + self.block_gap, self.block_h() + self.block_gap);
        let (bx, by) = (x / bw, y / bh);
        if bx >= self.blocks_per_row {
            return None;
        }
        let (ix, iy) = (x % bw, y % bh);
        let (cx, cy) = (ix / self.pitch_x(), iy / self.pitch_y());
        if cx >= self.block_cols || cy >= self.block_rows || ix % self.pitch_x() >= self.cell || iy % self.pitch_y() >= self.cell + self.strip {
            return None;
        }
        let unit = (by * self.blocks_per_row + bx) * self.per_block() + cy * self.block_cols + cx;
        (unit < self.units).then_some(unit)
    }

    /// The first rank a cell stands for.
    pub fn rank_of(&self, unit: u32) -> u32 {
        unit * self.unit
    }

    pub fn unit_of(&self, rank: u32) -> u32 {
        rank / self.unit
    }

    /// Whether a cell is big enough to carry a text label.
    pub fn labelled(&self) -> bool {
        self.cell >= 18 * self.scale
    }

    /// The cell of the rank one step away in a direction (arrow keys).
    pub fn step(&self, unit: u32, dx: i32, dy: i32) -> u32 {
        let (x, y) = self.origin(unit);
        let (px, py) = (self.pitch_x() as i64, self.pitch_y() as i64);
        let half = (self.cell / 2) as i64;
        let tx = x as i64 + half + dx as i64 * px;
        let mut ty = y as i64 + half + dy as i64 * py;
        // Moving down out of a block row lands in the next block row.
        if dy != 0 {
            let probe = |ty: i64| (tx >= 0 && ty >= 0).then(|| self.hit(tx as u32, ty as u32)).flatten();
            if let Some(u) = probe(ty) {
                return u;
            }
            ty += dy as i64 * (self.block_gap as i64 + self.strip as i64);
            return probe(ty).unwrap_or(unit);
        }
        let next = unit as i64 + dx as i64;
        if (0..self.units as i64).contains(&next) { next as u32 } else { unit }
    }
}

/// Chooses cell sizes so that the grid fits `max_w` × `max_h` CSS pixels; when even 3-pixel
/// cells do not fit, each node becomes one cell.
pub fn geometry(world: u32, gpus_per_node: u32, max_w: u32, max_h: u32, scale: u32) -> Geometry {
    let gpn = gpus_per_node.clamp(1, world.max(1));
    let world = world.max(1);
    let try_fit = |unit: u32, cell: u32| {
        let units = world.div_ceil(unit);
        let (block_cols, block_rows) = if unit > 1 { (1, 1) } else { (gpn.min(16), gpn.div_ceil(16)) };
        let gap = if cell >= 8 { 2 } else { 1 };
        let strip = if cell >= 10 { 3 } else { 1 };
        let block_gap = if unit > 1 { gap } else { (cell / 2).max(3) };
        let mut g = Geometry {
            world,
            gpus_per_node: gpn,
            unit,
            units,
            cell,
            gap,
            strip,
            block_gap,
            block_cols,
            block_rows,
            blocks_per_row: 1,
            width: 0,
            height: 0,
            scale: 1,
        };
        let blocks = units.div_ceil(g.per_block());
        g.blocks_per_row = ((max_w + block_gap) / (g.block_w() + block_gap)).clamp(1, blocks);
        let rows = blocks.div_ceil(g.blocks_per_row);
        g.width = g.blocks_per_row * (g.block_w() + block_gap) - block_gap;
        g.height = rows * (g.block_h() + block_gap) - block_gap;
        (g.width <= max_w && g.height <= max_h).then_some(g)
    };
    const SIZES: [u32; 13] = [32, 28, 24, 20, 16, 14, 12, 10, 8, 6, 5, 4, 3];
    let g = SIZES
        .iter()
        .find_map(|&c| try_fit(1, c))
        .or_else(|| SIZES.iter().chain(&[2, 1]).find_map(|&c| try_fit(gpn, c)))
        .unwrap_or_else(|| try_fit_any(world, gpn));
    scaled(g, scale.clamp(1, 3))
}

fn try_fit_any(world: u32, gpn: u32) -> Geometry {
    // Past every size: one-pixel node cells in rows of 1024 (a world of millions of GPUs).
    let units = world.div_ceil(gpn);
    let per_row = units.min(1024);
    Geometry {
        world,
        gpus_per_node: gpn,
        unit: gpn,
        units,
        cell: 1,
        gap: 0,
        strip: 0,
        block_gap: 0,
        block_cols: 1,
        block_rows: 1,
        blocks_per_row: per_row,
        width: per_row,
        height: units.div_ceil(per_row),
        scale: 1,
    }
}

fn scaled(g: Geometry, s: u32) -> Geometry {
    Geometry {
        cell: g.cell * s,
        gap: g.gap * s,
        strip: g.strip * s,
        block_gap: g.block_gap * s,
        width: g.width * s,
        height: g.height * s,
        scale: s,
        ..g
    }
}

/// What to draw in each cell.
pub struct Paint<'a> {
    /// The fill index of every rank (its group of the chosen kind, or its pipeline stage).
    pub fill_of: &'a dyn Fn(u32) -> u32,
    /// Whether the rank's group of the chosen kind spans more than one NVLink domain.
    pub crosses: &'a dyn Fn(u32) -> bool,
    pub nvlink_domain: u32,
    /// Ranks to emphasise (the hovered rank's group); others are dimmed.
    pub highlight: Option<&'a dyn Fn(u32) -> bool>,
    pub focus: Option<u32>,
    pub dark: bool,
}

/// Renders the grid into an RGBA buffer of `g.width × g.height`.
pub fn render(g: &Geometry, paint: &Paint) -> Vec<u8> {
    let (w, h) = (g.width as usize, g.height as usize);
    let mut px = vec![0u8; w * h * 4];
    let bg: [u8; 3] = if paint.dark { [0x1b, 0x1d, 0x22] } else { [0xff, 0xff, 0xff] };
    let fg: [u8; 3] = if paint.dark { [0xf2, 0xf2, 0xf2] } else { [0x11, 0x11, 0x11] };
    let strips: [[u8; 3]; 2] = if paint.dark { [[0x8a, 0x8f, 0x99], [0x4a, 0x4e, 0x57]] } else { [[0x44, 0x44, 0x44], [0xbb, 0xbb, 0xbb]] };
    for p in px.chunks_exact_mut(4) {
        p.copy_from_slice(&[bg[0], bg[1], bg[2], 0xff]);
    }
    let mut rect = |x0: u32, y0: u32, rw: u32, rh: u32, f: &dyn Fn(u32, u32) -> [u8; 3]| {
        for y in y0..(y0 + rh).min(g.height) {
            let row = y as usize * w;
            for x in x0..(x0 + rw).min(g.width) {
                let i = (row + x as usize) * 4;
                px[i..i + 3].copy_from_slice(&f(x - x0, y - y0));
            }
        }
    };
    let s = g.scale;
    let domain = paint.nvlink_domain.max(1);
    for unit in 0..g.units {
        let rank = g.rank_of(unit);
        let (x, y) = g.origin(unit);
        let (colour, pattern) = fill((paint.fill_of)(rank));
        let dim = paint.highlight.is_some_and(|h| !h(rank));
        let base = if dim { mix(colour, bg, 0.7) } else { colour };
        let ink = mix(base, [0, 0, 0], 0.45);
        let cell = g.cell;
        rect(x, y, cell, cell, &|cx, cy| match pattern {
            1 if cell >= 6 && (cx + cy) % (4 * s) < s + s / 2 => ink,
            2 if cell >= 6 && cx % (4 * s) < s && cy % (4 * s) < s => ink,
            _ => base,
        });
        // A dark corner triangle marks ranks whose group crosses an NVLink domain.
        if cell >= 6 && (paint.crosses)(rank) {
            let t = (cell / 3).max(2);
            rect(x + cell - t, y, t, t, &|cx, cy| if cx >= cy { fg } else { base });
        }
        // The strip under the cell: NVLink domain, alternating two greys (rank / domain size).
        if g.strip > 0 {
            let first_domain = rank / domain;
            let last_domain = (rank + g.unit - 1).min(g.world - 1) / domain;
            let shade = strips[(first_domain % 2) as usize];
            let mixed = first_domain != last_domain;
            rect(x, y + cell, cell, g.strip, &|cx, _| if mixed && cx % (2 * s) < s { strips[1 - (first_domain % 2) as usize] } else { shade });
        }
        if paint.focus == Some(unit) {
            let b = (2 * s).min(cell / 3).max(1);
            let h = cell + g.strip;
            rect(x, y, cell, b, &|_, _| fg);
            rect(x, y + h - b, cell, b, &|_, _| fg);
            rect(x, y, b, h, &|_, _| fg);
            rect(x + cell - b, y, b, h, &|_, _| fg);
        }
    }
    px
}

fn mix(a: [u8; 3], b: [u8; 3], t: f32) -> [u8; 3] {
    let m = |x: u8, y: u8| (x as f32 * (1.0 - t) + y as f32 * t).round() as u8;
    [m(a[0], b[0]), m(a[1], b[1]), m(a[2], b[2])]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_has_its_own_cell_and_hit_finds_it() {
        for (world, gpn) in [(8, 8), (16, 8), (64, 8), (1024, 8), (72, 4), (100, 8), (16384, 8)] {
            let g = geometry(world, gpn, 900, 640, 1);
            assert!(g.width <= 900 && g.height <= 640, "{world}: {g:?}");
            assert_eq!(g.units, world.div_ceil(g.unit));
            for unit in [0, 1, g.units / 2, g.units - 1] {
                let (x, y) = g.origin(unit);
                assert_eq!(g.hit(x + g.cell / 2, y + g.cell / 2), Some(unit), "{world} unit {unit}");
            }
        }
    }

    #[test]
    fn small_plans_draw_every_gpu_and_huge_ones_draw_nodes() {
        assert_eq!(geometry(16384, 8, 900, 640, 1).unit, 1, "16,384 GPUs still fit one cell each");
        let huge = geometry(65536, 8, 900, 640, 1);
        assert_eq!(huge.unit, 8);
        assert!(huge.aggregated() && huge.units == 8192);
        assert!(geometry(8, 8, 900, 640, 1).cell >= 24);
    }

    #[test]
    fn gaps_are_not_cells() {
        let g = geometry(16, 8, 900, 640, 1);
        let (x, y) = g.origin(0);
        assert_eq!(g.hit(x + g.cell, y), None, "the gap right of a cell");
    }

    #[test]
    fn arrow_keys_move_between_cells() {
        let g = geometry(64, 8, 900, 640, 1);
        assert_eq!(g.step(0, 1, 0), 1);
        assert_eq!(g.step(0, -1, 0), 0);
        assert_eq!(g.step(63, 1, 0), 63);
        let down = g.step(0, 0, 1);
        assert!(down > 0 && g.origin(down).1 > g.origin(0).1);
    }

    #[test]
    fn render_paints_fills_patterns_and_focus() {
        let g = geometry(16, 8, 900, 640, 1);
        let fill_of = |r: u32| r / 4;
        let no = |_: u32| false;
        let px = render(&g, &Paint { fill_of: &fill_of, crosses: &no, nvlink_domain: 8, highlight: None, focus: None, dark: false });
        assert_eq!(px.len(), (g.width * g.height * 4) as usize);
        let at = |unit: u32, dx: u32, dy: u32| {
            let (x, y) = g.origin(unit);
            let i = (((y + dy) * g.width + x + dx) * 4) as usize;
            [px[i], px[i + 1], px[i + 2]]
        };
        assert_eq!(at(0, g.cell / 2, g.cell / 2), PALETTE[0]);
        assert_eq!(at(4, g.cell / 2 + 1, g.cell / 2), PALETTE[1]);
        let focused = render(&g, &Paint { fill_of: &fill_of, crosses: &no, nvlink_domain: 8, highlight: None, focus: Some(0), dark: false });
        let (x, y) = g.origin(0);
        let i = ((y * g.width + x) * 4) as usize;
        assert_eq!(&focused[i..i + 3], &[0x11, 0x11, 0x11]);
    }

    #[test]
    fn fills_repeat_every_24_with_patterns() {
        assert_eq!(fill(0), (PALETTE[0], 0));
        assert_eq!(fill(8), (PALETTE[0], 1));
        assert_eq!(fill(17), (PALETTE[1], 2));
        assert_eq!(fill(24), fill(0));
    }
}
