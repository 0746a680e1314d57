//! Python launch scripts as far as their text decides a call's arguments: a call's keyword arguments across lines
//! (`llm.llama3_70b.pretrain_recipe(\n    num_nodes=nodes,\n …)`), and a name's value where the text gives it one
//! literal (`nodes = 16`, or a parameter default `def configure(nodes: int = 16)`). Nothing is executed; a name with no
//! literal, or with two different ones, is not guessed.
//!
//! Bounded: a call's arguments are read up to [`MAX_CALL_BYTES`]; a name is looked up in one pass over the text, and
//! at most [`MAX_NAME_LOOKUPS`] names per call.

/// The most names of one call looked up (each a pass over the text): a recipe call names a few.
pub(crate) const MAX_NAME_LOOKUPS: usize = 8;

/// The most bytes of one call's arguments read (a launch script's recipe call is a few hundred).
const MAX_CALL_BYTES: usize = 8 * 1024;

/// The text between the `(` at `open` and its matching `)` (quotes and nested brackets skipped), at
/// most [`MAX_CALL_BYTES`]; None when the call is not closed within that.
pub(crate) fn call_args(text: &str, open: usize) -> Option<&str> {
    let rest = text.get(open..)?;
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in rest.char_indices().take_while(|(i, _)| *i < MAX_CALL_BYTES) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') if depth == 1 => return rest.get(1..i),
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            // A comment runs to the line's end: a bracket in it is not the call's.
            (None, '#') => quote = Some('\n'),
            _ => {}
        }
    }
    None
}

/// The position of the `(` of each call of `callee` in `text` (`callee(` with nothing between).
pub(crate) fn calls<'t>(text: &'t str, callee: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(callee).map(move |(i, m)| i + m.len()).filter(move |&open| text[open..].starts_with('('))
}

/// A call's keyword arguments `(name, value)` split at its top-level commas, comments (`#` to the line's end, outside
/// quotes) left out; positional arguments are left out too.
pub(crate) fn kwargs(args: &str) -> Vec<(String, String)> {
    let mut parts = vec![String::new()];
    let (mut depth, mut quote, mut comment) = (0usize, None::<char>, false);
    for c in args.chars() {
        match (comment, quote, c) {
            (true, _, '\n') => comment = false,
            (true, ..) => continue,
            (false, Some(q), c) if c == q => quote = None,
            (false, Some(_), _) => {}
            (false, None, '#') => {
                comment = true;
                continue;
            }
            (false, None, '"' | '\'') => quote = Some(c),
            (false, None, '(' | '[' | '{') => depth += 1,
            (false, None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            (false, None, ',') if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(p) = parts.last_mut() {
            p.push(c);
        }
    }
    parts
        .iter()
        .filter_map(|p| p.split_once('=').filter(|(k, _)| is_name(k.trim())).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect()
}

/// Whether `s` is a Python identifier (ASCII).
fn is_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A literal's text: a number, or a quoted string without its quotes.
fn literal(v: &str) -> Option<&str> {
    let v = v.trim();
    let quoted = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')).or_else(|| v.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')));
    quoted.or_else(|| (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '_')).then_some(v))
}

/// A keyword argument's value as the text decides it: the literal itself, or for a name, the one literal the text
/// gives it — an assignment statement (`name = 16`, `name: int = 16`, outside any brackets) or a `def`'s parameter
/// default (`def f(name: int = 16)`), never another call's keyword argument (`g(name=16)` names g's parameter);
/// with the definition it came from. None for anything else (an expression, a name never given a literal or given
/// two different ones).
pub(crate) fn value<'t>(text: &'t str, v: &'t str) -> Option<(&'t str, Option<String>)> {
    if let Some(l) = literal(v) {
        return Some((l, None));
    }
    let name = v.trim();
    if !is_name(name) {
        return None;
    }
    let mut found: Option<&str> = None;
    for i in definitions(text, name) {
        let after = text[i + name.len()..].trim_start_matches([' ', '\t']);
        let after = match after.strip_prefix(':') {
            Some(annotated) => annotated.trim_start_matches([' ', '\t']).trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.').trim_start_matches([' ', '\t']),
            None => after,
        };
        let Some(rhs) = after.strip_prefix('=').filter(|r| !r.starts_with('=')) else { continue };
        let end = rhs.find([',', ')', '\n', '#']).unwrap_or(rhs.len());
        let Some(lit) = literal(&rhs[..end]) else { continue };
        match found {
            Some(l) if l != lit => return None,
            _ => found = Some(lit),
        }
    }
    found.map(|l| (l, Some(format!("{name} = {l}"))))
}

/// Where `name` stands as a whole word at a place a definition can be: a statement's start outside brackets, or
/// inside a `def`'s parameter list (one pass over the text, quotes and comments skipped).
fn definitions(text: &str, name: &str) -> Vec<usize> {
    let mut out = Vec::new();
    // Per open bracket, whether it is a `def`'s parameter list.
    let mut stack: Vec<bool> = Vec::new();
    let (mut quote, mut comment, mut line_start) = (None::<u8>, false, true);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match (comment, quote) {
            (true, _) => comment = c != b'\n',
            (false, Some(q)) => quote = (c != q).then_some(q),
            (false, None) => match c {
                b'#' => comment = true,
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => {
                    let head = text[..i].trim_end();
                    // The text before the callee's name (trimmed by characters: the byte before it may end a
                    // multi-byte one).
                    let before = head.trim_end_matches(|ch: char| ch.is_ascii_alphanumeric() || ch == '_');
                    stack.push(c == b'(' && before.trim_end().ends_with("def"));
                    if stack.len() > 64 {
                        return out;
                    }
                }
                b')' | b']' | b'}' => {
                    stack.pop();
                }
                // An ASCII byte is a character boundary (UTF-8 never reuses one inside a character).
                _ if c.is_ascii() && text[i..].starts_with(name) => {
                    let whole = !text[..i].ends_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')
                        && !text[i + name.len()..].starts_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_');
                    let place = match stack.last() {
                        Some(&is_def) => is_def,
                        None => line_start,
                    };
                    if whole && place {
                        out.push(i);
                    }
                }
                _ => {}
            },
        }
        if c == b'\n' {
            line_start = true;
        } else if !c.is_ascii_whitespace() {
            line_start = false;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_keyword_arguments_across_lines_and_a_names_one_literal() {
        let text = "def configure(nodes: int = 16, gpus=8):\n    r = llm.x.pretrain_recipe(\n        name=\"a,b\",  # a comment, with a comma\n        num_nodes=nodes,\n        num_gpus_per_node=gpus,\n        seq=f(1, 2),\n    )\n";
        let open = calls(text, ".pretrain_recipe").next().unwrap();
        let args = kwargs(call_args(text, open).unwrap());
        let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(args, vec![("name", "\"a,b\""), ("num_nodes", "nodes"), ("num_gpus_per_node", "gpus"), ("seq", "f(1, 2)")]);
        assert_eq!(value(text, "nodes"), Some(("16", Some("nodes = 16".into()))));
        assert_eq!(value(text, "gpus"), Some(("8", Some("gpus = 8".into()))));
        assert_eq!(value(text, "\"a,b\""), Some(("a,b", None)));
        assert_eq!(value(text, "f(1, 2)"), None);
        // Two different literals: not guessed.
        assert_eq!(value("n = 4\nn = 8\nf(n)", "n"), None);
        // A comparison is no definition, nor another call's keyword argument; an unclosed call is not read.
        assert_eq!(value("if n == 4: pass", "n"), None);
        assert_eq!(value("g(n=4)\nf(n)", "n"), None);
        assert_eq!(value("x = g(\n    n=4,\n)\nn = 2\n", "n"), Some(("2", Some("n = 2".into()))));
        assert_eq!(call_args("f(a=1", 1), None);
        // A bracket in a comment is not the call's.
        assert_eq!(call_args("f(a=1,  # see (docs\n b=2)", 1), Some("a=1,  # see (docs\n b=2"));
    }

    #[test]
    fn a_bracket_after_a_multi_byte_character_is_read_without_slicing_inside_it() {
        // The import fuzz's find: a bracket right after U+200F (three bytes) sliced inside the character.
        assert_eq!(value("\u{202e}\u{200f}(n)\nn = 3", "n"), Some(("3", Some("n = 3".into()))));
        assert_eq!(value("def\u{200f}(n=2): pass", "n"), None);
        assert_eq!(value("x = '\u{200f}'\ndef f(n=2): pass", "n"), Some(("2", Some("n = 2".into()))));
    }
}
