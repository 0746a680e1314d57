//! Components and helpers more than one panel uses: the form controls bound to plan fields, the chart
//! frame that draws at its column's width, legend swatches, and what a Copy button last did.

pub mod chart;
pub mod controls;
pub mod copy;
