//! The launchers that start the training program, as one table: Slurm's (`srun`, `salloc`, `sbatch` and `#SBATCH`
//! directives), MPI's (Open MPI's `mpirun`/`mpiexec`/`orterun`, MPICH and Intel MPI's Hydra `mpiexec.hydra`) and
//! DeepSpeed's. Each launcher's options that size the job become one long form the Megatron-LM reader knows
//! (`--nodes=N`, `--ntasks=N`, `--ntasks-per-node=N`, `--gpus-per-node=N`, `--gres=…`, `--gpus=N`); every other option
//! of a launcher starts the job (containers, bindings, environment, accounts) and sizes nothing meshplan plans: it is
//! dropped, and the command line's are named in one note.

/// Which launcher a word starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Launcher {
    Slurm,
    Mpi,
    DeepSpeed,
    /// A container runtime (`docker run`, `podman run`, `apptainer exec`, `singularity exec`): its options, the image
    /// and the subcommand come before the program.
    Container,
}

/// What a sizing option gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size {
    Nodes,
    Tasks,
    TasksPerNode,
    GpusPerNode,
    /// Slurm's `--gres=gpu[:type]:N`: the GPUs per node.
    Gres,
    /// Slurm's `--gpus=[type:]N`: the job's GPUs in all.
    Gpus,
    /// MPI's host list `h1:8,h2:8`: one node per host, its slots the processes per node.
    Hosts,
    /// Open MPI's `--map-by ppr:N:node`: N processes per node (any other mapping places, not sizes).
    MapBy,
    /// Docker's `--gpus N` or `--gpus '"device=0,1"'`: the container's GPUs (`all`: the node's, unsized here).
    DeviceGpus,
    /// DeepSpeed's `--include NAME[:SLOT[,SLOT…]][@NAME…]`: one node per name, its listed GPUs (all of the node's
    /// where none are listed).
    Include,
}

use Launcher::{Container, DeepSpeed, Mpi, Slurm};
use Size::*;

/// Each launcher's options that size the job. Sources: Slurm's srun(1)/sbatch(1) (-N/--nodes, -n/--ntasks,
/// --ntasks-per-node, --gpus-per-node, --gres, -G/--gpus); Open MPI 4/5's mpirun(1) (-np/-n/-c/--np/--n the process
/// count, -N/-npernode/--npernode per node, -H/--host/-host a host list with `:slots`, --map-by ppr:N:node); MPICH's and
/// Intel MPI's Hydra mpiexec (-n/-np, -ppn/-perhost, -hosts); DeepSpeed's launcher (deepspeed/launcher/runner.py:
/// --num_nodes, --num_gpus per node, -i/--include `NODE_SPEC[@NODE_SPEC …]` with `NODE_SPEC = NAME[:SLOT[,SLOT …]]`);
/// Docker's and Podman's `run --gpus` (docker run(1): `all`, a count, or
/// `"device=0,1"`).
const SIZING: &[(Launcher, &str, Size)] = &[
    (Slurm, "-N", Nodes),
    (Slurm, "--nodes", Nodes),
    (Slurm, "-n", Tasks),
    (Slurm, "--ntasks", Tasks),
    (Slurm, "--ntasks-per-node", TasksPerNode),
    (Slurm, "--gpus-per-node", GpusPerNode),
    (Slurm, "--gres", Gres),
    (Slurm, "-G", Gpus),
    (Slurm, "--gpus", Gpus),
    (Mpi, "-np", Tasks),
    (Mpi, "--np", Tasks),
    (Mpi, "-n", Tasks),
    (Mpi, "--n", Tasks),
    (Mpi, "-c", Tasks),
    (Mpi, "-N", TasksPerNode),
    (Mpi, "-npernode", TasksPerNode),
    (Mpi, "--npernode", TasksPerNode),
    (Mpi, "-ppn", TasksPerNode),
    (Mpi, "-perhost", TasksPerNode),
    (Mpi, "-H", Hosts),
    (Mpi, "--host", Hosts),
    (Mpi, "-host", Hosts),
    (Mpi, "-hosts", Hosts),
    (Mpi, "--map-by", MapBy),
    (Mpi, "-map-by", MapBy),
    (DeepSpeed, "--num_nodes", Nodes),
    (DeepSpeed, "--num-nodes", Nodes),
    (DeepSpeed, "--num_gpus", GpusPerNode),
    (DeepSpeed, "--num-gpus", GpusPerNode),
    (DeepSpeed, "--include", Include),
    (DeepSpeed, "-i", Include),
    (Container, "--gpus", DeviceGpus),
];

/// At most this many of a launcher's own options are named in its note.
const MAX_NAMED: usize = 8;

/// The note on the `#SBATCH` directives' options that schedule the job (name, account, partition, time, …) and size
/// nothing meshplan plans: the directives' sizing options are read where the text is split (`shell::split`).
pub(crate) fn directives_note(text: &str) -> Option<String> {
    let lines = text.lines().filter_map(|l| l.trim_start().strip_prefix("#SBATCH"));
    let words: Vec<&str> = lines.flat_map(|d| d.split(" #").next().unwrap_or("").split_whitespace()).collect();
    let dropped = sizing(Slurm, &words).1;
    (!dropped.is_empty()).then(|| format!("#SBATCH options ({}) schedule the job and size nothing meshplan plans", dropped.join(", ")))
}

/// The launcher `word` (a path's last part) starts, if any.
pub(crate) fn launcher(word: &str) -> Option<Launcher> {
    match word.rsplit('/').next()? {
        "srun" | "salloc" | "sbatch" => Some(Slurm),
        "mpirun" | "mpiexec" | "orterun" | "prterun" | "mpiexec.hydra" | "mpirun.openmpi" | "mpiexec.openmpi" | "mpirun.mpich"
        | "mpiexec.mpich" => Some(Mpi),
        "deepspeed" => Some(DeepSpeed),
        "docker" | "nvidia-docker" | "podman" | "apptainer" | "singularity" => Some(Container),
        _ => None,
    }
}

/// A launcher's option words (those between the launcher and the program it starts): its sizing options in the long
/// form, and the names of the options it drops (each once, in order).
pub(crate) fn sizing<S: AsRef<str>>(launcher: Launcher, words: &[S]) -> (Vec<String>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_ref();
        i += 1;
        let Some((size, inline)) = option(launcher, w) else {
            // Another option (its value, a word of its own, goes with it below), or a value of one.
            if w.starts_with('-') {
                let name = w.split_once('=').map_or(w, |(n, _)| n);
                if dropped.len() < MAX_NAMED && !dropped.iter().any(|d| d == name) {
                    dropped.push(name.to_string());
                } else if dropped.len() == MAX_NAMED {
                    dropped.push("…".into());
                }
            }
            continue;
        };
        let value = match inline {
            Some(v) => v.to_string(),
            None if i < words.len() && !words[i].as_ref().starts_with('-') => {
                i += 1;
                words[i - 1].as_ref().to_string()
            }
            None => {
                dropped.push(w.to_string());
                continue;
            }
        };
        kept.extend(long_form(size, &value));
    }
    (kept, dropped)
}

/// The sizing option `w` spells for `launcher`, and its value when attached (`--nodes=4`, `-N4`).
fn option(launcher: Launcher, w: &str) -> Option<(Size, Option<&str>)> {
    SIZING.iter().filter(|(l, _, _)| *l == launcher).find_map(|&(_, spelling, size)| {
        let rest = w.strip_prefix(spelling)?;
        match rest {
            "" => Some((size, None)),
            _ if rest.starts_with('=') => Some((size, Some(&rest[1..]))),
            // Slurm's short options take their number attached (`-N4`).
            _ if launcher == Slurm && spelling.len() == 2 && rest.bytes().all(|c| c.is_ascii_digit()) => Some((size, Some(rest))),
            _ => None,
        }
    })
}

/// The long form of one sizing option's value.
fn long_form(size: Size, value: &str) -> Vec<String> {
    let flag = |f: &str| vec![format!("{f}={value}")];
    match size {
        Nodes => flag("--nodes"),
        Tasks => flag("--ntasks"),
        TasksPerNode => flag("--ntasks-per-node"),
        GpusPerNode => flag("--gpus-per-node"),
        Gres => flag("--gres"),
        Gpus => flag("--gpus"),
        Hosts => {
            let hosts: Vec<&str> = value.split(',').filter(|h| !h.is_empty()).collect();
            let slots: Vec<Option<&str>> = hosts.iter().map(|h| h.split_once(':').map(|(_, s)| s)).collect();
            let mut out = vec![format!("--nodes={}", hosts.len())];
            if let Some(Some(first)) = slots.first() {
                if slots.iter().all(|s| s == &Some(*first)) {
                    out.push(format!("--ntasks-per-node={first}"));
                }
            }
            out
        }
        MapBy => match value.strip_prefix("ppr:").and_then(|r| r.strip_suffix(":node")) {
            Some(n) => vec![format!("--ntasks-per-node={n}")],
            None => Vec::new(),
        },
        Include => {
            let nodes: Vec<&str> = value.trim_matches(['"', '\'']).split('@').filter(|n| !n.is_empty()).collect();
            let slots: Vec<Option<usize>> = nodes.iter().map(|n| n.split_once(':').map(|(_, s)| s.split(',').filter(|s| !s.is_empty()).count())).collect();
            let mut out = vec![format!("--nodes={}", nodes.len())];
            if let Some(Some(first)) = slots.first() {
                if slots.iter().all(|s| s == &Some(*first)) {
                    out.push(format!("--gpus-per-node={first}"));
                }
            }
            out
        }
        DeviceGpus => {
            let v = value.trim_matches(['"', '\'']);
            let n = match v.strip_prefix("device=") {
                Some(ids) => Some(ids.split(',').filter(|d| !d.is_empty()).count().to_string()),
                None => v.strip_prefix("count=").unwrap_or(v).bytes().all(|c| c.is_ascii_digit()).then(|| v.trim_start_matches("count=").to_string()),
            };
            n.filter(|n| !n.is_empty()).map(|n| vec![format!("--gpus-per-node={n}")]).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(l: Launcher, line: &str) -> (Vec<String>, Vec<String>) {
        sizing(l, &line.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn each_launcher_s_sizing_options_in_one_long_form() {
        // srun(1): -N/-n take their number attached or apart; the container options size nothing.
        let (kept, dropped) = sized(Slurm, "-N4 -n 32 --mpi=pmix --container-image nvcr.io/x --gres=gpu:h100:8");
        assert_eq!(kept, ["--nodes=4", "--ntasks=32", "--gres=gpu:h100:8"]);
        assert_eq!(dropped, ["--mpi", "--container-image"]);
        // mpirun(1): -np the processes, --npernode per node; -x and --mca carry environment and parameters.
        let (kept, dropped) = sized(Mpi, "-np 16 --npernode 8 -x NCCL_DEBUG=INFO --mca btl ^openib --bind-to none");
        assert_eq!(kept, ["--ntasks=16", "--ntasks-per-node=8"]);
        assert_eq!(dropped, ["-x", "--mca", "--bind-to"]);
        // A host list with slots: two nodes of 8; without slots, two nodes.
        assert_eq!(sized(Mpi, "-H node1:8,node2:8").0, ["--nodes=2", "--ntasks-per-node=8"]);
        assert_eq!(sized(Mpi, "-hosts a,b,c -ppn 4").0, ["--nodes=3", "--ntasks-per-node=4"]);
        // --map-by ppr:8:node places 8 per node; another mapping sizes nothing.
        assert_eq!(sized(Mpi, "--map-by ppr:8:node").0, ["--ntasks-per-node=8"]);
        assert!(sized(Mpi, "--map-by socket").0.is_empty());
        // Open MPI's -N is per node (Slurm's is nodes).
        assert_eq!(sized(Mpi, "-N 8").0, ["--ntasks-per-node=8"]);
        assert_eq!(sized(DeepSpeed, "--num_nodes 2 --num_gpus 8 --master_port 29500").0, ["--nodes=2", "--gpus-per-node=8"]);
        // deepspeed's resource filter: one node per name, its listed GPUs; a name alone is the node's GPUs.
        assert_eq!(sized(DeepSpeed, "--include localhost:0,1,2,3").0, ["--nodes=1", "--gpus-per-node=4"]);
        assert_eq!(sized(DeepSpeed, "-i worker-0:0,2@worker-1:1,3").0, ["--nodes=2", "--gpus-per-node=2"]);
        assert_eq!(sized(DeepSpeed, "--include=worker-0@worker-1").0, ["--nodes=2"]);
        // docker run(1): a count or a device list is the container's GPUs; `all` is the node's.
        let (kept, dropped) = sized(Container, "run --rm --gpus 4 --ipc=host -v /d:/d nvcr.io/nvidia/pytorch:25.01-py3");
        assert_eq!((kept, dropped), (vec!["--gpus-per-node=4".to_string()], vec!["--rm".to_string(), "--ipc".into(), "-v".into()]));
        assert_eq!(sized(Container, "run --gpus \"device=0,1,2,3\" img").0, ["--gpus-per-node=4"]);
        assert!(sized(Container, "run --gpus all img").0.is_empty());
    }

    #[test]
    fn launchers_by_path() {
        assert_eq!(launcher("/usr/bin/mpirun"), Some(Mpi));
        assert_eq!(launcher("srun"), Some(Slurm));
        assert_eq!(launcher("python"), None);
    }
}
