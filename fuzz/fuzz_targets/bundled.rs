//! The bundled kernel BTF, read once per fuzzing process: the types profiles are bound to.

use lineup::types::Types;
use std::sync::OnceLock;

pub fn types() -> &'static Types<'static> {
    static TYPES: OnceLock<Types<'static>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/vmlinux-6.18.44.btf");
        let data: &'static [u8] = Box::leak(std::fs::read(path).expect(path).into_boxed_slice());
        lineup::readers::btf::parse(data).expect("the bundled BTF reads")
    })
}
