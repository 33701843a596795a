//! Rendering: layouts as pahole-style text, as JSON, and reports as an HTML page.

pub mod binding;
pub mod c;
pub mod cost_table;
pub mod diagnosis;
pub mod html;
pub mod json;
pub mod layout_diff;
pub mod optimize;
pub mod pahole;
pub mod patch;
pub mod prediction;
pub mod proposal;
pub mod replay;
