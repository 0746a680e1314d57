//! Components and helpers more than one panel uses: the form controls bound to plan fields, the chart
//! frame that draws at its column's width, and legend swatches.

pub mod chart;
pub mod controls;
