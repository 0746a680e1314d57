//! Shell text as the words a launch script runs, evaluated as far as the text decides them: comments, `\` line
//! continuations, quotes; variables (`NAME=value`, `export`/`declare`/`local`, arrays `NAME=( … )` and `+=`),
//! expansions `$NAME` `${NAME}` `${NAME[@]}` `${#NAME[@]}` `${NAME:-d}` `${NAME-d}` `${NAME:=d}` `${NAME:+x}` (nested
//! defaults up to [`MAX_DEFAULT_DEPTH`]), arithmetic `$(( ))`; `if`/`elif`/`else` and `while` on conditions the text
//! decides (`[ ]`, `[[ ]]`, `test`, `(( ))`) and `case` (glob patterns, `|`) take the branch bash would take; a `for`
//! loop reads its first value (a note names the others); `VAR=value cmd` prefixes; a wrapper invoked with settings
//! (`TP=2 PP=8 bash run.sh` or `sh run.sh dsw 7B …`, the text's first or last command) gives the script its
//! environment and positional parameters (`$1`, `${10}`, `$@`, `$#`, `shift`). Nothing is executed.
//!
//! What the text does not decide is said, never guessed silently: a positional parameter no one gave is a note
//! "unset: `$3` (give it)" and stays as written; a `source`d file is named; a condition, `$( )` or `$(( ))` it
//! cannot evaluate is listed with its line (an undecided `if` reads its first branch, and says so).
//!
//! Slurm: `#SBATCH` directive lines give their words (`--nodes=8`, `-N 8` as `--nodes=8`) and set the variables Slurm
//! sets in the job (`$SLURM_NNODES`, …); `read [-r] A B … <<< VALUE` splits VALUE on `IFS`.
//!
//! Bounded: at most [`MAX_WORDS`] words come out, expansions produce at most [`MAX_EXPANDED_BYTES`] in all; names
//! are looked up in a map, so the reading is linear in the text (issue 20: a list made 40,000 `export` lines 3.2 s).

mod eval;

pub use crate::limits::{MAX_SHELL_DEFAULT_DEPTH as MAX_DEFAULT_DEPTH, MAX_SHELL_EXPANDED_BYTES as MAX_EXPANDED_BYTES, MAX_SHELL_WORDS as MAX_WORDS};
use std::collections::{HashMap, HashSet};

/// The most words of the text itself read (a 1 MiB text has at most 2^19 words and as many separators).
const MAX_RAW_WORDS: usize = crate::limits::MAX_PLAN_BYTES;

/// The most "not evaluated" places one note lists (the rest are counted).
const MAX_LISTED: usize = 12;

/// A word, whether any part of it was quoted (a quoted `--x` is still a flag; a quoted `A=b` is not an assignment), and
/// its line. An operator (`\n` for a newline or `;`, `;;`, `&&`, `||`, `|`) has `op` set.
#[derive(Clone, Debug, PartialEq)]
struct Word {
    text: String,
    quoted: bool,
    /// Whether the word begins with a quote (then `"A=b"` is a word, not an assignment).
    starts_quoted: bool,
    op: bool,
    line: u32,
    /// The items of an array assignment `NAME=( … )` (the word is `NAME=(`).
    items: Vec<Word>,
    /// Whether it is a word of an `#SBATCH` directive.
    directive: bool,
}

impl Word {
    fn new(text: impl Into<String>, line: u32) -> Word {
        Word { text: text.into(), quoted: false, starts_quoted: false, op: false, line, items: Vec::new(), directive: false }
    }
    fn op(text: &str, line: u32) -> Word {
        Word { op: true, ..Word::new(text, line) }
    }
    /// An unquoted word equal to `kw`.
    fn is(&self, kw: &str) -> bool {
        !self.op && !self.quoted && self.text == kw
    }
}

/// The text from an opening `(` (already read) to its matching `)`, quotes respected; `$(( 8 * 1 ))` stays one word.
fn balanced(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, cur: &mut String, line: &mut u32) {
    let mut depth = 1usize;
    let mut quote: Option<char> = None;
    for n in chars.by_ref() {
        cur.push(n);
        *line += u32::from(n == '\n');
        match (quote, n) {
            (Some(q), n) if n == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(n),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            _ => {}
        }
    }
}

/// Splits `text` into words: `\` + newline joins lines, `#` at a word's start comments out the rest of the line,
/// quotes group, `$( … )` and `$(( … ))` stay in their word, and `\n` `;` `&` end a command (the operator word "\n");
/// `;;`, `&&`, `||` and `|` are operator words of their own.
fn split(text: &str) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut w = Word::new("", 1);
    let mut in_word = false;
    let mut line = 1u32;
    let mut chars = text.chars().peekable();
    let push = |out: &mut Vec<Word>, w: &mut Word, in_word: &mut bool, line: u32| {
        if *in_word {
            out.push(std::mem::replace(w, Word::new("", line)));
        } else {
            *w = Word::new("", line);
        }
        *in_word = false;
    };
    while let Some(c) = chars.next() {
        // The text's own words: at most one per two bytes of a text the import bounds (MAX_PLAN_BYTES); the words
        // that come out are bounded by MAX_WORDS.
        if out.len() >= MAX_RAW_WORDS {
            break;
        }
        if !in_word {
            w.line = line;
        }
        match c {
            '\\' => match chars.next() {
                Some('\n') => line += 1,
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                    line += 1;
                }
                Some(n) => {
                    w.text.push(n);
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
                push(&mut out, &mut w, &mut in_word, line);
                // `#SBATCH --nodes=8` at a line's start: a directive, whose words size the job.
                let line_start = out.last().is_none_or(|w: &Word| w.op);
                // Its own trailing comment (`--gpus-per-node=8  # 4 on GB200`) is not part of it.
                if let (true, Some(directive)) = (line_start, comment.strip_prefix("SBATCH").map(|d| d.split(" #").next().unwrap_or(""))) {
                    let room = MAX_RAW_WORDS.saturating_sub(out.len());
                    let words: Vec<&str> = directive.split_whitespace().take(room).collect();
                    out.extend(super::launchers::sizing(super::launchers::Launcher::Slurm, &words).0.into_iter().map(|t| Word { directive: true, ..Word::new(t, line) }));
                }
                out.push(Word::op("\n", line));
                line += 1;
            }
            '\'' => {
                w.starts_quoted |= !in_word;
                in_word = true;
                w.quoted = true;
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    line += u32::from(n == '\n');
                    w.text.push(n);
                }
            }
            '"' => {
                w.starts_quoted |= !in_word;
                in_word = true;
                w.quoted = true;
                while let Some(n) = chars.next() {
                    match n {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => w.text.extend(chars.next()),
                        '\\' if chars.peek() == Some(&'\n') => {
                            chars.next();
                            line += 1;
                        }
                        '$' if chars.peek() == Some(&'(') => {
                            w.text.push('$');
                            w.text.extend(chars.next());
                            balanced(&mut chars, &mut w.text, &mut line);
                        }
                        _ => {
                            line += u32::from(n == '\n');
                            w.text.push(n);
                        }
                    }
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                w.text.push('$');
                w.text.extend(chars.next());
                balanced(&mut chars, &mut w.text, &mut line);
                in_word = true;
            }
            '\n' | ';' | '|' | '&' => {
                push(&mut out, &mut w, &mut in_word, line);
                let op = match (c, chars.peek()) {
                    (';', Some(';')) => ";;",
                    ('&', Some('&')) => "&&",
                    ('|', Some('|')) => "||",
                    ('|', _) => "|",
                    _ => "\n",
                };
                if op.len() == 2 {
                    chars.next();
                }
                out.push(Word::op(op, line));
                line += u32::from(c == '\n');
            }
            '(' | ')' if !in_word || w.text.ends_with('=') => {
                // `NAME=(` opens an array; a lone `(` or `)` is a word of its own.
                if c == '(' && w.text.ends_with('=') {
                    w.text.push('(');
                    push(&mut out, &mut w, &mut in_word, line);
                } else {
                    push(&mut out, &mut w, &mut in_word, line);
                    out.push(Word::new(c.to_string(), line));
                }
            }
            ')' => {
                push(&mut out, &mut w, &mut in_word, line);
                out.push(Word::new(")", line));
            }
            c if c.is_whitespace() => push(&mut out, &mut w, &mut in_word, line),
            c => {
                w.text.push(c);
                in_word = true;
            }
        }
    }
    push(&mut out, &mut w, &mut in_word, line);
    arrays(out)
}

/// Folds each array assignment's items (`NAME=(` up to its `)`, newlines inside it aside) into its word.
fn arrays(raw: Vec<Word>) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::with_capacity(raw.len());
    let mut it = raw.into_iter();
    while let Some(mut w) = it.next() {
        if !w.starts_quoted && !w.op && w.text.ends_with("=(") {
            for x in it.by_ref() {
                if x.is(")") {
                    break;
                }
                if !x.op {
                    w.items.push(x);
                }
            }
        }
        out.push(w);
    }
    out
}

/// The name of an assignment word `NAME=…` or `NAME+=…` (an identifier before the first `=`), its value, and whether it
/// appends.
fn assignment(w: &Word) -> Option<(&str, &str, bool)> {
    if w.starts_quoted || w.op {
        return None;
    }
    let (name, value) = w.text.split_once('=')?;
    let (name, append) = match name.strip_suffix('+') {
        Some(n) => (n, true),
        None => (name, false),
    };
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit());
    ident.then_some((name, value, append))
}

/// The index of the `}` closing a `${` whose inside starts `inner`, counting nested `${ … }`.
/// For each `${` of `s`, the byte offset of its `{` mapped to that of the `}` that closes it (the `}` at which the
/// `${` opened after it have all closed, as [`closing_brace`] finds it from the `{`): one pass, a stack of the open
/// ones. Empty (no allocation) for a text without `${`.
fn brace_pairs(s: &str) -> HashMap<usize, usize> {
    let mut pairs = HashMap::new();
    if !s.contains("${") {
        return pairs;
    }
    let bytes = s.as_bytes();
    let mut open = Vec::new();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'{' if i > 0 && bytes[i - 1] == b'$' => open.push(i),
            b'}' => {
                if let Some(o) = open.pop() {
                    pairs.insert(o, i);
                }
            }
            _ => {}
        }
    }
    pairs
}

/// The closing brace of the `${` whose text after the `{` is `inner`, scanned from there: what [`brace_pairs`] must
/// find for every `${` (the test oracle; the reader pairs them in one pass).
#[cfg(test)]
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

/// An open `if`, `case` or loop: whether the text around it runs (`outer`) and whether its current part does.
#[derive(Debug)]
enum Frame {
    If { outer: bool, taking: bool, done: bool },
    Case { outer: bool, word: String, taking: bool, done: bool, in_branch: bool },
    Loop { outer: bool, taking: bool },
}

impl Frame {
    fn active(&self) -> bool {
        match self {
            Frame::If { outer, taking, .. } | Frame::Loop { outer, taking } => *outer && *taking,
            Frame::Case { outer, taking, in_branch, .. } => *outer && *taking && *in_branch,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Cond {
    If,
    Elif,
    While,
    Until,
}

/// A condition being read: its commands up to `then` / `do`, each with the operator after it.
struct Pending {
    kind: Cond,
    parts: Vec<(Vec<Word>, String)>,
    line: u32,
}

#[derive(Default)]
struct Shell {
    vars: HashMap<String, Vec<String>>,
    arrays: Vec<String>,
    used: HashSet<String>,
    /// `$1` … as the wrapper's command line gives them; None when no command line is in the text.
    positional: Option<Vec<String>>,
    out: Vec<String>,
    notes: Vec<String>,
    unset_noted: HashSet<String>,
    skipped: Vec<String>,
    skipped_more: usize,
    budget: usize,
    frames: Vec<Frame>,
    pending: Option<Pending>,
    case_pats: Vec<String>,
}

/// The words of a shell text as it runs them, its own assignments left out (the words of an array no command
/// expands come last); a command boundary is the word "\n".
pub fn words(text: &str) -> Vec<String> {
    words_noted(text).0
}

/// [`words`], and notes on what the reading assumed or could not evaluate.
pub fn words_noted(text: &str) -> (Vec<String>, Vec<String>) {
    let (words, notes, _) = words_env(text, |_| false);
    (words, notes)
}

/// [`words_noted`], and the value each variable named by `keep` has once the text has run (its first word, by name:
/// a configuration script that only exports settings, as NVIDIA's MLPerf `config_*.sh` do, says everything there).
pub fn words_env(text: &str, keep: impl Fn(&str) -> bool) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
    let raw = split(text);
    let mut sh = Shell { budget: MAX_EXPANDED_BYTES, ..Shell::default() };
    sh.wrapper(&raw, text);
    // The job's environment, as Slurm sets it from the directives (a wrapper's own settings first).
    for (name, value) in slurm_environment(&raw) {
        sh.vars.entry(name.to_string()).or_insert_with(|| vec![value]);
    }
    let mut cmd: Vec<Word> = Vec::new();
    for w in &raw {
        if sh.out.len() >= MAX_WORDS {
            break;
        }
        if !w.op {
            cmd.push(w.clone());
            continue;
        }
        sh.dispatch(&cmd, &w.text);
        cmd.clear();
    }
    sh.dispatch(&cmd, "\n");
    let mut env: Vec<(String, String)> =
        sh.vars.iter().filter(|(name, _)| keep(name)).map(|(name, v)| (name.clone(), v.first().cloned().unwrap_or_default())).collect();
    env.sort_unstable();
    let (words, mut notes) = sh.finish();
    notes.extend(super::launchers::directives_note(text));
    (words, notes, env)
}

impl Shell {
    fn active(&self) -> bool {
        self.frames.last().is_none_or(Frame::active)
    }

    fn skipped(&mut self, line: u32, what: String) {
        if self.skipped.len() < MAX_LISTED {
            self.skipped.push(format!("line {line}: {what}"));
        } else {
            self.skipped_more += 1;
        }
    }

    /// The wrapper invocation — the text's first or last command, running a script with settings in its environment
    /// or arguments (`TP=2 PP=8 bash run.sh`, `sh run.sh dsw 7B …`) that the rest of the text reads (`${TP:-1}`,
    /// `$1`) — applied as the script's environment and positional parameters (its words are read as well).
    fn wrapper(&mut self, raw: &[Word], text: &str) -> Option<()> {
        let mut cmds: Vec<(usize, usize)> = Vec::new();
        let mut start = None;
        for (i, w) in raw.iter().enumerate() {
            match (w.op, start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    cmds.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            cmds.push((s, raw.len()));
        }
        if cmds.len() < 2 {
            return None;
        }
        let is_wrapper = |&(s, e): &(usize, usize)| {
            let ws = &raw[s..e];
            let p = prompt_words(ws);
            let n = p + ws[p..].iter().take_while(|w| assignment(w).is_some()).count();
            let rest = &ws[n..];
            let runner = rest.first().is_some_and(|w| ["bash", "sh", "zsh", "sbatch", "source", "."].iter().any(|r| w.is(r)));
            let script_at = usize::from(runner);
            let script = rest.get(script_at).is_some_and(|w| !w.text.starts_with('-') && [".sh", ".bash", ".sbatch", ".slurm"].iter().any(|x| w.text.ends_with(x)));
            let args = rest.len() > script_at + 1 && ["$1", "${1", "$@", "$*"].iter().any(|p| text.contains(p));
            let env = ws[..n].iter().filter_map(assignment).any(|(name, _, _)| text.contains(&format!("${name}")) || text.contains(&format!("${{{name}")));
            (script && (env || args)).then_some((n, script_at))
        };
        let (&(s, e), (n, script_at)) = [cmds[0], cmds[cmds.len() - 1]].iter().find_map(|c| is_wrapper(c).map(|x| (c, x)))?;
        let ws = &raw[s..e];
        let mut env = Vec::new();
        for w in ws[..n].iter().filter(|w| assignment(w).is_some()) {
            self.assign(w);
            env.push(w.text.clone());
        }
        let args: Vec<String> = ws[n + script_at + 1..].iter().map(|w| self.expand(&w.text, w.line)).collect();
        let shown: Vec<String> = ws.iter().map(|w| w.text.clone()).collect();
        let mut said = format!("line {}: `{}` runs the script with", ws[0].line, clip(&shown.join(" ")));
        if !env.is_empty() {
            said.push_str(&format!(" the environment {}", env.join(", ")));
        }
        if !args.is_empty() {
            let list: Vec<String> = args.iter().enumerate().take(MAX_LISTED).map(|(i, a)| format!("${}={a}", i + 1)).collect();
            said.push_str(&format!("{} the arguments {}", if env.is_empty() { "" } else { " and" }, list.join(", ")));
            self.positional = Some(args);
        }
        self.notes.push(said + ": read as the script's");
        Some(())
    }

    /// One command and the operator after it.
    fn dispatch(&mut self, cmd: &[Word], sep: &str) {
        let mut at = 0usize;
        loop {
            let c = &cmd[at.min(cmd.len())..];
            if let Some(p) = self.pending.as_mut() {
                if c.is_empty() {
                    return;
                }
                if c.first().is_some_and(|w| w.is("then") || w.is("do")) {
                    let p = self.pending.take();
                    self.open(p);
                    at += 1;
                    continue;
                }
                p.parts.push((c.to_vec(), sep.to_string()));
                return;
            }
            let Some(w0) = c.first() else { break };
            if matches!(self.frames.last(), Some(Frame::Case { in_branch: false, .. })) && !w0.is("esac") {
                match self.case_pattern(c, sep) {
                    Some(next) => {
                        at += next;
                        continue;
                    }
                    None => return,
                }
            }
            match self.keyword(c, sep) {
                Some(_) if self.pending.is_some() => return,
                Some(next) => at += next,
                None => {
                    if self.active() {
                        self.simple(c);
                    }
                    break;
                }
            }
        }
        if sep == ";;" {
            if let Some(Frame::Case { in_branch, taking, .. }) = self.frames.last_mut() {
                *in_branch = false;
                *taking = false;
            }
        }
    }

    /// A `case` item's patterns (`a|b)`, up to the `)`): whether the case word matches; the words read.
    fn case_pattern(&mut self, c: &[Word], sep: &str) -> Option<usize> {
        let Some(close) = c.iter().position(|w| w.is(")")) else {
            // `a|b)`: the `|` split the patterns into commands; keep them for the `)`.
            if sep == "|" {
                self.case_pats.extend(c.iter().filter(|w| !w.is("(")).map(|w| w.text.clone()));
            }
            return None;
        };
        let pats: Vec<String> = self.case_pats.drain(..).chain(c[..close].iter().filter(|w| !w.is("(")).map(|w| w.text.clone())).collect();
        let line = c[0].line;
        let pats: Vec<String> = pats.iter().map(|p| self.expand(p, line)).collect();
        if let Some(Frame::Case { outer, word, taking, done, in_branch }) = self.frames.last_mut() {
            let hit = !*done && *outer && pats.iter().any(|p| eval::glob(p, word));
            *taking = hit;
            *done |= hit;
            *in_branch = true;
        }
        Some(close + 1)
    }

    /// A keyword at the command's start: what it opens or closes, and how many words it used; None for a command.
    fn keyword(&mut self, c: &[Word], sep: &str) -> Option<usize> {
        let w0 = &c[0];
        let kind = match () {
            _ if w0.is("if") => Some(Cond::If),
            _ if w0.is("elif") => Some(Cond::Elif),
            _ if w0.is("while") => Some(Cond::While),
            _ if w0.is("until") => Some(Cond::Until),
            _ => None,
        };
        if let Some(kind) = kind {
            self.pending = Some(Pending { kind, parts: vec![(c[1..].to_vec(), sep.to_string())], line: w0.line });
            return Some(c.len());
        }
        if w0.is("then") || w0.is("do") || w0.is("{") || w0.is("}") || w0.is("function") {
            return Some(1);
        }
        // `name() {`: a function's body is read where it is defined (its `$1` … unset).
        if c.len() >= 3 && c[1].is("(") && c[2].is(")") {
            return Some(3);
        }
        if w0.is("else") {
            if let Some(Frame::If { taking, done, .. }) = self.frames.last_mut() {
                *taking = !*done;
                *done = true;
            }
            return Some(1);
        }
        if w0.is("fi") || w0.is("done") || w0.is("esac") {
            self.frames.pop();
            return Some(1);
        }
        if w0.is("case") {
            let outer = self.active();
            let word = c.get(1).map(|w| self.expand(&w.text, w.line)).unwrap_or_default();
            self.frames.push(Frame::Case { outer, word, taking: false, done: false, in_branch: false });
            let used = if c.get(2).is_some_and(|w| w.is("in")) { 3 } else { c.len().min(2) };
            return Some(used);
        }
        if w0.is("for") {
            self.for_loop(c);
            return Some(c.len());
        }
        None
    }

    /// The branch a condition selects, once its `then` / `do` is read.
    fn open(&mut self, p: Option<Pending>) {
        let Some(p) = p else { return };
        let outer = self.active();
        let evaluate = match p.kind {
            Cond::Elif => matches!(self.frames.last(), Some(Frame::If { outer: true, done: false, .. })),
            _ => outer,
        };
        let cond = if evaluate { self.condition(&p.parts) } else { Some(false) };
        let shown: Vec<String> = p.parts.iter().flat_map(|(ws, sep)| ws.iter().map(|w| w.text.clone()).chain((!sep.is_empty() && sep != "\n").then(|| sep.clone()))).collect();
        let kw = match p.kind {
            Cond::If => "if",
            Cond::Elif => "elif",
            Cond::While => "while",
            Cond::Until => "until",
        };
        if evaluate && cond.is_none() {
            let then = if matches!(p.kind, Cond::While | Cond::Until) { "its body is read once" } else { "its branch is read" };
            self.skipped(p.line, format!("`{kw} {}` is not decided by the text; {then}", clip(&shown.join(" "))));
        }
        match p.kind {
            Cond::If => {
                let taking = cond.unwrap_or(true);
                self.frames.push(Frame::If { outer, taking, done: taking });
            }
            Cond::Elif => {
                if let Some(Frame::If { taking, done, .. }) = self.frames.last_mut() {
                    *taking = !*done && cond.unwrap_or(true);
                    *done |= *taking;
                }
            }
            Cond::While => self.frames.push(Frame::Loop { outer, taking: cond != Some(false) }),
            Cond::Until => self.frames.push(Frame::Loop { outer, taking: cond != Some(true) }),
        }
    }

    /// A condition's commands joined by `&&` / `||` (left to right, as bash chains them): `[ … ]`, `[[ … ]]`, `test`,
    /// `(( … ))`, `true`, `false`, `!`; None when the text does not decide it.
    fn condition(&mut self, parts: &[(Vec<Word>, String)]) -> Option<bool> {
        let double = parts.iter().any(|(ws, _)| ws.iter().any(|w| w.is("[[")));
        let arith = parts.first().and_then(|(ws, _)| ws.first()).is_some_and(|w| w.is("("));
        let mut acc: Option<bool> = None;
        let mut prev_sep = String::new();
        for (k, (ws, sep)) in parts.iter().enumerate() {
            let mut ws: &[Word] = ws;
            let negate = ws.first().is_some_and(|w| w.is("!"));
            if negate {
                ws = &ws[1..];
            }
            let brackets = ["[", "[[", "]", "]]", "test", "(", ")"];
            let inner: Vec<&Word> = ws.iter().filter(|w| !brackets.iter().any(|b| w.is(b))).collect();
            let one = if ws.first().is_some_and(|w| w.is("true") || w.is(":")) {
                Some(true)
            } else if ws.first().is_some_and(|w| w.is("false")) {
                Some(false)
            } else if arith {
                let text: Vec<String> = inner.iter().map(|w| w.text.clone()).collect();
                let vars = &self.vars;
                let pos = &self.positional;
                eval::arith(&text.join(" "), &|n| lookup(vars, pos, n)).map(|v| v != 0)
            } else if ws.first().is_some_and(|w| ["[", "[[", "test"].iter().any(|b| w.is(b))) || k > 0 && double {
                let args: Vec<String> = inner.iter().map(|w| self.expand(&w.text, w.line)).collect();
                eval::test(&args, double)
            } else {
                None
            };
            let one = one.map(|b| b != negate);
            acc = match (k, prev_sep.as_str()) {
                (0, _) => one,
                (_, "&&") => match (acc, one) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                },
                (_, "||") => match (acc, one) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                },
                _ => one,
            };
            prev_sep = sep.clone();
        }
        acc
    }

    /// `for NAME in A B C`: NAME is A (a script that runs several configurations runs the first one first); a note
    /// names the others. `for (( … ))` and a list the text cannot know run the body once, listed.
    fn for_loop(&mut self, c: &[Word]) {
        let outer = self.active();
        self.frames.push(Frame::Loop { outer, taking: true });
        if !outer {
            return;
        }
        let line = c[0].line;
        let (Some(name), true) = (c.get(1), c.get(2).is_some_and(|w| w.is("in"))) else {
            self.skipped(line, "a `for` loop the text does not list; its body is read once".into());
            return;
        };
        let items: Vec<String> = c[3..].iter().flat_map(|w| self.expand(&w.text, w.line).split_whitespace().map(str::to_string).collect::<Vec<_>>()).collect();
        if items.iter().any(|v| eval::unknown(v)) || items.is_empty() {
            let shown: Vec<&str> = c[3..].iter().map(|w| w.text.as_str()).collect();
            self.skipped(line, format!("the values of a loop over `{}` are not in the text; its body is read once", clip(&shown.join(" "))));
            return;
        }
        if items.len() > 1 {
            let others: Vec<&str> = items[1..].iter().take(MAX_LISTED).map(String::as_str).collect();
            let more = if items.len() - 1 > MAX_LISTED { format!(" and {} more", items.len() - 1 - MAX_LISTED) } else { String::new() };
            self.notes.push(format!("`for {} in …` runs {} configurations; the first, {}={}, is read (the others: {}{more})", name.text, items.len(), name.text, items[0], others.join(", ")));
        }
        self.vars.insert(name.text.clone(), vec![items[0].clone()]);
    }
}

/// The variables Slurm sets in a batch job from its `#SBATCH` directives (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"):
/// the node count as SLURM_JOB_NUM_NODES and SLURM_NNODES (given, or --ntasks / --ntasks-per-node), and
/// SLURM_NTASKS_PER_NODE and SLURM_GPUS_PER_NODE when the directives give them. The directive words are the split
/// text's (already in the long form, [`super::launchers::sizing`]); a script's own assignment later wins as in bash.
fn slurm_environment(raw: &[Word]) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    for w in raw.iter().filter(|w| w.directive) {
        let Some((flag, value)) = w.text.split_once('=') else { continue };
        let names: &[&'static str] = match flag {
            "--nodes" => &["SLURM_JOB_NUM_NODES", "SLURM_NNODES"],
            "--ntasks-per-node" => &["SLURM_NTASKS_PER_NODE"],
            "--gpus-per-node" => &["SLURM_GPUS_PER_NODE"],
            _ => continue,
        };
        if value.bytes().all(|c| c.is_ascii_digit()) && !value.is_empty() {
            env.extend(names.iter().map(|n| (*n, value.to_string())));
        }
    }
    // No node count, but tasks and tasks per node: Slurm allocates ntasks / ntasks-per-node nodes.
    let directive = |flag: &str| raw.iter().filter(|w| w.directive).find_map(|w| w.text.strip_prefix(flag)?.parse::<u64>().ok());
    if let (false, Some(tasks), Some(per_node)) = (env.iter().any(|(n, _)| *n == "SLURM_NNODES"), directive("--ntasks="), directive("--ntasks-per-node=")) {
        if per_node > 0 && tasks % per_node == 0 {
            let nodes = (tasks / per_node).to_string();
            env.extend(["SLURM_JOB_NUM_NODES", "SLURM_NNODES"].map(|n| (n, nodes.clone())));
        }
    }
    env
}

/// How many words a pasted terminal prompt puts before a command: `$ bash run.sh …`, `% …`, `> …`, a shell's
/// `user@host:~/dir$` or `root@host:/workspace#`, each after an optional `(venv)`.
fn prompt_words(ws: &[Word]) -> usize {
    // The lexer makes `(venv)` three words: `(`, the name, `)`.
    let venv = if ws.len() > 3 && ws[0].text == "(" && ws[2].text == ")" { 3 } else { 0 };
    let prompt = ws.get(venv).is_some_and(|w| {
        let t = w.text.as_str();
        matches!(t, "$" | "%" | ">" | "#") || ((t.ends_with('$') || t.ends_with('#')) && t.contains('@') && t.contains(':'))
    });
    if prompt { venv + 1 } else { 0 }
}

/// A name's value: `$1` … from the positional parameters, else the text's variable (an array's first item).
fn lookup(vars: &HashMap<String, Vec<String>>, positional: &Option<Vec<String>>, name: &str) -> Option<String> {
    if let Ok(k) = name.parse::<usize>() {
        return positional.as_ref().and_then(|p| p.get(k.checked_sub(1)?).cloned());
    }
    vars.get(name).map(|v| v.first().cloned().unwrap_or_default())
}

/// At most 80 characters of `s`, cut on a character boundary.
fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl Shell {
    /// A command that runs: assignments, the builtins that change what the script knows, or words to read.
    fn simple(&mut self, c: &[Word]) {
        let n = c.iter().take_while(|w| assignment(w).is_some()).count();
        for w in &c[..n] {
            self.assign(w);
        }
        let Some(cmd) = c.get(n) else { return };
        let args = &c[n + 1..];
        let line = cmd.line;
        let name = if cmd.quoted { "" } else { cmd.text.as_str() };
        match name {
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for w in args.iter().filter(|w| assignment(w).is_some()) {
                    self.assign(w);
                }
            }
            ":" => {
                // `: "${TP:=4}"`: expanded for what `:=` assigns.
                for w in args {
                    self.expand(&w.text, w.line);
                }
            }
            "source" | "." => {
                let file = args.first().map(|w| self.expand(&w.text, line)).unwrap_or_default();
                self.notes.push(format!("line {line}: `{name} {}` reads a file that is not in the text; what it sets is not read (paste it above the script)", clip(&file)));
            }
            "shift" => {
                let k = args.first().and_then(|w| w.text.parse::<usize>().ok()).unwrap_or(1);
                if let Some(p) = self.positional.as_mut() {
                    p.drain(..k.min(p.len()));
                }
            }
            "set" if args.first().is_some_and(|w| w.is("--")) => {
                let p: Vec<String> = args[1..].iter().map(|w| self.expand(&w.text, w.line)).collect();
                self.positional = Some(p);
            }
            "unset" => {
                for w in args {
                    self.vars.remove(&w.text);
                }
            }
            // Echoed commands repeat what is run; exit and return stop a script only where the text cannot tell.
            "echo" | "printf" | "exit" | "return" | "set" | "cd" | "mkdir" | "rm" | "sleep" | "wait" => {}
            "read" => self.read(args),
            _ => {
                // `NPROC_PER_NODE=8 megatron sft …`: a wrapper reads its settings from the environment; they are its words.
                for w in &c[..n] {
                    let e = self.expand(&w.text, w.line);
                    self.emit(e, false);
                }
                if self.run_again(&c[n..]) {
                    return;
                }
                for w in &c[n..] {
                    let e = self.expand(&w.text, w.line);
                    self.emit(e, w.quoted);
                }
                self.out.push("\n".into());
            }
        }
    }

    /// `bash -c STRING` (or `sh`, `zsh`; after a launcher, `srun bash -c "$CMD"`) and `eval STRING…`: the string is shell
    /// text that shell reads again, so its quotes are removed and its words split there — a Slurm script's
    /// `CMD='… --tensor-model-parallel-size "$TP" …'` run by `bash -c "$CMD"` (Megatron Bridge's
    /// examples/models/nemotron/nemotron_3/ultra/slurm_pretrain.sh) gives `4`, not `"4"`. The words before the shell
    /// (the launcher's) are kept; the string's own words are read once (not run again if they hold another `-c`).
    /// True when `c` was such a command and its words are out.
    fn run_again(&mut self, c: &[Word]) -> bool {
        fn base(w: &Word) -> &str {
            if w.quoted { "" } else { w.text.rsplit('/').next().unwrap_or("") }
        }
        // Only `-c STRING` alone: with arguments after it (`bash -c '… "$@"' NAME ARG…`, Megatron Bridge's Slurm launch)
        // the string's "$@" is theirs, which the words as written already follow.
        let shell_c = c.iter().position(|w| matches!(base(w), "bash" | "sh" | "zsh")).filter(|&i| c.get(i + 1).is_some_and(|w| w.is("-c")) && c.len() == i + 3);
        let (before, string): (&[Word], Vec<&Word>) = match shell_c {
            Some(i) => (&c[..i], vec![&c[i + 2]]),
            None if c.first().is_some_and(|w| base(w) == "eval") && c.len() > 1 => (&[], c[1..].iter().collect()),
            None => return false,
        };
        for w in before {
            let e = self.expand(&w.text, w.line);
            self.emit(e, w.quoted);
        }
        let line = c[0].line;
        let text: Vec<String> = string.iter().map(|w| self.expand(&w.text, w.line)).collect();
        for w in split(&text.join(" ")) {
            if w.op {
                self.out.push("\n".into());
                continue;
            }
            let e = self.expand(&w.text, line);
            self.emit(e, w.quoted);
        }
        self.out.push("\n".into());
        true
    }

    fn emit(&mut self, e: String, quoted: bool) {
        if quoted {
            self.out.push(e);
        } else {
            let room = MAX_WORDS.saturating_sub(self.out.len());
            self.out.extend(e.split_whitespace().take(room).map(str::to_string));
        }
    }

    /// `NAME=value`, `NAME+=value`, `NAME=( … )`, `NAME+=( … )`.
    fn assign(&mut self, w: &Word) {
        let Some((name, value, append)) = assignment(w) else { return };
        let name = name.to_string();
        // An append extends the value in place (a script's `ARGS+=(…)` or `S+=" …"` run thousands of times would
        // otherwise copy the whole value each time); what it appends is expanded first, as it may read the value.
        if value == "(" {
            let have = if append { self.vars.get(&name).map_or(0, Vec::len) } else { 0 };
            let mut items = Vec::new();
            for x in &w.items {
                if have + items.len() >= MAX_WORDS {
                    break;
                }
                let e = self.expand(&x.text, x.line);
                if x.quoted {
                    items.push(e);
                } else {
                    let room = MAX_WORDS.saturating_sub(have + items.len());
                    items.extend(e.split_whitespace().take(room).map(str::to_string));
                }
            }
            if !self.arrays.contains(&name) && self.arrays.len() < MAX_LISTED * 64 {
                self.arrays.push(name.clone());
            }
            match self.vars.get_mut(&name) {
                Some(old) if append => old.extend(items),
                _ => drop(self.vars.insert(name, items)),
            }
        } else {
            let v = self.expand(value, w.line);
            match self.vars.get_mut(&name) {
                Some(old) if append && old.len() == 1 => old[0].push_str(&v),
                Some(old) if append => *old = vec![old.join(" ") + &v],
                _ => drop(self.vars.insert(name, vec![v])),
            }
        }
    }

    /// `read [-r] A B … <<< VALUE`: VALUE split on IFS (the text's, else white space), the last name taking the rest.
    fn read(&mut self, args: &[Word]) {
        let args: Vec<String> = args.iter().map(|w| self.expand(&w.text, w.line)).collect();
        let Some(at) = args.iter().position(|a| a == "<<<") else { return };
        let names: Vec<&String> = args[..at].iter().filter(|a| !a.starts_with('-')).collect();
        let value = args.get(at + 1).cloned().unwrap_or_default();
        let ifs: Vec<char> = self.vars.get("IFS").and_then(|v| v.first()).map_or_else(Vec::new, |v| v.chars().collect());
        let parts: Vec<&str> = if ifs.is_empty() { value.split_whitespace().collect() } else { value.split(|c| ifs.contains(&c)).collect() };
        for (k, name) in names.iter().enumerate() {
            let part = if k + 1 == names.len() { parts.get(k..).map(|p| p.join(",")).unwrap_or_default() } else { parts.get(k).map_or(String::new(), |p| p.to_string()) };
            self.vars.insert(name.to_string(), vec![part]);
        }
    }

    /// `s` with its expansions done (see the module's list); what the text does not know stays as written.
    fn expand(&mut self, s: &str, line: u32) -> String {
        self.expand_at(s, line, 0)
    }

    fn expand_at(&mut self, s: &str, line: u32, depth: usize) -> String {
        let mut out = String::new();
        let mut rest = s;
        // Every `${`'s closing brace, paired in one pass: looking for it from each `${` was quadratic in a line of
        // `${` that never close (the fuzzer's 100 KB line took 3.6 s).
        let braces = brace_pairs(s);
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            // Where `after`'s `{` (if it opens one) closes, counted from the byte after the `{`.
            let open = s.len() - after.len();
            let close = braces.get(&open).map(|&c| c - open - 1);
            let (text, used) = self.expansion(after, line, depth, close);
            match text {
                Some(t) => out.push_str(&t),
                None => out.push_str(&rest[i..i + 1 + used]),
            }
            rest = &after[used..];
        }
        out.push_str(rest);
        out
    }

    /// A command substitution that only echoes a variable with its whitespace made single spaces —
    /// `$(echo "$CLI_OVERRIDES" | tr '\n' ' ' | sed 's/  \+/ /g')` (Megatron Bridge's examples/models/gpt_oss/
    /// slurm_sft.sh), `| xargs`, `| tr -s ' '` — is the variable's value so; anything else is a command's output.
    fn echoed(&mut self, inner: &str, line: u32, depth: usize) -> Option<String> {
        let mut stages = inner.split('|').map(str::trim);
        let echo = stages.next()?.strip_prefix("echo ")?.trim_start();
        let echo = echo.strip_prefix("-n ").unwrap_or(echo).trim();
        let var = echo.trim_matches('"');
        let simple = var.starts_with('$') && !var[1..].contains(['$', '(', '`', ' ', '"', '\'']);
        // tr of newlines or spaces, squeezing spaces; sed substituting whitespace runs; xargs without a command.
        let whitespace_only = |stage: &str| {
            let s = stage.replace(['\'', '"'], "");
            matches!(s.as_str(), "xargs" | "tr -s  " | "tr \\n  " | "tr -s \\n  " | "tr \\n" | "tr -d \\n")
                || (s.starts_with("sed s/") && s[6..].chars().all(|c| matches!(c, ' ' | '\\' | '+' | '*' | '/' | 'g' | 's' | 't' | 'n' | '[' | ']' | ':' | 'a' | 'p' | 'c' | 'e')))
        };
        if !simple || depth >= MAX_DEFAULT_DEPTH || !stages.all(whitespace_only) {
            return None;
        }
        let value = self.expand_at(var, line, depth + 1);
        // A piece of it the text does not decide stays as written (and is noted where it was skipped).
        Some(value.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    /// What `$` followed by `after` expands to (None: stays as written), and how many bytes of `after` it used;
    /// `close`: where the `{` that `after` may start closes ([`brace_pairs`]).
    fn expansion(&mut self, after: &str, line: u32, depth: usize, close: Option<usize>) -> (Option<String>, usize) {
        if let Some(inner) = after.strip_prefix("((") {
            let Some(end) = inner.find("))") else { return (None, 0) };
            // Nested inside one another as deep as defaults may be (each level is a recursion and a scan).
            if depth >= MAX_DEFAULT_DEPTH {
                self.skipped(line, format!("`$(({}))` is nested more than {MAX_DEFAULT_DEPTH} deep: not evaluated", clip(&inner[..end])));
                return (None, end + 4);
            }
            // The innermost `))` closes `$((`; nested parentheses inside are the expression's.
            let close = matching_arith(inner).unwrap_or(end);
            let expr = self.expand_at(&inner[..close], line, depth + 1);
            let (vars, pos) = (&self.vars, &self.positional);
            let v = eval::arith(&expr, &|n| lookup(vars, pos, n));
            if v.is_none() {
                self.skipped(line, format!("`$(({}))` is not evaluated", clip(&inner[..close])));
            }
            return (v.map(|v| v.to_string()), close + 4);
        }
        if after.starts_with('(') {
            let end = matching_paren(after).map_or(after.len(), |e| e + 1);
            if let Some(v) = after.get(1..end.saturating_sub(1)).and_then(|inner| self.echoed(inner, line, depth)) {
                return (Some(v), end);
            }
            self.skipped(line, format!("`${}` is a command's output, not in the text", clip(&after[..end])));
            return (None, end);
        }
        if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = close else { return (None, 0) };
            return (self.braced(&inner[..end], line, depth), end + 2);
        }
        let special = after.chars().next().filter(|c| matches!(c, '@' | '*' | '#' | '0'..='9'));
        let end = match special {
            Some(c) => c.len_utf8(),
            None => after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len()),
        };
        if end == 0 {
            return (None, 0);
        }
        (self.value(&after[..end], None), end)
    }

    /// The value of `name` (`index`: an array item, `@` all), budgeted; an unset positional parameter is noted.
    fn value(&mut self, name: &str, index: Option<&str>) -> Option<String> {
        let v: Option<String> = match name {
            "@" | "*" => Some(self.positional.as_ref().map(|p| p.join(" ")).unwrap_or_default()),
            "#" => self.positional.as_ref().map(|p| p.len().to_string()),
            "0" => None,
            n if n.parse::<usize>().is_ok() => {
                let v = lookup(&self.vars, &self.positional, n);
                if v.is_none() && self.unset_noted.insert(n.to_string()) {
                    let shown = if n.len() > 1 { format!("${{{n}}}") } else { format!("${n}") };
                    self.notes.push(format!("unset: `{shown}` (give it): the script's parameter is not in the text; what it sets is left out"));
                }
                v
            }
            n => {
                let items = self.vars.get(n)?;
                self.used.insert(n.to_string());
                match index {
                    Some("@" | "*") => Some(items.join(" ")),
                    Some(k) => Some(k.parse::<usize>().ok().and_then(|k| items.get(k)).cloned().unwrap_or_default()),
                    None => Some(items.first().cloned().unwrap_or_default()),
                }
            }
        };
        let v = v?;
        if v.len() + 1 > self.budget {
            return None;
        }
        self.budget -= v.len() + 1;
        Some(v)
    }

    /// `${…}`: `NAME`, `N`, `NAME[i]`, `#NAME[@]`, and the `:-` `-` `:=` `=` `:+` `+` forms.
    fn braced(&mut self, inner: &str, line: u32, depth: usize) -> Option<String> {
        if let Some(n) = inner.strip_prefix('#').filter(|n| !n.is_empty()) {
            let name = n.trim_end_matches("[@]").trim_end_matches("[*]");
            let v = self.vars.get(name)?;
            return Some(if n.len() > name.len() { v.len() } else { v.first().map_or(0, |s| s.chars().count()) }.to_string());
        }
        let end = inner.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '*')).unwrap_or(inner.len());
        let (name, mut rest) = inner.split_at(end);
        let mut index = None;
        if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            index = Some(&r[..close]);
            rest = &r[close + 1..];
        }
        let ops = [":-", ":=", ":+", "-", "=", "+"];
        let op = ops.iter().find(|o| rest.starts_with(**o));
        if op.is_none() && !rest.is_empty() {
            self.skipped(line, format!("`${{{}}}` is not evaluated", clip(inner)));
            return None;
        }
        let quiet = op.is_some() && name.parse::<usize>().is_ok() && !self.positional.as_ref().is_some_and(|p| name.parse::<usize>().is_ok_and(|k| k >= 1 && k <= p.len()));
        // A positional parameter with a default is not "unset": the default is what the script means.
        let v = if quiet { None } else { self.value(name, index) };
        let Some(op) = op else { return v };
        let word = &rest[op.len()..];
        let word = word.trim_matches('"').trim_matches('\'');
        let set = v.as_ref().is_some_and(|v| !(op.starts_with(':') && v.is_empty()));
        let alt = || -> bool { op.ends_with('+') };
        if alt() {
            return Some(if set { self.expand_deeper(word, line, depth)? } else { String::new() });
        }
        if set {
            return v;
        }
        let d = self.expand_deeper(word, line, depth)?;
        if op.ends_with('=') && name.parse::<usize>().is_err() {
            self.vars.insert(name.to_string(), vec![d.clone()]);
        }
        Some(d)
    }

    fn expand_deeper(&mut self, word: &str, line: u32, depth: usize) -> Option<String> {
        if !word.contains('$') {
            return Some(word.to_string());
        }
        (depth < MAX_DEFAULT_DEPTH).then(|| self.expand_at(word, line, depth + 1))
    }

    /// The words out, the arrays no command expands after them, and the notes (what was not evaluated, listed).
    fn finish(mut self) -> (Vec<String>, Vec<String>) {
        // An array no command expands (`MEGATRON_ARGS=( … )` pasted alone) is still what the text says: its words
        // follow, as one more command.
        for name in std::mem::take(&mut self.arrays) {
            if self.used.contains(&name) {
                continue;
            }
            if let Some(items) = self.vars.get(&name) {
                self.out.push("\n".into());
                self.out.extend(items.iter().cloned());
            }
        }
        self.out.truncate(MAX_WORDS);
        if !self.skipped.is_empty() {
            let more = if self.skipped_more > 0 { format!("; and {} more", self.skipped_more) } else { String::new() };
            self.notes.push(format!("not evaluated, left as written: {}{more}", self.skipped.join("; ")));
        }
        (self.out, self.notes)
    }
}

/// The index in `inner` (the text after `$((`) of the `))` that closes it.
fn matching_arith(inner: &str) -> Option<usize> {
    let mut depth = 0i64;
    let b = inner.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' if depth == 0 => return (b.get(i + 1) == Some(&b')')).then_some(i),
            b')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The index in `s` (starting with `(`) of its matching `)`.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass pairs each `${` with the `}` a scan from its `{` finds, on texts of `$`, `{`, `}` and letters.
    #[test]
    fn brace_pairs_agree_with_the_scan_from_each_brace() {
        let alphabet = [b'$', b'{', b'}', b'a', b'-', b':'];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..3000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = (state >> 58) as usize + 1;
            let text: String = (0..len)
                .map(|k| {
                    let r = state.rotate_left(7 * k as u32 + 3).wrapping_mul(0x2545_F491_4F6C_DD1D);
                    alphabet[(r >> 61) as usize % alphabet.len()] as char
                })
                .collect();
            let pairs = brace_pairs(&text);
            for (i, _) in text.match_indices("${") {
                let open = i + 1;
                let scanned = closing_brace(&text[open + 1..]).map(|c| open + 1 + c);
                assert_eq!(pairs.get(&open).copied(), scanned, "{text:?} at {open}");
            }
        }
    }

    fn flat(text: &str) -> Vec<String> {
        words(text).into_iter().filter(|s| s != "\n").collect()
    }

    #[test]
    fn arrays_variables_quotes_and_continuations() {
        let text = "GPUS=8\nARGS=(\n  --tp $GPUS # comment\n  --name 'a b'\n)\ntorchrun --nproc_per_node $GPUS x.py \\\n  ${ARGS[@]} --y \"q\\\"\"\n";
        // Unquoted `${ARGS[@]}` splits each item again, as bash does: 'a b' becomes two words.
        assert_eq!(flat(text), ["torchrun", "--nproc_per_node", "8", "x.py", "--tp", "8", "--name", "a", "b", "--y", "q\""]);
    }

    #[test]
    fn assignments_with_quoted_defaults() {
        assert_eq!(flat("S=${S:-\"optim\"}\nrun --x ${S} \"A=b\"\n"), ["run", "--x", "optim", "A=b"]);
    }

    /// The shape of Megatron Bridge's examples/models/*/slurm_pretrain.sh: `#SBATCH` sizes, an array of "TP,PP,EP"
    /// configurations looped over and split by `read` on `IFS=','`, a default that names another variable.
    #[test]
    fn slurm_directives_loops_read_and_nested_defaults() {
        let text = "#!/bin/bash\n#SBATCH --nodes=8\n#SBATCH --gpus-per-node=8  # 4 on GB200\n# not #SBATCH --nodes=1\nM=gpt\nR=\"${R:-${M}_cfg}\"\nC=(\"2,4,4\" \"4,2,1\")\nfor X in \"${C[@]}\"; do\n    IFS=',' read -r TP PP EP <<< \"$X\"\n    run --recipe $R tp=$TP pp=$PP ep=$EP\ndone\n";
        let (w, notes) = words_noted(text);
        let flat: Vec<&str> = w.iter().map(String::as_str).filter(|s| *s != "\n").collect();
        assert_eq!(flat, ["--nodes=8", "--gpus-per-node=8", "run", "--recipe", "gpt_cfg", "tp=2", "pp=4", "ep=4"]);
        assert_eq!(notes, ["`for X in …` runs 2 configurations; the first, X=2,4,4, is read (the others: 4,2,1)"]);
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

    /// Megatron-LM examples/mamba/train.sh's `case "${MODEL_SCALE}" in "800M") … ;; "8B") … ;; *) … ;; esac`: the branch
    /// the value selects, not the last one.
    #[test]
    fn case_takes_the_selected_branch() {
        let text = "S=\"800M\"\ncase \"${S}\" in\n  \"800M\")\n    L=24\n    ;;\n  \"8B\"|8b)\n    L=32\n    ;;\n  *)\n    echo no; exit 1\n    ;;\nesac\nrun --num-layers $L\n";
        assert_eq!(flat(text), ["run", "--num-layers", "24"]);
        assert_eq!(flat(&text.replace("S=\"800M\"", "S=8b")), ["run", "--num-layers", "32"]);
        assert_eq!(flat(&text.replace("S=\"800M\"", "S=1T")), ["run", "--num-layers", "$L"]);
    }

    #[test]
    fn if_elif_else_on_known_values() {
        let text = "P=bf16\nTP=4\nif [[ \"$P\" == \"fp8\" ]]; then\n  A=\"--fp8\"\nelif [ $TP -gt 1 ] && [ \"$P\" = bf16 ]; then\n  A=\"--sp\"\nelse\n  A=\"--none\"\nfi\nrun $A\n";
        assert_eq!(flat(text), ["run", "--sp"]);
        assert_eq!(flat(&text.replace("TP=4", "TP=1")), ["run", "--none"]);
        assert_eq!(flat(&text.replace("P=bf16", "P=fp8")), ["run", "--fp8"]);
        // Undecided (a file test): the first branch, listed with its line.
        let (w, notes) = words_noted("if [ -f /x ]; then\n A=1\nelse\n A=2\nfi\nrun $A\n");
        assert_eq!(w.iter().filter(|s| *s != "\n").collect::<Vec<_>>(), ["run", "1"]);
        assert!(notes.iter().any(|n| n.contains("line 1: `if [ -f /x ]` is not decided")), "{notes:?}");
    }

    /// The words of the commands whose first word is `run`.
    fn runs(words: &[String]) -> Vec<String> {
        words.split(|w| w == "\n").filter(|c| c.first().is_some_and(|w| w == "run")).flatten().cloned().collect()
    }

    #[test]
    fn appends_extend_in_place_and_read_the_value_first() {
        // An append extends the value (in place: a fuzzed script of 10,000 `ARGS+=(…)` lines took 4 s copying it
        // each time, 0.16 s after); what it appends is expanded before, so it reads the value as it was.
        assert_eq!(flat("A=(--tp 2)\nA+=(--pp)\nA+=(\"${A[1]}\")\nS=run\nS+=\" --cp\"\nS+=\" 4\"\n$S ${A[@]}\n"), ["run", "--cp", "4", "--tp", "2", "--pp", "2"]);
        let many = "ARGS=()\n".to_string() + &"ARGS+=(--x)\n".repeat(3000) + "run ${#ARGS[@]}\n";
        assert_eq!(flat(&many)[..2], ["run", "3000"]);
    }

    #[test]
    fn a_string_run_again_loses_its_quotes() {
        // bash -c (after a launcher) and eval read the string as shell again: "4" is 4, `;` separates commands.
        let text = "TP=4\nCMD='cd /w && run --tp \"$TP\" --name \"a b\"'\nsrun --mpi=pmix bash -c \"$CMD\"\n";
        assert_eq!(runs(&words(text)), ["run", "--tp", "4", "--name", "a b"]);
        assert!(words(text).starts_with(&["srun".to_string(), "--mpi=pmix".to_string()]));
        assert_eq!(runs(&words("A='--tp \"2\"'\neval run $A\n")), ["run", "--tp", "2"]);
        // With arguments after the string, the words as written (the string's "$@" is theirs).
        assert!(flat("srun -N 2 bash -c 'exec run \"$@\"' run --tp 4\n").ends_with(&["run".to_string(), "--tp".into(), "4".into()]));
        // Whitespace made single by echo | tr | sed is the variable's value; another pipeline is a command's output.
        assert_eq!(flat("X=\"--tp 2\n  --pp 4\"\nrun $(echo \"$X\" | tr '\\n' ' ' | sed 's/  \\+/ /g')\n"), ["run", "--tp", "2", "--pp", "4"]);
        assert_eq!(flat("X=\"--tp 2\"\nrun $(echo \"$X\" | xargs)\n"), ["run", "--tp", "2"]);
        assert!(flat("X=\"--tp 2\"\nrun $(echo \"$X\" | grep tp)\n").iter().any(|w| w.contains("$(")));
    }

    #[test]
    fn arithmetic_prefixes_and_wrappers() {
        assert_eq!(flat("N=2\nG=8\nW=$(($G*$N))\nrun --pp $((8*1)) --w $W --tp $(( W / 4 ))\n"), ["run", "--pp", "8", "--w", "16", "--tp", "4"]);
        // The environment of a wrapper invocation, before or after the script's text.
        let body = "TP=${TP:-1}\nrun --tp $TP\n";
        assert_eq!(runs(&words(&format!("TP=2 bash run.sh\n{body}"))), ["run", "--tp", "2"]);
        let (w, notes) = words_noted(&format!("{body}TP=2 bash run.sh\n"));
        assert_eq!(runs(&w), ["run", "--tp", "2"]);
        assert!(notes[0].contains("the environment TP=2"), "{notes:?}");
        // Without the wrapper's line the script's default holds.
        assert_eq!(runs(&words(body)), ["run", "--tp", "1"]);
        // Positional parameters from the invocation; unset ones noted, never guessed.
        assert_eq!(runs(&words("sh run.sh a b c d e f g h i ten\nX=${10}\nrun --x $X --y $2\n")), ["run", "--x", "ten", "--y", "b"]);
        let (w, notes) = words_noted("X=$3\nrun --x $X --y ${1:-d}\n");
        assert_eq!(w.iter().filter(|s| *s != "\n").collect::<Vec<_>>(), ["run", "--x", "$3", "--y", "d"]);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("unset: `$3` (give it)"), "{notes:?}");
        // `: ${TP:=4}` assigns; `NAME=value cmd` gives the command its environment as words.
        assert_eq!(flat(": \"${TP:=4}\"\nN=2 megatron sft --tp $TP\n"), ["N=2", "megatron", "sft", "--tp", "4"]);
    }
}
