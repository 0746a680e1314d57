//! Shell text as words: the part of POSIX shell a launch script uses — comments, `\` line continuations, single and
//! double quotes, `NAME=value` and `NAME=( … )` assignments, and `$NAME`, `${NAME}`, `${NAME[@]}` expansions of the
//! names the text itself assigned (`${NAME:-default}` with the default expanded too, nested up to
//! [`MAX_DEFAULT_DEPTH`]). Nothing is executed: `$(…)` and names the text does not assign stay as written.
//!
//! What a Slurm launch script sizes is read too: `#SBATCH` directive lines give their words (`--nodes=8`), a
//! `for NAME in …` loop reads its first value (a script that runs several configurations runs the first one first;
//! a note says how many there were), and `read [-r] A B … <<< VALUE` splits VALUE on `IFS` (when the text sets it)
//! into the names.
//!
//! Bounded: at most [`MAX_WORDS`] words come out, however the assignments expand (an array that doubles itself each
//! line stops there).

/// The most words one text yields (a long Megatron-LM script has ~300).
pub const MAX_WORDS: usize = 100_000;

/// The most `${A:-${B:-…}}` defaults expanded inside one another; a deeper one stays as written.
pub const MAX_DEFAULT_DEPTH: usize = 8;

/// The most bytes all expansions of one text may produce together (2 MiB, twice the largest text read); past it, `$NAME` stays as written.
pub const MAX_EXPANDED_BYTES: usize = 2 << 20;

/// A word and whether any part of it was quoted (a quoted `--x` is still a flag; a quoted `A=b` is not an assignment).
#[derive(Clone, Debug, PartialEq)]
struct Word {
    text: String,
    quoted: bool,
    /// Whether the word begins with a quote (then `"A=b"` is a word, not an assignment).
    starts_quoted: bool,
}

/// Splits `text` into words: `\` + newline joins lines, `#` at a word's start comments out the rest of the line,
/// quotes group, and an unquoted newline or `;` `|` `&` ends a command (given back as the word "\n").
fn split(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut starts_quoted = false;
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let push = |out: &mut Vec<Word>, cur: &mut String, quoted: &mut bool, in_word: &mut bool, starts: &mut bool| {
        if *in_word {
            out.push(Word { text: std::mem::take(cur), quoted: *quoted, starts_quoted: *starts });
        }
        *quoted = false;
        *in_word = false;
        *starts = false;
    };
    while let Some(c) = chars.next() {
        if out.len() >= MAX_WORDS {
            break;
        }
        match c {
            '\\' => match chars.next() {
                Some('\n') => {}
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                }
                Some(n) => {
                    cur.push(n);
                    in_word = true;
                }
                None => {}
            },
            '#' if !in_word => {
                let mut comment = String::new();
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                    comment.push(n);
                }
                push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
                // `#SBATCH --nodes=8` at a line's start: a directive, whose words size the job.
                let line_start = out.last().is_none_or(|w: &Word| w.text == "\n");
                // Its own trailing comment (`--gpus-per-node=8  # 4 on GB200`) is not part of it.
                if let (true, Some(directive)) = (line_start, comment.strip_prefix("SBATCH").map(|d| d.split(" #").next().unwrap_or(""))) {
                    let room = MAX_WORDS.saturating_sub(out.len());
                    out.extend(directive.split_whitespace().take(room).map(|t| Word { text: t.to_string(), quoted: false, starts_quoted: false }));
                }
                out.push(Word { text: "\n".into(), quoted: false, starts_quoted: false });
            }
            '\'' => {
                starts_quoted |= !in_word;
                in_word = true;
                quoted = true;
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    cur.push(n);
                }
            }
            '"' => {
                starts_quoted |= !in_word;
                in_word = true;
                quoted = true;
                while let Some(n) = chars.next() {
                    match n {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => cur.extend(chars.next()),
                        _ => cur.push(n),
                    }
                }
            }
            '\n' | ';' | '|' | '&' => {
                push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
                out.push(Word { text: "\n".into(), quoted: false, starts_quoted: false });
            }
            '(' | ')' if !in_word || cur.ends_with('=') => {
                // `NAME=(` opens an array; a lone `(` or `)` is a word of its own.
                if c == '(' && cur.ends_with('=') {
                    cur.push('(');
                    push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
                } else {
                    push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
                    out.push(Word { text: c.to_string(), quoted: false, starts_quoted: false });
                }
            }
            ')' => {
                push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
                out.push(Word { text: ")".into(), quoted: false, starts_quoted: false });
            }
            c if c.is_whitespace() => push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted),
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    push(&mut out, &mut cur, &mut quoted, &mut in_word, &mut starts_quoted);
    out
}

/// The name of an assignment word `NAME=…` or `NAME+=…` (an identifier before the first `=`), and whether it appends.
fn assignment(w: &Word) -> Option<(&str, &str, bool)> {
    let (name, value) = w.text.split_once('=')?;
    let (name, append) = match name.strip_suffix('+') {
        Some(n) => (n, true),
        None => (name, false),
    };
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit());
    ident.then_some((name, value, append))
}

/// Expands `$NAME`, `${NAME}`, `${NAME[@]}` and `${NAME[*]}` of the assigned names in `s` (an array expands to its
/// words joined by spaces, which the caller splits again when unquoted).
fn expand(s: &str, vars: &[(String, Vec<String>)], budget: &mut usize, expanded: &mut Vec<String>) -> String {
    expand_at(s, vars, budget, expanded, 0)
}

/// The index of the `}` closing a `${` whose inside starts `inner`, counting nested `${ … }`.
fn closing_brace(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = inner.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn expand_at(s: &str, vars: &[(String, Vec<String>)], budget: &mut usize, expanded: &mut Vec<String>, depth: usize) -> String {
    let lookup = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let mut default = None;
        let (name, used) = if let Some(inner) = after.strip_prefix('{') {
            match closing_brace(inner) {
                Some(end) => {
                    let mut name = inner[..end].trim_end_matches("[@]").trim_end_matches("[*]");
                    // `${NAME:-default}`: the default when the text does not assign NAME.
                    if let Some((n, d)) = name.split_once(":-") {
                        name = n;
                        default = Some(d.trim_matches('"').trim_matches('\''));
                    }
                    (name, end + 2)
                }
                None => ("", 0),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], end)
        };
        let size = |v: &Vec<String>| v.iter().map(|w| w.len() + 1).sum::<usize>();
        match lookup(name).filter(|v| !name.is_empty() && size(v) <= *budget) {
            Some(v) => {
                if !expanded.iter().any(|u| u == name) {
                    expanded.push(name.to_string());
                }
                *budget -= size(v);
                out.push_str(&v.join(" "));
            }
            None => match default {
                Some(d) if d.contains('$') && depth < MAX_DEFAULT_DEPTH => out.push_str(&expand_at(d, vars, budget, expanded, depth + 1)),
                Some(d) => out.push_str(d),
                None => out.push_str(&rest[i..i + 1 + used]),
            },
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// The words of a shell text after its own assignments are expanded, assignments themselves left out (the words of an
/// array no command expands come last); a command boundary is the word "\n".
pub fn words(text: &str) -> Vec<String> {
    words_noted(text).0
}

/// [`words`], and notes on what was read of the text's loops.
pub fn words_noted(text: &str) -> (Vec<String>, Vec<String>) {
    let raw = split(text);
    let mut notes: Vec<String> = Vec::new();
    let mut vars: Vec<(String, Vec<String>)> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let mut budget = MAX_EXPANDED_BYTES;
    let mut used: Vec<String> = Vec::new();
    let mut arrays: Vec<String> = Vec::new();
    let set = |vars: &mut Vec<(String, Vec<String>)>, name: String, mut items: Vec<String>| {
        items.truncate(MAX_WORDS);
        match vars.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = items,
            None => vars.push((name, items)),
        }
    };
    let mut i = 0;
    while i < raw.len() && out.len() < MAX_WORDS {
        let w = &raw[i];
        i += 1;
        let at_command_start = out.last().is_none_or(|l| l == "\n");
        if let (false, true, Some((name, value, append))) = (w.starts_quoted, at_command_start, assignment(w)) {
            let name = name.to_string();
            let before: Vec<String> = if append { vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap_or_default() } else { Vec::new() };
            if value == "(" {
                // An array: words up to the closing `)`.
                let mut items = before;
                while i < raw.len() && raw[i].text != ")" && items.len() < MAX_WORDS {
                    let t = &raw[i].text;
                    if t != "\n" {
                        let e = expand(t, &vars, &mut budget, &mut used);
                        if raw[i].quoted { items.push(e) } else { items.extend(e.split_whitespace().take(MAX_WORDS).map(str::to_string)) }
                    }
                    i += 1;
                }
                i += 1;
                if !arrays.contains(&name) {
                    arrays.push(name.clone());
                }
                set(&mut vars, name, items);
            } else {
                let v = expand(value, &vars, &mut budget, &mut used);
                let v = if append { before.join(" ") + &v } else { v };
                set(&mut vars, name, vec![v]);
            }
            continue;
        }
        if w.text.starts_with("export") && !w.quoted {
            continue;
        }
        if at_command_start && !w.quoted && (w.text == "for" || w.text == "read") {
            // The command's words up to its end.
            let end = raw[i..].iter().position(|x| x.text == "\n").map_or(raw.len(), |p| i + p);
            let args: Vec<String> = raw[i..end].iter().map(|x| expand(&x.text, &vars, &mut budget, &mut used)).collect();
            if w.text == "for" {
                // `for NAME in A B C`: NAME is A (the first run of the loop's body; the body's words follow once).
                if let [name, kw, values @ ..] = args.as_slice() {
                    let items: Vec<&str> = values.iter().flat_map(|v| v.split_whitespace()).collect();
                    // A list the text cannot know (`$(seq 1 10)`, an unset name) is left alone.
                    let known = items.iter().all(|v| !v.contains('$') && !v.contains('`'));
                    if let (true, true, Some(first)) = (kw == "in", known, items.first()) {
                        if items.len() > 1 {
                            notes.push(format!("`for {name} in …` runs {} configurations; the first, {name}={first}, is read", items.len()));
                        }
                        set(&mut vars, name.clone(), vec![first.to_string()]);
                    }
                }
            } else {
                // `read [-r] A B … <<< VALUE`: VALUE split on IFS (the text's, else white space), the last name
                // taking the rest.
                if let Some(at) = args.iter().position(|a| a == "<<<") {
                    let names: Vec<&String> = args[..at].iter().filter(|a| !a.starts_with('-')).collect();
                    let value = args.get(at + 1).cloned().unwrap_or_default();
                    let ifs: Vec<char> = vars.iter().find(|(n, _)| n == "IFS").and_then(|(_, v)| v.first()).map_or_else(Vec::new, |v| v.chars().collect());
                    let parts: Vec<&str> = if ifs.is_empty() { value.split_whitespace().collect() } else { value.split(|c| ifs.contains(&c)).collect() };
                    for (k, name) in names.iter().enumerate() {
                        let part = if k + 1 == names.len() { parts.get(k..).map(|p| p.join(",")).unwrap_or_default() } else { parts.get(k).map_or(String::new(), |p| p.to_string()) };
                        set(&mut vars, name.to_string(), vec![part]);
                    }
                }
            }
            i = end;
            continue;
        }
        let e = expand(&w.text, &vars, &mut budget, &mut used);
        if w.quoted || e == "\n" {
            out.push(e);
        } else {
            let room = MAX_WORDS.saturating_sub(out.len());
            out.extend(e.split_whitespace().take(room).map(str::to_string));
        }
    }
    // An array no command expands (`MEGATRON_ARGS=( … )` pasted alone) is still what the text says: its words follow,
    // as one more command.
    for name in arrays.iter().filter(|a| !used.contains(a)) {
        if let Some((_, items)) = vars.iter().find(|(n, _)| n == name) {
            out.push("\n".into());
            out.extend(items.iter().cloned());
        }
    }
    out.truncate(MAX_WORDS);
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_variables_quotes_and_continuations() {
        let text = "GPUS=8\nARGS=(\n  --tp $GPUS # comment\n  --name 'a b'\n)\ntorchrun --nproc_per_node $GPUS x.py \\\n  ${ARGS[@]} --y \"q\\\"\"\n";
        let w = words(text);
        let flat: Vec<&str> = w.iter().map(String::as_str).filter(|s| *s != "\n").collect();
        // Unquoted `${ARGS[@]}` splits each item again, as bash does: 'a b' becomes two words.
        assert_eq!(flat, ["torchrun", "--nproc_per_node", "8", "x.py", "--tp", "8", "--name", "a", "b", "--y", "q\""]);
    }

    #[test]
    fn assignments_with_quoted_defaults() {
        let w = words("S=${S:-\"optim\"}\nrun --x ${S} \"A=b\"\n");
        let flat: Vec<&str> = w.iter().map(String::as_str).filter(|s| *s != "\n").collect();
        assert_eq!(flat, ["run", "--x", "optim", "A=b"]);
    }

    /// The shape of Megatron Bridge's examples/models/*/slurm_pretrain.sh: `#SBATCH` sizes, an array of "TP,PP,EP"
    /// configurations looped over and split by `read` on `IFS=','`, a default that names another variable.
    #[test]
    fn slurm_directives_loops_read_and_nested_defaults() {
        let text = "#!/bin/bash\n#SBATCH --nodes=8\n#SBATCH --gpus-per-node=8  # 4 on GB200\n# not #SBATCH --nodes=1\nM=gpt\nR=\"${R:-${M}_cfg}\"\nC=(\"2,4,4\" \"4,2,1\")\nfor X in \"${C[@]}\"; do\n    IFS=',' read -r TP PP EP <<< \"$X\"\n    run --recipe $R tp=$TP pp=$PP ep=$EP\ndone\n";
        let (w, notes) = words_noted(text);
        let flat: Vec<&str> = w.iter().map(String::as_str).filter(|s| *s != "\n").collect();
        assert_eq!(flat, ["--nodes=8", "--gpus-per-node=8", "do", "run", "--recipe", "gpt_cfg", "tp=2", "pp=4", "ep=4", "done"]);
        assert_eq!(notes, ["`for X in …` runs 2 configurations; the first, X=2,4,4, is read"]);
    }

    #[test]
    fn nested_defaults_stop_at_their_depth() {
        let deep = format!("A={}x{}\nrun $A\n", "${Q:-".repeat(10_000), "}".repeat(10_000));
        assert!(words(&deep).len() <= MAX_WORDS);
    }

    #[test]
    fn self_doubling_arrays_stop_at_the_bound() {
        let mut text = String::from("A=(x)\n");
        for _ in 0..40 {
            text.push_str("A=(${A[@]} ${A[@]})\n");
        }
        text.push_str("run ${A[@]}\n");
        assert!(words(&text).len() <= MAX_WORDS);
    }
}
