//! DWARF reader (placeholder until the gimli-based reader lands).

use crate::types::Types;

#[derive(Debug, thiserror::Error)]
pub enum DwarfError {
    #[error("{0}")]
    Invalid(String),
}

pub fn parse<'a>(
    _elf: &'a [u8],
    _arena: &'a typed_arena::Arena<Vec<u8>>,
) -> Result<Types<'a>, DwarfError> {
    Err(DwarfError::Invalid(
        "DWARF reading is not implemented yet".into(),
    ))
}
