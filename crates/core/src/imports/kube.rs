//! A Kubernetes manifest that launches the training (Kubeflow's PyTorchJob and MPIJob, a plain Job or Pod): its
//! containers' `command` and `args` become the shell text the other readers take, its pods and their GPUs size the
//! cluster. Read line by line (the manifest's own YAML is not the Bridge subset `yaml` reads): block and flow sequences,
//! block scalars (`|`, `>`), `env` name/value pairs, `replicas`, `nvidia.com/gpu`, `nprocPerNode`.
//!
//! What the operator gives each pod is set as it sets it, so a script that reads it gets its value: Kubeflow's
//! training operator sets PET_NNODES to the job's replicas in all and PET_NPROC_PER_NODE to `nprocPerNode`
//! (kubeflow/training-operator pkg/controller.v1/pytorch/envvar.go `setPodEnv`, `getTotalReplicas`), which torchrun
//! reads for --nnodes and --nproc-per-node when they are not given (torch/distributed/argparse_util.py `env`: the
//! `PET_` prefix); Kubernetes expands `$(NAME)` in command and args from the container's environment.
//!
//! Bounded: one pass over the lines per item kind; the text is at most the import's MAX_PLAN_BYTES.

use super::builder::Builder;
use serde_json::Value;

/// What a manifest says.
#[derive(Debug, PartialEq)]
pub(crate) struct Manifest {
    /// Its `kind` (PyTorchJob, MPIJob, Job, …).
    pub kind: String,
    /// The shell text its containers run: the operator's and the containers' environment, then each command.
    pub shell: String,
    /// Pods that request GPUs (all the replica specs' pods when none says), and each one's GPUs.
    pub pods: Option<u64>,
    pub gpus_per_pod: Option<u64>,
    /// The GPU the pods are placed on: a `nodeSelector`'s `nvidia.com/gpu.product` label (NVIDIA GPU feature
    /// discovery's product name, `NVIDIA-H100-80GB-HBM3`).
    pub gpu_product: Option<String>,
}

struct Line<'a> {
    indent: usize,
    /// The text after the indentation and a sequence item's `- `.
    text: &'a str,
    /// The indentation of `text` (after a `- `).
    inner: usize,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .filter_map(|l| {
            let body = l.trim_end();
            let t = body.trim_start();
            if t.is_empty() || t.starts_with('#') || t == "---" {
                return None;
            }
            let indent = body.len() - t.len();
            let (text, inner) = match t.strip_prefix("- ") {
                Some(rest) => (rest.trim_start(), indent + 2 + (rest.len() - rest.trim_start().len())),
                None => (t, indent),
            };
            Some(Line { indent, text, inner })
        })
        .collect()
}

/// Whether `text` is a Kubernetes manifest: `apiVersion:` and `kind:` at a line's start.
pub(crate) fn is_manifest(text: &str) -> bool {
    let top = |key: &str| text.lines().any(|l| l.starts_with(key));
    top("apiVersion:") && top("kind:")
}

/// A scalar's text: quotes removed.
fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\''))) {
        let inner = &s[1..s.len() - 1];
        if s.starts_with('"') { inner.replace("\\\"", "\"").replace("\\\\", "\\") } else { inner.replace("''", "'") }
    } else {
        s.to_string()
    }
}

/// The items of a flow sequence's inside (`"a", "b c", d`), quotes respected.
fn flow_items(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut cur, mut quote) = (String::new(), None::<char>);
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, ',') => items.push(unquote(&std::mem::take(&mut cur))),
            (None, c) => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        items.push(unquote(&cur));
    }
    items
}

/// A block scalar's lines after `lines[at]` (those indented deeper than `indent`): joined by newlines (`|`) or spaces
/// (`>`), and the index after them.
fn block_scalar(ls: &[Line<'_>], at: usize, indent: usize, folded: bool) -> (String, usize) {
    let mut j = at + 1;
    let mut parts = Vec::new();
    while j < ls.len() && ls[j].indent > indent {
        // The line's own text, its `- ` kept (a script's list is its own).
        let l = &ls[j];
        parts.push(if l.inner != l.indent { format!("- {}", l.text) } else { l.text.to_string() });
        j += 1;
    }
    (parts.join(if folded { " " } else { "\n" }), j)
}

/// The value of a `key:` line at `lines[at]` as a sequence of words: a flow sequence, a block sequence below it, a
/// block scalar or a plain scalar; and the index after it.
fn sequence(ls: &[Line<'_>], at: usize, rest: &str) -> (Vec<String>, usize) {
    let rest = rest.trim();
    let key_indent = ls[at].inner;
    if let Some(open) = rest.strip_prefix('[') {
        // A flow sequence, possibly over several lines.
        let mut s = open.to_string();
        let mut j = at + 1;
        while !s.trim_end().ends_with(']') && j < ls.len() && ls[j].indent > key_indent {
            s.push(' ');
            s.push_str(ls[j].text);
            j += 1;
        }
        return (flow_items(s.trim_end().trim_end_matches(']')), j);
    }
    if let Some(style) = rest.chars().next().filter(|c| matches!(c, '|' | '>')) {
        let (s, j) = block_scalar(ls, at, key_indent, style == '>');
        return (vec![s], j);
    }
    if !rest.is_empty() {
        return (vec![unquote(rest)], at + 1);
    }
    // A block sequence: `- item` lines at the key's indentation or deeper.
    let mut items = Vec::new();
    let mut j = at + 1;
    while j < ls.len() && ls[j].indent >= key_indent && ls[j].inner != ls[j].indent {
        let l = &ls[j];
        if let Some(style) = l.text.chars().next().filter(|c| matches!(c, '|' | '>')).filter(|_| l.text.len() <= 3) {
            let (s, next) = block_scalar(ls, j, l.indent, style == '>');
            items.push(s);
            j = next;
        } else {
            items.push(unquote(l.text));
            j += 1;
        }
    }
    (items, j)
}

/// `$(NAME)` (Kubernetes' expansion in command and args) as the shell's `${NAME}`.
fn kube_vars(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("$(") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        match tail.find(')').filter(|&e| e > 0 && tail[..e].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')) {
            Some(e) => {
                out.push_str(&format!("${{{}}}", &tail[..e]));
                rest = &tail[e + 1..];
            }
            None => {
                out.push_str("$(");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A word for the shell text: quoted when it holds more than one word.
fn quoted(w: &str) -> String {
    if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_=./:,@%+^${}".contains(c)) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// Reads a manifest; None when `text` is not one.
pub(crate) fn read(text: &str) -> Option<Manifest> {
    if !is_manifest(text) {
        return None;
    }
    let ls = lines(text);
    let kind = ls.iter().find(|l| l.indent == 0 && l.text.starts_with("kind:")).map(|l| unquote(&l.text[5..])).unwrap_or_default();
    let number = |v: &str| unquote(v).parse::<u64>().ok();
    // Invocations (command, then its args when they follow in the same container), and the environment.
    let mut runs: Vec<(usize, bool, Vec<String>)> = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < ls.len() {
        let l = &ls[i];
        let key = |k: &str| l.text.strip_prefix(k).and_then(|r| r.strip_prefix(':'));
        if let Some(rest) = key("command").or_else(|| key("args")) {
            let is_command = l.text.starts_with("command");
            let (items, next) = sequence(&ls, i, rest);
            match runs.last_mut() {
                Some((indent, true, words)) if !is_command && *indent == l.inner => {
                    words.extend(items);
                    *indent = usize::MAX;
                }
                _ => runs.push((l.inner, is_command, items)),
            }
            i = next;
            continue;
        }
        // An env entry: `- name: X` then `value: Y` in the same item.
        if let (Some(name), true) = (l.text.strip_prefix("name:"), l.inner != l.indent) {
            if let Some(v) = ls.get(i + 1).filter(|n| n.indent == l.inner).and_then(|n| n.text.strip_prefix("value:")) {
                let name = unquote(name);
                if !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    env.push((name, unquote(v)));
                }
            }
        }
        i += 1;
    }
    // The replica specs' pods (`*ReplicaSpecs:` children), and whether each requests GPUs.
    let mut all_pods = 0u64;
    let mut gpu_pods = 0u64;
    let mut gpus_per_pod: Option<u64> = None;
    let mut specs = false;
    // Where the last replica specs' scan ended: a `…ReplicaSpecs:` line inside them is not scanned again.
    let mut scanned = 0;
    for (k, l) in ls.iter().enumerate() {
        if k < scanned || !l.text.ends_with("ReplicaSpecs:") {
            continue;
        }
        specs = true;
        let Some(child) = ls.get(k + 1).map(|c| c.indent).filter(|&c| c > l.indent) else { continue };
        let mut j = k + 1;
        while j < ls.len() && ls[j].indent >= child {
            // One replica spec: its block runs to the next line at the child's indentation.
            let end = (j + 1..ls.len()).find(|&e| ls[e].indent <= child).unwrap_or(ls.len());
            let block = &ls[j + 1..end];
            let replicas = block.iter().find_map(|b| b.text.strip_prefix("replicas:").and_then(number)).unwrap_or(1);
            let gpus = block.iter().find_map(|b| b.text.strip_prefix("nvidia.com/gpu:").and_then(number));
            all_pods = all_pods.saturating_add(replicas);
            if let Some(g) = gpus.filter(|&g| g > 0) {
                gpu_pods = gpu_pods.saturating_add(replicas);
                gpus_per_pod = gpus_per_pod.or(Some(g));
            }
            j = end;
        }
        scanned = j;
    }
    let gpus_per_pod = gpus_per_pod.or_else(|| ls.iter().find_map(|b| b.text.strip_prefix("nvidia.com/gpu:").and_then(number)));
    let pods = specs.then_some(if gpu_pods > 0 { gpu_pods } else { all_pods }).filter(|&p| p > 0);
    let nproc = ls.iter().find_map(|b| b.text.strip_prefix("nprocPerNode:").map(unquote)).filter(|n| n != "auto");
    // The shell text: the operator's variables, the containers' environment, then each invocation.
    let mut shell = String::new();
    if kind == "PyTorchJob" && all_pods > 0 {
        shell.push_str(&format!("PET_NNODES={all_pods}\n"));
        if let Some(n) = nproc.or_else(|| gpus_per_pod.map(|g| g.to_string())) {
            shell.push_str(&format!("PET_NPROC_PER_NODE={}\n", quoted(&n)));
        }
    }
    for (name, value) in &env {
        shell.push_str(&format!("{name}={}\n", quoted(&kube_vars(value))));
    }
    for (_, _, words) in &runs {
        let words: Vec<String> = words.iter().map(|w| kube_vars(w)).collect();
        // `sh -c SCRIPT` (`bash -lc`, …): the script is shell text of its own.
        let shell_c = words.len() >= 3
            && matches!(words[0].rsplit('/').next(), Some("sh" | "bash"))
            && words[1].starts_with('-')
            && words[1].ends_with('c');
        if shell_c {
            shell.push_str(&words[2..].join("\n"));
        } else {
            shell.push_str(&words.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" "));
        }
        shell.push('\n');
    }
    let gpu_product = ls.iter().find_map(|b| b.text.strip_prefix("nvidia.com/gpu.product:").map(unquote)).filter(|p| !p.is_empty());
    Some(Manifest { kind, shell, pods, gpus_per_pod, gpu_product })
}

impl Manifest {
    /// The cluster the manifest's pods make, under what the command itself says (a weaker rank), and a note.
    pub(crate) fn size(&self, b: &mut Builder) {
        if let Some(p) = self.pods {
            b.set("cluster.num_nodes", Value::from(p), 3);
        }
        if let Some(g) = self.gpus_per_pod {
            b.set("cluster.gpus_per_node", Value::from(g), 3);
        }
        let pods = match (self.pods, self.gpus_per_pod) {
            (Some(p), Some(g)) => format!("; {p} pods of {g} GPUs (nvidia.com/gpu), each a node"),
            (Some(p), None) => format!("; {p} pods, each a node"),
            (None, Some(g)) => format!("; {g} GPUs per pod (nvidia.com/gpu)"),
            (None, None) => String::new(),
        };
        let kind = if self.kind.is_empty() { "manifest".to_string() } else { self.kind.clone() };
        b.notes.push(format!("read as a Kubernetes {kind}: its containers' command and args{pods}"));
        // GPU feature discovery's product label names the GPU when it names one catalogue entry.
        if let Some(p) = &self.gpu_product {
            b.gpu_named(p, 3, &format!("the pods' node selector nvidia.com/gpu.product: {p}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_scalars_and_variables() {
        assert_eq!(flow_items(r#""torchrun", "--nnodes=2", 'a b', c"#), ["torchrun", "--nnodes=2", "a b", "c"]);
        assert_eq!(kube_vars("--nnodes=$(PET_NNODES) $(echo x)"), "--nnodes=${PET_NNODES} $(echo x)");
        assert_eq!(quoted("a b"), "'a b'");
        assert_eq!(quoted("--tp=2"), "--tp=2");
        assert!(read("kind: Pod\n").is_none());
    }
}
