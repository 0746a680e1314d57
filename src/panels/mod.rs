//! One file per panel of the page. Each panel gets what it shows as props (the [`crate::state::Doc`] or
//! one of its memos) and writes through the [`crate::state::Editor`] in context; its own view state
//! (a chosen mesh, a search's result) stays inside it.

pub mod advanced;
pub mod advisor;
pub mod assumed;
pub mod cluster;
pub mod compare;
pub mod derived;
pub mod diagnostics;
pub mod exports;
pub mod grid;
pub mod header;
pub mod import;
pub mod memory;
pub mod model;
pub mod oom;
pub mod parallelism;
pub mod schedule;
pub mod sizing;
pub mod training;

pub use advanced::AdvancedMemory;
pub use advisor::AdvisorPanel;
pub use assumed::AssumedPanel;
pub use cluster::ClusterPanel;
pub use compare::ComparePanel;
pub use derived::DerivedPanel;
pub use diagnostics::DiagnosticsPanel;
pub use exports::ExportPanel;
pub use grid::GridPanel;
pub use header::{EmbedAction, Header, InputErrorPanel, Notice};
pub use import::ImportBox;
pub use memory::{MemoryDetails, MemoryPanel, SweepPanel};
pub use model::{HfConfigBox, ModelPanel, RecipePicker};
pub use oom::OomPanel;
pub use parallelism::ParallelismPanel;
pub use schedule::SchedulePanel;
pub use sizing::SizingPanel;
pub use training::TrainingPanel;
