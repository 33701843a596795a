//! BTF reader: raw `.BTF` blobs (`/sys/kernel/btf/vmlinux`, module split BTF) into [`Types`].
//!
//! Written by hand rather than with `btf-rs` because lineup needs three things at once: names
//! borrowed straight from the mapped file (no copy of the 2 MB string table), split BTF whose
//! ids continue a base, and a precise one-line error for every malformed byte instead of a
//! panic (the reader is fuzzed). The format is the kernel's `Documentation/bpf/btf.rst`.

use crate::types::{Composite, Enumerator, Kind, Member, Qualifier, Type, TypeId, Types};

pub const MAGIC: u16 = 0xeb9f;
const HEADER_MIN: usize = 24;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BtfError {
    #[error("not BTF (magic {0:#06x}, expected 0xeb9f)")]
    BadMagic(u16),
    #[error("truncated BTF: {0}")]
    Truncated(String),
    #[error("corrupt BTF: {0}")]
    Corrupt(String),
    #[error("unsupported BTF version {0}")]
    Version(u8),
}

#[derive(Clone, Copy)]
enum Endian {
    Little,
    Big,
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    fn u32(&mut self) -> Result<u32, BtfError> {
        let bytes = self
            .data
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| {
                BtfError::Truncated(format!(
                    "type section ends inside a record at byte {} of {}",
                    self.pos,
                    self.data.len()
                ))
            })?
            .try_into()
            .expect("slice of 4");
        self.pos += 4;
        Ok(match self.endian {
            Endian::Little => u32::from_le_bytes(bytes),
            Endian::Big => u32::from_be_bytes(bytes),
        })
    }
}

/// The string table of one BTF blob, plus the base's when this one is split BTF.
struct Strings<'a> {
    own: &'a [u8],
    /// Offsets below `base_len` name strings of the base blob.
    base: Option<&'a [u8]>,
}

impl<'a> Strings<'a> {
    fn get(&self, off: u32) -> Result<&'a str, BtfError> {
        let (table, off) = match self.base {
            Some(base) if (off as usize) < base.len() => (base, off as usize),
            Some(base) => (self.own, off as usize - base.len()),
            None => (self.own, off as usize),
        };
        let rest = table.get(off..).ok_or_else(|| {
            BtfError::Corrupt(format!(
                "name offset {off} past the string table ({} bytes)",
                table.len()
            ))
        })?;
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            BtfError::Corrupt(format!("string at offset {off} is not terminated"))
        })?;
        let bytes = &rest[..end];
        Ok(std::str::from_utf8(bytes).unwrap_or_else(|_| crate::types::lossy_name(bytes)))
    }
}

/// A parsed header: where the two sections lie in the blob.
struct Header<'a> {
    endian: Endian,
    types: &'a [u8],
    strings: &'a [u8],
}

fn header(data: &[u8]) -> Result<Header<'_>, BtfError> {
    if data.len() < HEADER_MIN {
        return Err(BtfError::Truncated(format!(
            "{} bytes, shorter than the 24-byte header",
            data.len()
        )));
    }
    let endian = match u16::from_le_bytes([data[0], data[1]]) {
        MAGIC => Endian::Little,
        m if m.swap_bytes() == MAGIC => Endian::Big,
        m => return Err(BtfError::BadMagic(m)),
    };
    let mut c = Cursor {
        data,
        pos: 4,
        endian,
    };
    if data[2] != 1 {
        return Err(BtfError::Version(data[2]));
    }
    let hdr_len = c.u32()? as usize;
    let type_off = c.u32()? as usize;
    let type_len = c.u32()? as usize;
    let str_off = c.u32()? as usize;
    let str_len = c.u32()? as usize;
    if hdr_len < HEADER_MIN || hdr_len > data.len() {
        return Err(BtfError::Corrupt(format!(
            "header length {hdr_len} is invalid"
        )));
    }
    let section = |what: &str, off: usize, len: usize| {
        let start = hdr_len.checked_add(off);
        let end = start.and_then(|s| s.checked_add(len));
        match (start, end) {
            (Some(s), Some(e)) if e <= data.len() => Ok(&data[s..e]),
            _ => Err(BtfError::Truncated(format!(
                "{what} section claims bytes {}..{} but the blob has {}",
                hdr_len as u128 + off as u128,
                hdr_len as u128 + off as u128 + len as u128,
                data.len()
            ))),
        }
    };
    let types = section("type", type_off, type_len)?;
    let strings = section("string", str_off, str_len)?;
    if !type_len.is_multiple_of(4) {
        return Err(BtfError::Corrupt(format!(
            "type section length {type_len} is not a multiple of 4"
        )));
    }
    Ok(Header {
        endian,
        types,
        strings,
    })
}

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// Parses a complete (base) BTF blob.
pub fn parse(data: &[u8]) -> Result<Types<'_>, BtfError> {
    let hdr = header(data)?;
    let strings = Strings {
        own: hdr.strings,
        base: None,
    };
    let mut types = Types::new(8);
    read_types(&hdr, &strings, &mut types)?;
    refuse_value_cycles(&types)?;
    Ok(types)
}

/// No C type contains itself by value; corrupt BTF that says one does is refused here, so
/// no later walk has to make sense of it.
fn refuse_value_cycles(types: &Types<'_>) -> Result<(), BtfError> {
    match crate::types::walk::value_cycle(types) {
        None => Ok(()),
        Some(id) => {
            let name = types.get(id).name;
            Err(BtfError::Corrupt(format!(
                "type [{id}]{}{} contains itself by value, which no C type can",
                if name.is_empty() { "" } else { " " },
                name.escape_debug()
            )))
        }
    }
}

/// Parses split BTF (a module's `.BTF`) whose ids and string offsets continue `base_data`.
/// The result holds the base's types followed by the module's.
pub fn parse_split<'a>(base_data: &'a [u8], data: &'a [u8]) -> Result<Types<'a>, SplitError> {
    let base_hdr = header(base_data).map_err(SplitError::Base)?;
    let mut types = Types::new(8);
    read_types(
        &base_hdr,
        &Strings {
            own: base_hdr.strings,
            base: None,
        },
        &mut types,
    )
    .map_err(SplitError::Base)?;
    let hdr = header(data).map_err(SplitError::Split)?;
    let strings = Strings {
        own: hdr.strings,
        base: Some(base_hdr.strings),
    };
    read_types(&hdr, &strings, &mut types).map_err(SplitError::Split)?;
    refuse_value_cycles(&types).map_err(SplitError::Split)?;
    Ok(types)
}

/// Which of the two inputs of [`parse_split`] is broken: each is a file of its own, and the
/// error must name the right one.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    #[error("base BTF: {0}")]
    Base(BtfError),
    #[error("{0}")]
    Split(BtfError),
}

fn read_types<'a>(
    hdr: &Header<'a>,
    strings: &Strings<'a>,
    types: &mut Types<'a>,
) -> Result<(), BtfError> {
    let mut c = Cursor {
        data: hdr.types,
        pos: 0,
        endian: hdr.endian,
    };
    // A rough count lets us allocate once: the smallest record is 12 bytes.
    types.types.reserve(hdr.types.len() / 16);
    let first_new = types.types.len() as u64;
    // Variables' types by variable id, and the variables of the per-CPU section.
    let mut var_type: std::collections::HashMap<usize, u32> = std::collections::HashMap::new();
    let mut per_cpu_vars: Vec<usize> = Vec::new();
    let mut other_vars: Vec<usize> = Vec::new();
    while c.pos < c.data.len() {
        let id = types.types.len();
        let name_off = c.u32()?;
        let info = c.u32()?;
        let size_or_type = c.u32()?;
        let kind_no = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let kind_flag = info >> 31 == 1;
        let name = strings.get(name_off).map_err(|e| at(id, e))?;
        // Each variable-length record must fit in what is left: check before allocating.
        let need = |per: usize| -> Result<(), BtfError> {
            if vlen * per > c.data.len() - c.pos {
                Err(BtfError::Truncated(format!(
                    "type [{id}] has {vlen} entries that run past the type section"
                )))
            } else {
                Ok(())
            }
        };
        let kind = match kind_no {
            KIND_INT => {
                let enc = c.u32()?;
                let bits = enc & 0xff;
                Kind::Int {
                    size: size_or_type,
                    signed: (enc >> 24) & 1 != 0,
                    is_char: (enc >> 24) & 2 != 0 || (bits == 8 && name.contains("char")),
                    is_bool: (enc >> 24) & 4 != 0,
                }
            }
            KIND_PTR => Kind::Pointer {
                target: size_or_type,
            },
            KIND_ARRAY => {
                let elem = c.u32()?;
                let _index = c.u32()?;
                let count = c.u32()? as u64;
                Kind::Array { elem, count }
            }
            KIND_STRUCT | KIND_UNION => {
                need(12)?;
                let mut members = Vec::with_capacity(vlen);
                for _ in 0..vlen {
                    let m_name = strings.get(c.u32()?).map_err(|e| at(id, e))?;
                    let ty = c.u32()?;
                    let off = c.u32()?;
                    let (bit_offset, bitfield_size) = if kind_flag {
                        ((off & 0x00ff_ffff) as u64, off >> 24)
                    } else {
                        (off as u64, 0)
                    };
                    members.push(Member {
                        name: m_name,
                        ty,
                        bit_offset,
                        bitfield_size,
                        declared_align: None,
                    });
                }
                let comp = Composite {
                    size: size_or_type as u64,
                    members,
                    declared_align: None,
                    is_declaration: false,
                    origin: None,
                };
                if kind_no == KIND_STRUCT {
                    Kind::Struct(comp)
                } else {
                    Kind::Union(comp)
                }
            }
            KIND_ENUM | KIND_ENUM64 => {
                let per = if kind_no == KIND_ENUM { 8 } else { 12 };
                need(per)?;
                let mut values = Vec::with_capacity(vlen);
                for _ in 0..vlen {
                    let e_name = strings.get(c.u32()?).map_err(|e| at(id, e))?;
                    let lo = c.u32()?;
                    let value = if kind_no == KIND_ENUM {
                        if kind_flag {
                            lo as i32 as i64 as u64
                        } else {
                            lo as u64
                        }
                    } else {
                        (c.u32()? as u64) << 32 | lo as u64
                    };
                    values.push(Enumerator {
                        name: e_name,
                        value,
                    });
                }
                Kind::Enum {
                    size: size_or_type,
                    signed: kind_flag,
                    values,
                }
            }
            KIND_FWD => Kind::Fwd {
                is_union: kind_flag,
            },
            KIND_TYPEDEF => Kind::Typedef {
                target: size_or_type,
            },
            KIND_VOLATILE | KIND_CONST | KIND_RESTRICT => Kind::Qualified {
                qualifier: match kind_no {
                    KIND_VOLATILE => Qualifier::Volatile,
                    KIND_CONST => Qualifier::Const,
                    _ => Qualifier::Restrict,
                },
                target: size_or_type,
            },
            KIND_FUNC => {
                types.functions.push(crate::types::Function {
                    name,
                    proto: size_or_type,
                });
                Kind::Other
            }
            KIND_FUNC_PROTO => {
                need(8)?;
                let mut params = Vec::with_capacity(vlen);
                let mut variadic = false;
                for i in 0..vlen {
                    let _param_name = c.u32()?;
                    let ty = c.u32()?;
                    // A last parameter of type void marks `...`.
                    if ty == 0 && i + 1 == vlen {
                        variadic = true;
                    } else {
                        params.push(ty);
                    }
                }
                Kind::FuncProto {
                    ret: size_or_type,
                    params,
                    variadic,
                }
            }
            KIND_VAR | KIND_DECL_TAG => {
                c.u32()?;
                if kind_no == KIND_VAR {
                    var_type.insert(id, size_or_type);
                }
                Kind::Other
            }
            KIND_DATASEC => {
                need(12)?;
                for _ in 0..vlen {
                    let var = c.u32()?;
                    c.pos += 8;
                    if name == ".data..percpu" {
                        per_cpu_vars.push(var as usize);
                    } else {
                        other_vars.push(var as usize);
                    }
                }
                Kind::Other
            }
            KIND_FLOAT => Kind::Float { size: size_or_type },
            KIND_TYPE_TAG => Kind::TypeTag {
                target: size_or_type,
                tag: name,
            },
            other => {
                return Err(BtfError::Corrupt(format!(
                    "type [{id}] has unknown kind {other}"
                )));
            }
        };
        // Type tags carry their tag in the name slot; the type itself is unnamed.
        let name = if kind_no == KIND_TYPE_TAG { "" } else { name };
        types.types.push(Type { name, kind });
    }
    validate_refs(types, first_new)?;
    // Only ids that name a type (corrupt BTF may point anywhere).
    let n = types.types.len() as u64;
    types.per_cpu.extend(
        per_cpu_vars
            .iter()
            .filter_map(|v| var_type.get(v))
            .filter(|&&t| u64::from(t) < n),
    );
    types.globals.extend(
        other_vars
            .iter()
            .filter_map(|v| var_type.get(v))
            .filter(|&&t| u64::from(t) < n),
    );
    Ok(())
}

fn at(id: usize, e: BtfError) -> BtfError {
    match e {
        BtfError::Corrupt(m) => BtfError::Corrupt(format!("type [{id}]: {m}")),
        other => other,
    }
}

/// Every type id a record names must exist, and sizes must be sane, so later stages can index
/// without checks.
fn validate_refs(types: &Types<'_>, first_new: u64) -> Result<(), BtfError> {
    let n = types.types.len() as u64;
    let check = |id: usize, r: TypeId| {
        if (r as u64) < n {
            Ok(())
        } else {
            Err(BtfError::Corrupt(format!(
                "type [{id}] refers to type [{r}], but there are only {n} types"
            )))
        }
    };
    for (id, t) in types.types.iter().enumerate().skip(first_new as usize) {
        match &t.kind {
            Kind::Pointer { target }
            | Kind::Typedef { target }
            | Kind::Qualified { target, .. }
            | Kind::TypeTag { target, .. } => check(id, *target)?,
            Kind::Array { elem, .. } => check(id, *elem)?,
            Kind::Struct(c) | Kind::Union(c) => {
                for m in &c.members {
                    check(id, m.ty)?;
                    if m.bit_offset / 8 > c.size && c.size > 0 {
                        return Err(BtfError::Corrupt(format!(
                            "type [{id}] member '{}' at bit {} lies outside its {}-byte struct",
                            m.name.escape_debug(),
                            m.bit_offset,
                            c.size
                        )));
                    }
                }
            }
            Kind::FuncProto { ret, params, .. } => {
                check(id, *ret)?;
                for p in params {
                    check(id, *p)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a little-endian BTF blob from raw type records and a string table.
    pub(crate) fn blob(type_words: &[u32], strings: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.push(1);
        out.push(0);
        let tlen = (type_words.len() * 4) as u32;
        for v in [24u32, 0, tlen, tlen, strings.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for w in type_words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(strings);
        out
    }

    const STRS: &[u8] = b"\0int\0s\0a\0b\0c\0";

    fn sample() -> Vec<u8> {
        blob(
            &[
                // [1] int, 4 bytes, signed, 32 bits
                1,
                KIND_INT << 24,
                4,
                (1 << 24) | 32,
                // [2] struct s { int a; int b:3; int c:5; } with kind_flag (bitfields)
                5,
                (KIND_STRUCT << 24) | (1 << 31) | 3,
                8,
                7,
                1,
                0,
                9,
                1,
                (3 << 24) | 32,
                11,
                1,
                (5 << 24) | 35,
            ],
            STRS,
        )
    }

    #[test]
    fn reads_struct_with_bitfields() {
        let data = sample();
        let t = parse(&data).unwrap();
        assert_eq!(t.len(), 3);
        let c = t.composite(2).unwrap();
        assert_eq!(t.get(2).name, "s");
        assert_eq!(c.size, 8);
        let names: Vec<_> = c.members.iter().map(|m| m.name).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(
            (c.members[1].bit_offset, c.members[1].bitfield_size),
            (32, 3)
        );
        assert_eq!(
            (c.members[2].bit_offset, c.members[2].bitfield_size),
            (35, 5)
        );
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let data = sample();
        for len in 0..data.len() {
            assert!(parse(&data[..len]).is_err(), "prefix of {len} bytes parsed");
        }
    }

    #[test]
    fn dangling_type_reference_is_reported() {
        let data = blob(&[0, KIND_PTR << 24, 42], b"\0");
        let err = parse(&data).unwrap_err().to_string();
        assert!(err.contains("refers to type [42]"), "{err}");
    }

    #[test]
    fn bad_magic_is_reported() {
        let mut data = sample();
        data[0] = 0x7f;
        assert!(matches!(parse(&data), Err(BtfError::BadMagic(_))));
    }

    #[test]
    fn split_btf_continues_base_ids_and_strings() {
        let base = sample();
        // Split: [3] struct t { struct s x; } naming "t" at split string offset 1.
        let split = blob(
            &[
                STRS.len() as u32 + 1,
                (KIND_STRUCT << 24) | 1,
                8,
                7, // member name: "a", a string of the base
                2,
                0,
            ],
            b"\0t\0",
        );
        let t = parse_split(&base, &split).unwrap();
        assert_eq!(t.get(3).name, "t");
        let c = t.composite(3).unwrap();
        assert_eq!(c.members[0].name, "a");
        assert_eq!(c.members[0].ty, 2);
    }

    /// Corrupt BTF where types contain themselves by value, in each of the ways it can be
    /// said: a struct member of its own type, a typedef cycle, an array of itself, an
    /// anonymous struct holding itself twice. Each is refused naming the type, never walked.
    #[test]
    fn types_that_contain_themselves_are_refused() {
        let int = [1, KIND_INT << 24, 4, (1 << 24) | 32];
        let cases: Vec<(Vec<u32>, &str)> = vec![
            // [2] struct s { struct s a; }
            (
                vec![5, (KIND_STRUCT << 24) | 1, 8, 7, 2, 0],
                "type [2] s contains itself",
            ),
            // [2] typedef a -> [3] typedef b -> [2]
            (
                vec![7, KIND_TYPEDEF << 24, 3, 9, KIND_TYPEDEF << 24, 2],
                "contains itself by value",
            ),
            // [2] array of 4 [2] (index type int)
            (
                vec![0, KIND_ARRAY << 24, 0, 2, 1, 4],
                "type [2] contains itself",
            ),
            // [2] struct s { [3] x; }, [3] anonymous struct { [3] a; [3] b; }
            (
                vec![
                    5,
                    (KIND_STRUCT << 24) | 1,
                    8,
                    7,
                    3,
                    0,
                    0,
                    (KIND_STRUCT << 24) | 2,
                    8,
                    7,
                    3,
                    0,
                    9,
                    3,
                    32,
                ],
                "type [3] contains itself",
            ),
        ];
        for (words, want) in cases {
            let mut all = int.to_vec();
            all.extend(words);
            let err = parse(&blob(&all, STRS)).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
            assert!(!err.contains('\n'));
        }
    }

    /// Cycles through pointers are legal C (a prototype taking a pointer to itself twice,
    /// which doubles at every level): reading succeeds and every stage's output is bounded.
    #[test]
    fn pointer_cycles_give_bounded_output() {
        let words = [
            1,
            KIND_INT << 24,
            4,
            (1 << 24) | 32,
            // [2] int (*)(p, p) where [3] p = pointer to [2]
            0,
            (KIND_FUNC_PROTO << 24) | 2,
            1,
            0,
            3,
            0,
            3,
            // [3] pointer to [2]
            0,
            KIND_PTR << 24,
            2,
            // [4] struct s { [3] f; [5] g; }
            5,
            (KIND_STRUCT << 24) | 2,
            16,
            7,
            3,
            0,
            9,
            5,
            64,
            // [5] pointer to [3]
            0,
            KIND_PTR << 24,
            3,
        ];
        let data = blob(&words, STRS);
        let types = parse(&data).unwrap();
        let run = crate::stages::types_to_text(&types, 64);
        assert_eq!(run.layouts, 1);
        assert!(run.pahole_bytes < 1 << 20, "{run:?}");
        let l = crate::layout::layout(&types, 4, 64).unwrap();
        let mut out = Vec::new();
        crate::emit::pahole::write_layout(&mut out, &types, &l);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("<type loop>"), "{text}");
    }

    /// A name that is not UTF-8 keeps its valid parts: the struct does not disappear and its
    /// member does not print nameless.
    #[test]
    fn non_utf8_names_are_kept_lossily() {
        let strs = b"\0int\0caf\xe9\0\xffx\0";
        let words = [
            1,
            KIND_INT << 24,
            4,
            (1 << 24) | 32,
            // [2] struct "caf\xe9" { int "\xffx"; }
            5,
            (KIND_STRUCT << 24) | 1,
            4,
            10,
            1,
            0,
        ];
        let data = blob(&words, strs);
        let types = parse(&data).unwrap();
        assert_eq!(types.get(2).name, "caf\u{fffd}");
        assert_eq!(types.composite(2).unwrap().members[0].name, "\u{fffd}x");
        let l = crate::layout::layout(&types, 2, 64).unwrap();
        let mut out = Vec::new();
        crate::emit::pahole::write_layout(&mut out, &types, &l);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("struct caf\u{fffd} {"), "{text}");
        assert!(
            text.contains("int                        \u{fffd}x;"),
            "{text}"
        );
    }
}
