//! Components and helpers more than one panel uses: the form controls bound to plan fields, the chart
//! frame that draws at its column's width, legend swatches, what a Copy button last did, and the ids of the slots
//! the tools module mounts its panels into.

pub mod chart;
pub mod controls;
pub mod copy;
pub mod slot;
