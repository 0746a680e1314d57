//! What a launch script computes without running anything: `$(( … ))` arithmetic, the `[ … ]` / `[[ … ]]` / `test`
//! conditions of `if` and `while`, and `case` patterns. Each answers None when the text does not decide it (an unset
//! name, a file test, a command's status); the reader lists those with their line.
//!
//! Bounded: arithmetic nests at most [`MAX_ARITH_DEPTH`] parentheses and operators deep, and every operation is
//! checked (an overflow or a division by zero is "not decided", never a panic).

use crate::limits::MAX_SHELL_ARITH_DEPTH as MAX_ARITH_DEPTH;

/// `expr` as bash's `$(( expr ))` evaluates it (integers; `+ - * / % **`, comparisons, `&& || !`, parentheses), names
/// looked up by `var`; None when a name is unset or not a number, or the expression is not one bash would take.
pub(super) fn arith(expr: &str, var: &dyn Fn(&str) -> Option<String>) -> Option<i64> {
    let toks = tokens(expr)?;
    let mut p = Parser { toks, at: 0, var, depth: 0 };
    let v = p.binary(0)?;
    (p.at == p.toks.len()).then_some(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 21] = ["**", "<=", ">=", "==", "!=", "&&", "||", "<<", ">>", "+", "-", "*", "/", "%", "<", ">", "!", "(", ")", "&", "|"];

fn tokens(s: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let end = b[i..].iter().position(|x| !x.is_ascii_alphanumeric()).map_or(b.len(), |p| i + p);
            let t = &s[i..end];
            let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => i64::from_str_radix(h, 16).ok()?,
                None => t.parse::<i64>().ok()?,
            };
            out.push(Tok::Num(n));
            i = end;
        } else if c == b'$' || c == b'_' || c.is_ascii_alphabetic() {
            // `$NAME` and `NAME` are the same inside `$(( ))`; `${NAME}` too.
            let start = i + usize::from(c == b'$');
            let braced = b.get(start) == Some(&b'{');
            let from = start + usize::from(braced);
            let end = b[from..].iter().position(|x| !(x.is_ascii_alphanumeric() || *x == b'_')).map_or(b.len(), |p| from + p);
            if end == from {
                return None;
            }
            out.push(Tok::Name(s[from..end].to_string()));
            i = end + usize::from(braced && b.get(end) == Some(&b'}'));
        } else {
            let op = OPS.iter().find(|o| s[i..].starts_with(**o))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    var: &'a dyn Fn(&str) -> Option<String>,
    depth: usize,
}

/// Binding power of a binary operator (bash's precedence, lowest first).
fn power(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "&" => 4,
        "==" | "!=" => 5,
        "<" | "<=" | ">" | ">=" => 6,
        "<<" | ">>" => 7,
        "+" | "-" => 8,
        "*" | "/" | "%" => 9,
        "**" => 10,
        _ => return None,
    })
}

impl Parser<'_> {
    fn binary(&mut self, min: u8) -> Option<i64> {
        self.depth += 1;
        if self.depth > MAX_ARITH_DEPTH {
            return None;
        }
        let mut lhs = self.unary()?;
        while let Some(Tok::Op(op)) = self.toks.get(self.at).cloned() {
            let Some(p) = power(op).filter(|p| *p > min) else { break };
            self.at += 1;
            // `**` binds to the right: its right side may hold another `**`.
            let rhs = self.binary(if op == "**" { p - 1 } else { p })?;
            lhs = apply(op, lhs, rhs)?;
        }
        self.depth -= 1;
        Some(lhs)
    }

    fn unary(&mut self) -> Option<i64> {
        self.depth += 1;
        if self.depth > MAX_ARITH_DEPTH {
            return None;
        }
        let t = self.toks.get(self.at).cloned()?;
        self.at += 1;
        let v = match t {
            Tok::Num(n) => n,
            Tok::Name(n) => (self.var)(&n)?.trim().parse::<i64>().ok()?,
            Tok::Op("-") => self.unary()?.checked_neg()?,
            Tok::Op("+") => self.unary()?,
            Tok::Op("!") => i64::from(self.unary()? == 0),
            Tok::Op("(") => {
                let v = self.binary(0)?;
                (self.toks.get(self.at) == Some(&Tok::Op(")"))).then_some(())?;
                self.at += 1;
                v
            }
            Tok::Op(_) => return None,
        };
        self.depth -= 1;
        Some(v)
    }
}

fn apply(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.checked_add(b)?,
        "-" => a.checked_sub(b)?,
        "*" => a.checked_mul(b)?,
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "**" => a.checked_pow(u32::try_from(b).ok()?)?,
        "<<" => a.checked_shl(u32::try_from(b).ok()?)?,
        ">>" => a.checked_shr(u32::try_from(b).ok()?)?,
        "&" => a & b,
        "|" => a | b,
        "<" => i64::from(a < b),
        "<=" => i64::from(a <= b),
        ">" => i64::from(a > b),
        ">=" => i64::from(a >= b),
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "&&" => i64::from(a != 0 && b != 0),
        "||" => i64::from(a != 0 || b != 0),
        _ => return None,
    })
}

/// Whether a word still holds what the text does not know (an unset name, a command's output).
pub(super) fn unknown(w: &str) -> bool {
    w.contains('$') || w.contains('`')
}

/// The inside of `[ … ]`, `[[ … ]]` or `test …`, its words expanded: `! X`, `-z` / `-n`, `=` `==` `!=` (a glob on the
/// right inside `[[ ]]`), `-eq -ne -lt -le -gt -ge`, `&&` / `||` / `-a` / `-o` between tests, a lone word (non-empty).
/// None: a file test, or a word the text does not know.
pub(super) fn test(args: &[String], double: bool) -> Option<bool> {
    // `a || b`, `a && b` (left to right, as bash chains them).
    if let Some(i) = args.iter().rposition(|a| matches!(a.as_str(), "||" | "&&" | "-o" | "-a")) {
        let (l, r) = (test(&args[..i], double), test(&args[i + 1..], double));
        return match args[i].as_str() {
            "||" | "-o" => match (l, r) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            _ => match (l, r) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
        };
    }
    match args {
        [not, rest @ ..] if not == "!" => test(rest, double).map(|b| !b),
        [] => Some(false),
        [w] => (!unknown(w)).then(|| !w.is_empty()),
        [op, w] if op == "-z" || op == "-n" => (!unknown(w)).then(|| w.is_empty() == (op == "-z")),
        [a, op, b] => {
            if unknown(a) || unknown(b) {
                return None;
            }
            let num = |x: &str| x.trim().parse::<i64>().ok();
            match op.as_str() {
                "=" | "==" => Some(if double { glob(b, a) } else { a == b }),
                "!=" => Some(if double { !glob(b, a) } else { a != b }),
                "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                    let (x, y) = (num(a)?, num(b)?);
                    Some(match op.as_str() {
                        "-eq" => x == y,
                        "-ne" => x != y,
                        "-lt" => x < y,
                        "-le" => x <= y,
                        "-gt" => x > y,
                        _ => x >= y,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `s` matches the shell pattern `pat` (`*`, `?`, `[…]` taken literally): linear in both lengths (the greedy
/// star matcher with one backtrack point).
pub(super) fn glob(pat: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(n: &str) -> Option<String> {
        match n {
            "GPUS_PER_NODE" => Some("8".into()),
            "NNODES" => Some("2".into()),
            _ => None,
        }
    }

    #[test]
    fn arithmetic_as_bash_evaluates_it() {
        // By hand: 8 * 2 = 16; 16 / 4 = 4; 2 ** 3 ** 2 = 2 ** 9 = 512 (right-associative); 7 % 3 = 1; (1 + 2) * 3 = 9.
        assert_eq!(arith("$GPUS_PER_NODE*$NNODES", &vars), Some(16));
        assert_eq!(arith("GPUS_PER_NODE * NNODES / 4", &vars), Some(4));
        assert_eq!(arith("2 ** 3 ** 2", &vars), Some(512));
        assert_eq!(arith("7 % 3", &vars), Some(1));
        assert_eq!(arith("(1 + 2) * 3", &vars), Some(9));
        assert_eq!(arith("NNODES > 1 && 3 >= 3", &vars), Some(1));
        assert_eq!(arith("8*1", &vars), Some(8));
        // Unset names, division by zero, overflow and deep nesting are not decided.
        assert_eq!(arith("UNSET * 2", &vars), None);
        assert_eq!(arith("1 / 0", &vars), None);
        assert_eq!(arith("9223372036854775807 + 1", &vars), None);
        assert_eq!(arith(&format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000)), &vars), None);
    }

    #[test]
    fn conditions_and_patterns() {
        let w = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(test(&w("bf16 == fp8"), true), Some(false));
        assert_eq!(test(&w("4 -gt 1"), false), Some(true));
        assert_eq!(test(&w("true = true && 2 -gt 1"), false), Some(true));
        assert_eq!(test(&w("-f /etc/x"), false), None);
        assert_eq!(test(&w("$2 = 7B"), false), None);
        assert_eq!(test(&["-z".to_string(), String::new()], false), Some(true));
        assert!(glob("*70b*", "llama3_70b") && !glob("*8b*", "llama3_70b") && glob("*", "") && glob("8?", "8B"));
    }
}
