//! The order string, read as Megatron-Core's `RankGenerator` reads it: lowercased, split on '-', each
//! token a dimension, missing dimensions of size 1 appended. Allocation-free unless the order is refused.

use crate::layout::{DEFAULT_ORDER, MeshSizes, TP_PP_DP_ORDER};
use crate::{Code, Diagnostic};

/// One dimension of a `RankGenerator`, i.e. one token of the order string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Tp = 0,
    Pp = 1,
    Dp = 2,
    Ep = 3,
    Cp = 4,
}

impl Dim {
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name_to_size` key order, in which
    /// missing tokens are appended).
    pub const ALL: [Dim; 5] = [Dim::Tp, Dim::Pp, Dim::Dp, Dim::Ep, Dim::Cp];

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name_to_size` keys).
    pub fn token(self) -> &'static str {
        match self {
            Dim::Tp => "tp",
            Dim::Pp => "pp",
            Dim::Dp => "dp",
            Dim::Ep => "ep",
            Dim::Cp => "cp",
        }
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`self.name_to_size[token]`, after `order.lower()`).
    /// No non-ASCII character lowercases to an ASCII letter of these tokens, so an ASCII-case-insensitive
    /// match is Python's `lower()` followed by an exact match, without allocating.
    pub fn from_token(token: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| token.eq_ignore_ascii_case(d.token()))
    }

    /// Upstream: none (bit of this dimension in a mask).
    pub(crate) fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The dimensions named by an order string, in the order given.
pub(crate) struct GivenOrder {
    dims: [Dim; 5],
    len: usize,
}

impl GivenOrder {
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name not in order`).
    fn contains(&self, d: Dim) -> bool {
        self.dims[..self.len].contains(&d)
    }
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (`order.lower()`, `order.split("-")`,
/// `self.name_to_size[token]`); duplicates are refused here, upstream silently builds wrong groups.
pub(crate) fn parse_order(order: &str) -> Result<GivenOrder, Diagnostic> {
    let mut given = GivenOrder { dims: [Dim::Tp; 5], len: 0 };
    for (i, token) in order.split('-').enumerate() {
        let Some(d) = Dim::from_token(token) else {
            return Err(unknown_token(order, i, token));
        };
        if given.contains(d) {
            return Err(Diagnostic::new(
                Code::OrderInvalid,
                format!("order {} names {} more than once", quoted(order), quoted(d.token())),
                order_fix(),
            ));
        }
        // Five distinct known tokens at most, so this slot exists.
        if let Some(slot) = given.dims.get_mut(given.len) {
            *slot = d;
            given.len += 1;
        }
    }
    Ok(given)
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (the `KeyError` of `self.name_to_size[token]`).
fn unknown_token(order: &str, position: usize, token: &str) -> Diagnostic {
    let what = if order.is_empty() {
        "the order is empty".to_string()
    } else if token.is_empty() {
        format!("order {} has an empty token at position {}", quoted(order), position + 1)
    } else {
        format!(
            "order {} has the unknown token {}; Megatron-Core knows tp, cp, ep, dp and pp",
            quoted(order),
            quoted(&token.to_ascii_lowercase())
        )
    };
    Diagnostic::new(Code::OrderInvalid, what, order_fix())
}

/// Upstream: none (the fix of every malformed order).
fn order_fix() -> String {
    format!(
        "Write the dimensions tp, cp, ep, dp and pp once each, separated by single '-', e.g. \"{DEFAULT_ORDER}\" \
         (Megatron's default) or \"{TP_PP_DP_ORDER}\" (--use-tp-pp-dp-mapping); the expert mesh reuses \"tp\" \
         for expert tp and \"dp\" for expert dp."
    )
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (a missing token of size 1 is appended,
/// in `name_to_size` order; one of any other size raises). `dps` is (dp, expert dp) when known.
pub(crate) fn complete_order(
    raw: &str,
    given: &GivenOrder,
    sizes: &MeshSizes,
    dps: Option<(u64, u64)>,
) -> Result<[Dim; 5], Diagnostic> {
    let mut dims = given.dims;
    let mut len = given.len;
    for d in Dim::ALL {
        if given.contains(d) {
            continue;
        }
        let largest = match d {
            Dim::Tp => sizes.tp.max(sizes.etp),
            Dim::Pp => sizes.pp,
            Dim::Dp => dps.map_or(1, |(dp, edp)| dp.max(edp)),
            Dim::Ep => sizes.ep,
            Dim::Cp => sizes.cp,
        };
        if largest != 1 {
            return Err(missing_dimension(raw, d, sizes, dps));
        }
        if let Some(slot) = dims.get_mut(len) {
            *slot = d;
            len += 1;
        }
    }
    Ok(dims)
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (the `RuntimeError` for a missing token of size > 1).
fn missing_dimension(raw: &str, d: Dim, sizes: &MeshSizes, dps: Option<(u64, u64)>) -> Diagnostic {
    let what = match d {
        Dim::Tp => format!("tp = {} and etp = {}", sizes.tp, sizes.etp),
        Dim::Pp => format!("pp = {}", sizes.pp),
        Dim::Dp => {
            let (dp, edp) = dps.unwrap_or((1, 1));
            format!("dp = {dp} and expert dp = {edp}")
        }
        Dim::Ep => format!("ep = {}", sizes.ep),
        Dim::Cp => format!("cp = {}", sizes.cp),
    };
    Diagnostic::new(
        Code::OrderMissingDimension,
        format!(
            "order {} leaves out \"{}\" but {what}; Megatron-Core appends only dimensions of size 1",
            quoted(raw),
            d.token()
        ),
        format!("Add \"{}\" to the order, e.g. \"{DEFAULT_ORDER}\" (Megatron's default) or \"{TP_PP_DP_ORDER}\".", d.token()),
    )
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (`order + "-" + name`).
pub(crate) fn join_order(dims: &[Dim; 5]) -> String {
    dims.iter().map(|d| d.token()).collect::<Vec<_>>().join("-")
}

/// Upstream: none (quotes user text for a message, cut to 40 characters).
pub(crate) fn quoted(s: &str) -> String {
    const MAX: usize = crate::limits::MAX_QUOTED_CHARS;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut:?}…")
    }
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (order normalisation).
/// Lowercases `order`, checks every token, and appends the missing dimensions of size 1 in
/// Megatron's `name_to_size` order (tp, pp, dp, ep, cp). The data-parallel sizes are not known
/// here, so a missing "dp" is appended; [`crate::layout::build_layout`] also refuses it when dp or
/// expert dp > 1.
pub fn normalize_order(order: &str, sizes: &MeshSizes) -> Result<String, Diagnostic> {
    check_nonzero(None, sizes)?;
    let given = parse_order(order)?;
    let dims = complete_order(order, &given, sizes, None)?;
    Ok(join_order(&dims))
}

/// Upstream: none (Megatron-Core would divide by zero or build empty groups; meshplan refuses).
pub(crate) fn check_nonzero(world: Option<u64>, sizes: &MeshSizes) -> Result<(), Diagnostic> {
    let named = [
        ("world size", world.unwrap_or(1)),
        ("tp", sizes.tp),
        ("pp", sizes.pp),
        ("cp", sizes.cp),
        ("ep", sizes.ep),
        ("etp", sizes.etp),
    ];
    match named.iter().find(|(_, v)| *v == 0) {
        Some((name, _)) => Err(Diagnostic::new(
            Code::MeshSizeZero,
            format!("{name} is 0; every parallel size and the world size must be at least 1"),
            format!("Set {name} to 1 or more (1 means the dimension is not split)."),
        )),
        None => Ok(()),
    }
}
