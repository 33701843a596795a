//! Errors of the profile importers and of the profile file itself. Every message is one line
//! and, where the input has lines, names the line: an engineer pasting a report should see at
//! once which row lineup could not read.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProfileError {
    /// A line of the input that cannot be interpreted (1-based line number).
    #[error("line {line}: {message}")]
    Parse { line: usize, message: String },
    /// The input holds nothing the importer recognizes: not an empty profile, an error.
    #[error("{0}")]
    NoData(String),
    /// A hand-written sketch that does not describe accesses correctly.
    #[error("sketch: {0}")]
    Sketch(String),
    /// A profile JSON file that cannot be read.
    #[error("profile JSON: {0}")]
    Json(String),
    /// An importer option that cannot work (a cache line size that is not a power of two).
    #[error("invalid option: {0}")]
    Option(String),
    /// A profile written by a newer (or unknown) lineup.
    #[error("profile schema {found} is not supported (this lineup reads version {supported})")]
    Schema { found: u32, supported: u32 },
}

impl ProfileError {
    pub(crate) fn parse(line: usize, message: impl Into<String>) -> Self {
        ProfileError::Parse {
            line,
            message: message.into(),
        }
    }

    /// The 1-based input line the error is about, when there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ProfileError::Parse { line, .. } => Some(*line),
            _ => None,
        }
    }
}
