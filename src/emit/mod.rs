//! Rendering: layouts as pahole-style text and as JSON.

pub mod json;
pub mod pahole;
