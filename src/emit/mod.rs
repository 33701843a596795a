//! Rendering: layouts as pahole-style text and as JSON.

pub mod c;
pub mod json;
pub mod pahole;
pub mod patch;
