//! DWARF reader: the type DIEs of an ELF file's `.debug_info` (and `.debug_types`) into
//! [`Types`].
//!
//! Reads DWARF 2 to 5 as gcc and clang write it, from executables, shared objects and
//! relocatable objects (`.o`, `.ko`), whose debug sections are relocated first: without that,
//! every `DW_FORM_strp` name and every `.debug_str_offsets` entry of an x86-64 object reads as 0.
//! Compressed sections (`SHF_COMPRESSED`, `.zdebug_*`) are inflated into the input's arena, so
//! that names, like those read straight from the mapped file, borrow for `'a`.
//!
//! How DWARF maps to the model:
//!
//! * Every type DIE gets one [`TypeId`]. DIE offsets are keyed by section and offset, so
//!   references across units (`DW_FORM_ref_addr`) and to type units (`DW_FORM_ref_sig8`,
//!   `DW_AT_signature`) resolve; a reference to a DIE not read yet reserves its id.
//! * One `DW_TAG_array_type` with several subranges becomes nested arrays: `int a[2][3]` is
//!   `Array { count: 2, elem: Array { count: 3, elem: int } }`. A missing bound is count 0.
//! * Struct members carry absolute bit offsets, from `DW_AT_data_bit_offset`, from
//!   `DW_AT_data_member_location` (a constant or a `DW_OP_plus_uconst` expression), or from
//!   the DWARF 2/3 `DW_AT_bit_offset` + `DW_AT_byte_size` pair (counted from the storage
//!   unit's most significant bit). Static members are left out; so are virtual base classes,
//!   whose offset is only known at run time. A base class (`DW_TAG_inheritance`) is a member
//!   with an empty name whose type is the base class (pahole prints it as `<ancestor>`).
//! * C++ references are pointers. A pointer to a data member is a pointer; a pointer to a
//!   member function, two pointer-sized words in the Itanium ABI, is an array of two pointers
//!   to the function type, so that its size and alignment come out right. `decltype(nullptr)`
//!   is a `void *` of that name; other `DW_TAG_unspecified_type`s are [`Kind::Other`].
//!
//! The same header seen by many compile units yields the same struct many times. After all
//! units are read, named structs and unions (and anonymous ones behind a typedef) that share a
//! name and a layout are merged: every reference goes to the first, and the others stay in
//! the arena marked `is_declaration` so that [`Types::composites`] lists each definition once.
//! Different definitions of one name all stay, each with its [`Origin`]. A declaration
//! (`struct foo;`, or a class clang left undefined in this unit) is resolved to the
//! definition of that name when there is exactly one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use gimli::{AttributeValue, EndianSlice, RunTimeEndian, constants as dw};
use object::{Object, ObjectSection, ObjectSymbol};

use crate::types::walk::{self, Guard};
use crate::types::{
    Composite, Enumerator, Kind, Member, Origin, Qualifier, Type, TypeId, Types, VOID,
};

#[derive(Debug, thiserror::Error)]
pub enum DwarfError {
    #[error("not a valid ELF file: {0}")]
    NotElf(String),
    #[error("no .debug_info section (not built with -g?)")]
    NoDebugInfo,
    #[error("cannot read section {section}: {problem}")]
    Section { section: String, problem: String },
    #[error("corrupt DWARF in {section} unit at {offset:#x}: {problem}")]
    Corrupt {
        section: &'static str,
        offset: u64,
        problem: String,
    },
    #[error("corrupt DWARF in {section}: {problem}")]
    CorruptSection {
        section: &'static str,
        problem: String,
    },
}

pub(crate) type Slice<'a> = EndianSlice<'a, RunTimeEndian>;
type Unit<'a> = gimli::Unit<Slice<'a>>;

/// Largest struct we believe in (BTF's limit): anything bigger is a corrupt size.
const MAX_SIZE: u64 = u32::MAX as u64;

/// What is wrong inside one unit.
enum Problem {
    Dwarf(gimli::Error),
    Layout(String),
}

impl From<gimli::Error> for Problem {
    fn from(e: gimli::Error) -> Self {
        Problem::Dwarf(e)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Dwarf(e) => write!(f, "{e}"),
            Problem::Layout(s) => f.write_str(s),
        }
    }
}

/// Beyond this many tokens a layout signature stops growing (a crafted input could make it
/// explode); two types that agree that far are considered the same.
const MAX_SIGNATURE: usize = 1 << 14;

/// Parses the DWARF of ELF file `elf`. Decompressed and relocated sections go to `arena`.
pub fn parse<'a>(
    elf: &'a [u8],
    arena: &'a typed_arena::Arena<Vec<u8>>,
) -> Result<Types<'a>, DwarfError> {
    let sections = Sections::load(elf, arena)?;
    let dwarf = sections.dwarf();
    let mut reader = TypeReader::new(&dwarf, sections.big_endian);
    reader.index_type_units(&sections)?;
    reader.types = Types::new(reader.pointer_size.unwrap_or(sections.default_pointer_size));
    for bucket in sections.buckets() {
        reader.read_bucket(bucket)?;
    }
    reader.finish()
}

// ---------------------------------------------------------------------------------------------
// Sections

/// The debug sections of one ELF file, relocated and decompressed.
struct Sections<'a> {
    endian: RunTimeEndian,
    big_endian: bool,
    default_pointer_size: u32,
    /// Every `.debug_info` section: one in a linked file, one per COMDAT group (DWARF 5 type
    /// units) besides the main one in a relocatable object.
    info: Vec<&'a [u8]>,
    /// Every `.debug_types` section (DWARF 4 type units), likewise.
    types: Vec<&'a [u8]>,
    abbrev: &'a [u8],
    str_: &'a [u8],
    str_offsets: &'a [u8],
    line: &'a [u8],
    line_str: &'a [u8],
    addr: &'a [u8],
    /// The sections are a split DWARF object's (`.debug_info.dwo`, in a `.dwo` file or a
    /// package `.dwp`): string offsets start right after their header, with no base
    /// attribute.
    dwo: bool,
}

/// A `.debug_info` or `.debug_types` section to read units from. Bucket numbers keep DIE
/// offsets of different sections apart.
#[derive(Clone, Copy)]
struct Bucket<'a> {
    number: u64,
    is_types: bool,
    data: &'a [u8],
}

impl<'a> Sections<'a> {
    fn load(elf: &'a [u8], arena: &'a typed_arena::Arena<Vec<u8>>) -> Result<Self, DwarfError> {
        let obj = object::File::parse(elf).map_err(|e| DwarfError::NotElf(e.to_string()))?;
        if obj.format() != object::BinaryFormat::Elf {
            return Err(DwarfError::NotElf(format!("{:?} file", obj.format())));
        }
        let big_endian = !obj.is_little_endian();
        let relocatable = obj.kind() == object::ObjectKind::Relocatable;
        let mut s = Sections {
            endian: if big_endian {
                RunTimeEndian::Big
            } else {
                RunTimeEndian::Little
            },
            big_endian,
            default_pointer_size: if obj.is_64() { 8 } else { 4 },
            info: Vec::new(),
            types: Vec::new(),
            abbrev: &[],
            str_: &[],
            str_offsets: &[],
            line: &[],
            line_str: &[],
            addr: &[],
            dwo: false,
        };
        let mut seen_info = false;
        for section in obj.sections() {
            let Ok(raw_name) = section.name() else {
                continue;
            };
            let mut name = match raw_name.strip_prefix(".zdebug_") {
                Some(rest) => Cow::Owned(format!(".debug_{rest}")),
                None => Cow::Borrowed(raw_name),
            };
            // A split DWARF object (gcc/clang -gsplit-dwarf) names its sections `.dwo`.
            if let Some(base) = name.strip_suffix(".dwo") {
                s.dwo = true;
                name = Cow::Owned(base.to_string());
            }
            let slot: Option<&mut &'a [u8]> = match name.as_ref() {
                ".debug_info" | ".debug_types" => None,
                ".debug_abbrev" => Some(&mut s.abbrev),
                ".debug_str" => Some(&mut s.str_),
                ".debug_str_offsets" => Some(&mut s.str_offsets),
                ".debug_line" => Some(&mut s.line),
                ".debug_line_str" => Some(&mut s.line_str),
                ".debug_addr" => Some(&mut s.addr),
                _ => continue,
            };
            if slot.as_ref().is_some_and(|d| !d.is_empty()) {
                // A second section of that name (a COMDAT group's): the first one serves all.
                continue;
            }
            if section.kind() == object::SectionKind::UninitializedData {
                continue;
            }
            let data = section_data(&obj, &section, raw_name, relocatable, big_endian, arena)?;
            match (name.as_ref(), slot) {
                (_, Some(slot)) => *slot = data,
                (".debug_info", None) => {
                    seen_info = true;
                    s.info.push(data);
                }
                (_, None) => s.types.push(data),
            }
        }
        if !seen_info {
            return Err(DwarfError::NoDebugInfo);
        }
        Ok(s)
    }

    fn slice(&self, data: &'a [u8]) -> Slice<'a> {
        EndianSlice::new(data, self.endian)
    }

    fn dwarf(&self) -> gimli::Dwarf<Slice<'a>> {
        gimli::Dwarf {
            debug_abbrev: self.slice(self.abbrev).into(),
            debug_info: self.slice(self.info.first().copied().unwrap_or(&[])).into(),
            debug_types: self
                .slice(self.types.first().copied().unwrap_or(&[]))
                .into(),
            debug_str: self.slice(self.str_).into(),
            debug_str_offsets: self.slice(self.str_offsets).into(),
            debug_line: self.slice(self.line).into(),
            debug_line_str: self.slice(self.line_str).into(),
            debug_addr: self.slice(self.addr).into(),
            file_type: if self.dwo {
                gimli::DwarfFileType::Dwo
            } else {
                gimli::DwarfFileType::Main
            },
            ..Default::default()
        }
    }

    fn buckets(&self) -> Vec<Bucket<'a>> {
        let info = self.info.iter().map(|&data| (false, data));
        let types = self.types.iter().map(|&data| (true, data));
        info.chain(types)
            .enumerate()
            .map(|(i, (is_types, data))| Bucket {
                number: i as u64,
                is_types,
                data,
            })
            .collect()
    }
}

/// The contents of `section`, decompressed, with relocations applied when the file is
/// relocatable. Borrowed from the file when neither was needed; in `arena` otherwise.
fn section_data<'a>(
    obj: &object::File<'a>,
    section: &object::Section<'a, '_>,
    name: &str,
    relocatable: bool,
    big_endian: bool,
    arena: &'a typed_arena::Arena<Vec<u8>>,
) -> Result<&'a [u8], DwarfError> {
    let err = |problem: String| DwarfError::Section {
        section: name.to_string(),
        problem,
    };
    let data = section
        .uncompressed_data()
        .map_err(|e| err(e.to_string()))?;
    if !relocatable || section.relocations().next().is_none() {
        return Ok(match data {
            Cow::Borrowed(d) => d,
            Cow::Owned(v) => arena.alloc(v).as_slice(),
        });
    }
    let mut buf = data.into_owned();
    for (offset, reloc) in section.relocations() {
        if reloc.kind() != object::RelocationKind::Absolute
            || reloc.encoding() != object::RelocationEncoding::Generic
        {
            // PC-relative and TLS relocations do not occur in what we read (names, offsets
            // into other debug sections); addresses we never use.
            continue;
        }
        let target = match reloc.target() {
            object::RelocationTarget::Symbol(index) => match obj.symbol_by_index(index) {
                Ok(sym) => sym.address(),
                Err(e) => return Err(err(format!("relocation at {offset:#x}: {e}"))),
            },
            object::RelocationTarget::Section(index) => match obj.section_by_index(index) {
                // References to debug sections are offsets into them.
                Ok(s) if s.kind() == object::SectionKind::Debug => 0,
                Ok(s) => s.address(),
                Err(e) => return Err(err(format!("relocation at {offset:#x}: {e}"))),
            },
            _ => continue,
        };
        let size = match reloc.size() {
            8 | 16 | 32 | 64 => reloc.size() as usize / 8,
            _ => continue,
        };
        let Some(bytes) = usize::try_from(offset)
            .ok()
            .and_then(|o| Some(o..o.checked_add(size)?))
            .and_then(|r| buf.get_mut(r))
        else {
            return Err(err(format!(
                "relocation at {offset:#x} lies outside the section ({} bytes)",
                buf.len()
            )));
        };
        let old = read_uint(bytes, big_endian);
        let addend = reloc.addend() as u64;
        let value = if reloc.has_implicit_addend() {
            old.wrapping_add(target).wrapping_add(addend)
        } else {
            target.wrapping_add(addend)
        };
        write_uint(bytes, value, big_endian);
    }
    Ok(arena.alloc(buf).as_slice())
}

fn read_uint(bytes: &[u8], big_endian: bool) -> u64 {
    let mut v = 0u64;
    if big_endian {
        for &b in bytes {
            v = v << 8 | b as u64;
        }
    } else {
        for &b in bytes.iter().rev() {
            v = v << 8 | b as u64;
        }
    }
    v
}

fn write_uint(bytes: &mut [u8], mut v: u64, big_endian: bool) {
    let n = bytes.len();
    for i in 0..n {
        let idx = if big_endian { n - 1 - i } else { i };
        bytes[idx] = v as u8;
        v >>= 8;
    }
}

// ---------------------------------------------------------------------------------------------
// DIE keys

/// A DIE's place in the file: bucket (section) in the high 24 bits, section offset in the low
/// 40 (a terabyte of `.debug_info`; 16 million COMDAT sections in one object).
type Key = u64;

fn key(bucket: u64, offset: u64) -> Key {
    (bucket & ((1 << 24) - 1)) << 40 | (offset & ((1 << 40) - 1))
}

/// A fast hasher for the maps of DIE keys and names: nothing here needs SipHash's defence
/// against chosen keys, and it showed in profiles.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(word));
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.write_u64(u64::from_le_bytes(last) ^ (bytes.len() as u64) << 59);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FastHash = BuildHasherDefault<KeyHasher>;
type KeyMap<V> = HashMap<Key, V, FastHash>;

// ---------------------------------------------------------------------------------------------
// Reading units

/// What the DIE whose children are being read is, as far as its children matter.
enum Frame {
    None,
    Composite {
        id: TypeId,
        /// Members are read only from a definition, never from a declaration.
        take_members: bool,
    },
    Enum {
        id: TypeId,
        /// Sign-extend `DW_FORM_dataN` values (the underlying type is signed).
        signed: bool,
    },
    Proto(TypeId),
    Array {
        id: TypeId,
        elem: TypeId,
        counts: Vec<u64>,
    },
}

/// The attributes of one DIE that matter for types, read in one pass.
#[derive(Default)]
struct Attrs<'a> {
    name: Option<AttributeValue<Slice<'a>>>,
    ty: Option<AttributeValue<Slice<'a>>>,
    byte_size: Option<AttributeValue<Slice<'a>>>,
    bit_size: Option<u64>,
    bit_offset: Option<i64>,
    data_bit_offset: Option<u64>,
    member_location: Option<AttributeValue<Slice<'a>>>,
    declaration: bool,
    external: bool,
    alignment: Option<u64>,
    encoding: Option<gimli::DwAte>,
    count: Option<AttributeValue<Slice<'a>>>,
    upper_bound: Option<AttributeValue<Slice<'a>>>,
    lower_bound: Option<AttributeValue<Slice<'a>>>,
    const_value: Option<AttributeValue<Slice<'a>>>,
    decl_file: Option<u64>,
    decl_line: Option<u64>,
    signature: Option<AttributeValue<Slice<'a>>>,
    specification: Option<AttributeValue<Slice<'a>>>,
}

fn read_attrs<'a>(attrs: &[gimli::Attribute<Slice<'a>>]) -> Attrs<'a> {
    let mut a = Attrs::default();
    for attr in attrs {
        match attr.name() {
            dw::DW_AT_name => a.name = Some(attr.value()),
            dw::DW_AT_type => a.ty = Some(attr.value()),
            dw::DW_AT_byte_size => a.byte_size = Some(attr.value()),
            dw::DW_AT_bit_size => a.bit_size = attr.udata_value(),
            dw::DW_AT_bit_offset => {
                // Negative when a bitfield straddles its storage unit (packed structs); clang
                // writes that as a huge unsigned value, hence two's complement throughout.
                a.bit_offset = match attr.raw_value() {
                    AttributeValue::Udata(v) => Some(v as i64),
                    v => v.sdata_value(),
                }
            }
            dw::DW_AT_data_bit_offset => a.data_bit_offset = attr.udata_value(),
            dw::DW_AT_data_member_location => a.member_location = Some(attr.value()),
            dw::DW_AT_declaration => a.declaration = flag(attr.value()),
            dw::DW_AT_external => a.external = flag(attr.value()),
            dw::DW_AT_alignment => a.alignment = attr.udata_value(),
            dw::DW_AT_encoding => {
                if let AttributeValue::Encoding(e) = attr.value() {
                    a.encoding = Some(e);
                }
            }
            dw::DW_AT_count => a.count = Some(attr.value()),
            dw::DW_AT_upper_bound => a.upper_bound = Some(attr.value()),
            dw::DW_AT_lower_bound => a.lower_bound = Some(attr.value()),
            dw::DW_AT_const_value => a.const_value = Some(attr.value()),
            dw::DW_AT_decl_file => {
                if let AttributeValue::FileIndex(f) = attr.value() {
                    a.decl_file = Some(f);
                }
            }
            dw::DW_AT_decl_line => a.decl_line = attr.udata_value(),
            dw::DW_AT_signature => a.signature = Some(attr.value()),
            dw::DW_AT_specification => a.specification = Some(attr.value()),
            _ => {}
        }
    }
    a
}

fn flag<R: gimli::Reader>(v: AttributeValue<R>) -> bool {
    matches!(v, AttributeValue::Flag(true))
}

/// An array bound. Older gcc wrote the upper bound of `int a[0]` as -1 in a 4- or 8-byte
/// constant, so an all-ones `DW_FORM_data4`/`data8` is -1; shorter data forms are unsigned
/// (an upper bound of 255 in a `DW_FORM_data1` is `a[256]`).
fn bound_value<R: gimli::Reader>(v: &AttributeValue<R>) -> Option<i128> {
    Some(match *v {
        AttributeValue::Data1(d) => d as i128,
        AttributeValue::Data2(d) => d as i128,
        AttributeValue::Data4(u32::MAX) | AttributeValue::Data8(u64::MAX) => -1,
        AttributeValue::Data4(d) => d as i128,
        AttributeValue::Data8(d) => d as i128,
        AttributeValue::Sdata(d) => d as i128,
        AttributeValue::Udata(d) => d as i128,
        _ => return None,
    })
}

struct TypeReader<'a, 'd> {
    dwarf: &'d gimli::Dwarf<Slice<'a>>,
    big_endian: bool,
    types: Types<'a>,
    pointer_size: Option<u32>,
    /// DIE key → type id, for every type DIE read or referenced so far.
    ids: KeyMap<TypeId>,
    /// Type signature → key of the type DIE in its type unit.
    signatures: KeyMap<Key>,
    /// Declarations that stand for a type-unit type (`DW_AT_signature`): (this, that).
    aliases: Vec<(TypeId, TypeId)>,
    /// Ids that a DIE has filled (the others are references to DIEs that are not types, or
    /// that were never found).
    filled: Vec<bool>,
    /// Members whose DWARF 2 bit offset needs their type's size, known only at the end:
    /// (struct, member index, byte location, DW_AT_bit_offset).
    bit_offset_fixups: Vec<(TypeId, usize, u64, i64)>,
    /// Names of the split DWARF objects (`DW_AT_dwo_name`) of skeleton units: their types
    /// are not in this file.
    split_objects: Vec<String>,
    /// Structs and unions larger than [`MAX_SIZE`] (or holding a member that is), left out
    /// one by one: how many, and the first names, for one warning.
    oversized: (usize, Vec<String>),
}

/// Where the unit being read lies, to turn its references into keys.
struct UnitCtx<'u, 'a> {
    unit: &'u Unit<'a>,
    bucket: u64,
    /// Section offset of the unit header.
    base: u64,
    name: &'a str,
    /// Lower bound of arrays without `DW_AT_lower_bound` (1 for Fortran and friends).
    default_lower_bound: i128,
    files: HashMap<u64, String, FastHash>,
}

impl<'a, 'd> TypeReader<'a, 'd> {
    fn new(dwarf: &'d gimli::Dwarf<Slice<'a>>, big_endian: bool) -> Self {
        TypeReader {
            dwarf,
            big_endian,
            types: Types::new(8),
            pointer_size: None,
            ids: KeyMap::default(),
            signatures: KeyMap::default(),
            aliases: Vec::new(),
            filled: vec![true],
            bit_offset_fixups: Vec::new(),
            split_objects: Vec::new(),
            oversized: (0, Vec::new()),
        }
    }

    /// First pass over unit headers only: where each type unit's type lies, and the target's
    /// pointer size.
    fn index_type_units(&mut self, sections: &Sections<'a>) -> Result<(), DwarfError> {
        for b in sections.buckets() {
            let section = section_name(b.is_types);
            let mut headers = unit_headers(sections.endian, b);
            loop {
                let header = match headers.next() {
                    Ok(Some(h)) => h,
                    Ok(None) => break,
                    Err(e) => {
                        return Err(DwarfError::CorruptSection {
                            section,
                            problem: e.to_string(),
                        });
                    }
                };
                if self.pointer_size.is_none() && matches!(header.address_size(), 2 | 4 | 8) {
                    self.pointer_size = Some(header.address_size() as u32);
                }
                if let gimli::UnitType::Type {
                    type_signature,
                    type_offset,
                }
                | gimli::UnitType::SplitType {
                    type_signature,
                    type_offset,
                } = header.type_()
                {
                    let base = unit_offset(&header);
                    let k = key(b.number, base.wrapping_add(type_offset.0 as u64));
                    self.signatures.entry(type_signature.0).or_insert(k);
                }
            }
        }
        Ok(())
    }

    fn read_bucket(&mut self, b: Bucket<'a>) -> Result<(), DwarfError> {
        let section = section_name(b.is_types);
        let mut headers = unit_headers(self.endian(), b);
        loop {
            let header = match headers.next() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(e) => {
                    return Err(DwarfError::CorruptSection {
                        section,
                        problem: e.to_string(),
                    });
                }
            };
            let base = unit_offset(&header);
            let corrupt = |e: Problem| DwarfError::Corrupt {
                section,
                offset: base,
                problem: e.to_string(),
            };
            let unit = self
                .dwarf
                .unit(header)
                .map_err(|e| corrupt(Problem::Dwarf(e)))?;
            let name = match unit.name {
                Some(n) => str_of(n.slice()),
                None => "",
            };
            if self.dwarf.file_type == gimli::DwarfFileType::Main
                && let Ok(Some(dwo)) = unit.dwo_name()
            {
                let dwo = self
                    .dwarf
                    .attr_string(&unit, dwo)
                    .map(|s| str_of(s.slice()).to_string())
                    .unwrap_or_else(|_| "?".to_string());
                self.split_objects.push(dwo);
            }
            let mut ctx = UnitCtx {
                unit: &unit,
                bucket: b.number,
                base,
                name,
                default_lower_bound: 0,
                files: HashMap::default(),
            };
            self.read_unit(&mut ctx).map_err(corrupt)?;
        }
        Ok(())
    }

    fn endian(&self) -> RunTimeEndian {
        if self.big_endian {
            RunTimeEndian::Big
        } else {
            RunTimeEndian::Little
        }
    }

    fn read_unit(&mut self, ctx: &mut UnitCtx<'_, 'a>) -> Result<(), Problem> {
        let unit = ctx.unit;
        // Raw entries: the attributes of DIEs that are not types (functions, variables, call
        // sites: most of them) are skipped, not decoded.
        let mut raw = unit.entries_raw(None)?;
        let mut attrs: Vec<gimli::Attribute<Slice<'a>>> = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            let Some(abbrev) = raw.read_abbreviation()? else {
                continue;
            };
            let depth = depth.max(0) as usize;
            while stack.len() > depth {
                let frame = stack.pop().expect("non-empty");
                self.close(frame);
            }
            let parent = if depth == 0 { None } else { stack.last_mut() };
            let tag = abbrev.tag();
            let wanted = depth == 0
                || is_type_tag(tag)
                || (parent.as_ref().is_some_and(|p| !matches!(p, Frame::None))
                    && is_child_tag(tag));
            if !wanted {
                raw.skip_attributes(abbrev.attributes())?;
                stack.push(Frame::None);
                continue;
            }
            attrs.clear();
            for spec in abbrev.attributes() {
                attrs.push(raw.read_attribute(*spec)?);
            }
            if depth == 0 {
                if let Some(lang) = attrs.iter().find(|a| a.name() == dw::DW_AT_language)
                    && let AttributeValue::Language(lang) = lang.value()
                {
                    ctx.default_lower_bound = default_lower_bound(lang);
                }
                stack.push(Frame::None);
                continue;
            }
            let here = key(ctx.bucket, ctx.base.wrapping_add(offset.0 as u64));
            let frame = self.read_entry(ctx, &attrs, tag, here, parent)?;
            stack.push(frame);
        }
        while let Some(frame) = stack.pop() {
            self.close(frame);
        }
        Ok(())
    }

    /// Reads one DIE; returns what its children will need to know.
    fn read_entry(
        &mut self,
        ctx: &mut UnitCtx<'_, 'a>,
        entry: &[gimli::Attribute<Slice<'a>>],
        tag: gimli::DwTag,
        here: Key,
        parent: Option<&mut Frame>,
    ) -> Result<Frame, Problem> {
        // Children of a struct, enum, function type or array.
        match (tag, parent) {
            (
                dw::DW_TAG_member | dw::DW_TAG_inheritance,
                Some(Frame::Composite { id, take_members }),
            ) => {
                if *take_members {
                    let id = *id;
                    let a = read_attrs(entry);
                    self.read_member(ctx, tag, id, &a)?;
                }
                return Ok(Frame::None);
            }
            (dw::DW_TAG_enumerator, Some(Frame::Enum { id, signed })) => {
                let a = read_attrs(entry);
                let name = self.name(ctx, &a)?;
                let value = match a.const_value {
                    Some(AttributeValue::Sdata(v)) => v as u64,
                    Some(ref v) if *signed => v.sdata_value().unwrap_or(0) as u64,
                    Some(ref v) => v.udata_value().unwrap_or(0),
                    None => 0,
                };
                let negative = matches!(a.const_value, Some(AttributeValue::Sdata(v)) if v < 0);
                if let Kind::Enum { values, signed, .. } = &mut self.slot(*id).kind {
                    values.push(Enumerator { name, value });
                    *signed |= negative;
                }
                return Ok(Frame::None);
            }
            (dw::DW_TAG_formal_parameter, Some(Frame::Proto(id))) => {
                let a = read_attrs(entry);
                let ty = self.type_ref(ctx, a.ty.as_ref());
                if let Kind::FuncProto { params, .. } = &mut self.slot(*id).kind {
                    params.push(ty);
                }
                return Ok(Frame::None);
            }
            (dw::DW_TAG_unspecified_parameters, Some(Frame::Proto(id))) => {
                if let Kind::FuncProto { variadic, .. } = &mut self.slot(*id).kind {
                    *variadic = true;
                }
                return Ok(Frame::None);
            }
            (
                dw::DW_TAG_subrange_type
                | dw::DW_TAG_enumeration_type
                | dw::DW_TAG_generic_subrange,
                Some(Frame::Array { counts, .. }),
            ) => {
                let a = read_attrs(entry);
                counts.push(if tag == dw::DW_TAG_subrange_type {
                    subrange_count(&a, ctx.default_lower_bound)
                } else {
                    // Indexed by an enum (Pascal, Ada), or of any rank (Fortran): not counted.
                    0
                });
                return Ok(Frame::None);
            }
            _ => {}
        }
        if !is_type_tag(tag) {
            return Ok(Frame::None);
        }
        let a = read_attrs(entry);
        let id = self.id_of(here);
        if let Some(sig) = &a.signature {
            // A stand-in for a type defined in a type unit.
            if let Some(target) = self.ref_key(ctx, sig).map(|k| self.id_of(k)) {
                self.aliases.push((id, target));
            }
            return Ok(Frame::None);
        }
        let name = self.name(ctx, &a)?;
        let target = self.type_ref(ctx, a.ty.as_ref());
        let (kind, frame) = match tag {
            dw::DW_TAG_base_type => (base_kind(&a, name), Frame::None),
            dw::DW_TAG_pointer_type
            | dw::DW_TAG_reference_type
            | dw::DW_TAG_rvalue_reference_type => (Kind::Pointer { target }, Frame::None),
            dw::DW_TAG_ptr_to_member_type => (self.member_pointer(ctx, &a, target), Frame::None),
            dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_atomic_type => {
                let qualifier = match tag {
                    dw::DW_TAG_const_type => Qualifier::Const,
                    dw::DW_TAG_volatile_type => Qualifier::Volatile,
                    dw::DW_TAG_restrict_type => Qualifier::Restrict,
                    _ => Qualifier::Atomic,
                };
                (Kind::Qualified { qualifier, target }, Frame::None)
            }
            dw::DW_TAG_typedef => (Kind::Typedef { target }, Frame::None),
            dw::DW_TAG_enumeration_type => {
                let signed = self.underlying_signed(ctx, a.ty.as_ref());
                (
                    Kind::Enum {
                        size: byte_size(&a).unwrap_or(0).min(u32::MAX as u64) as u32,
                        signed,
                        values: Vec::new(),
                    },
                    Frame::Enum { id, signed },
                )
            }
            dw::DW_TAG_subroutine_type => (
                Kind::FuncProto {
                    ret: target,
                    params: Vec::new(),
                    variadic: false,
                },
                Frame::Proto(id),
            ),
            dw::DW_TAG_unspecified_type => {
                if name == "decltype(nullptr)" {
                    (Kind::Pointer { target: VOID }, Frame::None)
                } else {
                    (Kind::Other, Frame::None)
                }
            }
            dw::DW_TAG_array_type => (
                // Filled in when its subranges are read (see `close`).
                Kind::Array {
                    elem: target,
                    count: 0,
                },
                Frame::Array {
                    id,
                    elem: target,
                    counts: Vec::new(),
                },
            ),
            dw::DW_TAG_structure_type
            | dw::DW_TAG_class_type
            | dw::DW_TAG_interface_type
            | dw::DW_TAG_union_type => {
                let origin = if a.declaration {
                    None
                } else {
                    Some(Box::new(Origin {
                        unit: ctx.name.to_string(),
                        file: a
                            .decl_file
                            .map(|f| self.file_name(ctx, f))
                            .unwrap_or_default(),
                        line: a.decl_line.unwrap_or(0),
                    }))
                };
                let mut size = byte_size(&a).unwrap_or(0);
                // Larger than any struct lineup lays out (`char big[1ull << 32]`): this one
                // is left out, as a declaration without members, and said once at the end;
                // the unit's other types still read.
                let oversized = size > MAX_SIZE;
                if oversized {
                    self.note_oversized(name, size);
                    size = 0;
                }
                let comp = Composite {
                    size,
                    members: Vec::new(),
                    declared_align: alignment(&a),
                    is_declaration: a.declaration || oversized,
                    origin,
                };
                let kind = if tag == dw::DW_TAG_union_type {
                    Kind::Union(comp)
                } else {
                    Kind::Struct(comp)
                };
                (
                    kind,
                    Frame::Composite {
                        id,
                        take_members: !a.declaration && !oversized,
                    },
                )
            }
            // A subrange used as a type of its own (Ada, Fortran): its base type.
            dw::DW_TAG_subrange_type if a.ty.is_some() => (Kind::Typedef { target }, Frame::None),
            _ => (Kind::Other, Frame::None),
        };
        self.fill(id, Type { name, kind });
        Ok(frame)
    }

    /// Finishes a DIE once all its children are read.
    fn close(&mut self, frame: Frame) {
        if let Frame::Array { id, elem, counts } = frame {
            // `int a[2][3]`: the DIE is the outer array; inner dimensions get ids of their own.
            let mut inner = elem;
            for &count in counts.iter().skip(1).rev() {
                inner = self.types.push(Type {
                    name: "",
                    kind: Kind::Array { elem: inner, count },
                });
                self.filled.push(true);
            }
            let count = counts.first().copied().unwrap_or(0);
            self.slot(id).kind = Kind::Array { elem: inner, count };
        }
    }

    fn read_member(
        &mut self,
        ctx: &mut UnitCtx<'_, 'a>,
        tag: gimli::DwTag,
        parent: TypeId,
        a: &Attrs<'a>,
    ) -> Result<(), Problem> {
        if tag == dw::DW_TAG_member && (a.external || a.declaration) {
            // A static member: no storage in the struct.
            return Ok(());
        }
        let location = match &a.member_location {
            // Union members, and the first member as some compilers write it.
            None => Some(0),
            Some(AttributeValue::Udata(v)) => Some(*v),
            Some(AttributeValue::Sdata(v)) => u64::try_from(*v).ok(),
            Some(AttributeValue::Exprloc(e)) => constant_location(*e, ctx.unit.encoding()),
            Some(AttributeValue::Block(b)) => {
                constant_location(gimli::Expression(*b), ctx.unit.encoding())
            }
            Some(_) => None,
        };
        let Some(location) = location else {
            // A virtual base class, found at run time through the vtable.
            return Ok(());
        };
        let ty = self.type_ref(ctx, a.ty.as_ref());
        let name = if tag == dw::DW_TAG_inheritance {
            ""
        } else {
            self.name(ctx, a)?
        };
        let bitfield_size = if tag == dw::DW_TAG_member {
            a.bit_size
                .map(|b| b.min(u32::MAX as u64) as u32)
                .unwrap_or(0)
        } else {
            0
        };
        let mut bit_offset = location.wrapping_mul(8);
        let mut fixup = None;
        if let Some(dbo) = a.data_bit_offset {
            bit_offset = dbo;
        } else if let (Some(bo), true) = (a.bit_offset, bitfield_size > 0) {
            match byte_size(a) {
                Some(unit) => bit_offset = self.old_bit_offset(location, unit, bo, bitfield_size),
                None => fixup = Some((location, bo)),
            }
        }
        let Some(index) = self.composite_mut(parent).map(|c| c.members.len()) else {
            return Ok(());
        };
        if let Some((location, bo)) = fixup {
            self.bit_offset_fixups.push((parent, index, location, bo));
        }
        if let Some(c) = self.composite_mut(parent) {
            if c.size > 0 && bit_offset / 8 > c.size {
                return Err(Problem::Layout(format!(
                    "member '{}' at bit {bit_offset} lies outside its {}-byte struct",
                    name.escape_debug(),
                    c.size
                )));
            }
            c.members.push(Member {
                name,
                ty,
                bit_offset,
                bitfield_size,
                declared_align: alignment(a),
            });
        }
        Ok(())
    }

    /// The DWARF 2/3 bitfield position: `bit_offset` counts from the most significant bit of a
    /// storage unit of `unit_bytes` at byte `location`.
    fn old_bit_offset(&self, location: u64, unit_bytes: u64, bit_offset: i64, bits: u32) -> u64 {
        let from_start = if self.big_endian {
            bit_offset as i128
        } else {
            unit_bytes as i128 * 8 - bit_offset as i128 - bits as i128
        };
        let abs = location as i128 * 8 + from_start;
        abs.clamp(0, u64::MAX as i128) as u64
    }

    fn composite_mut(&mut self, id: TypeId) -> Option<&mut Composite<'a>> {
        match &mut self.types.types.get_mut(id as usize)?.kind {
            Kind::Struct(c) | Kind::Union(c) => Some(c),
            _ => None,
        }
    }

    fn member_pointer(&mut self, ctx: &UnitCtx<'_, 'a>, a: &Attrs<'a>, target: TypeId) -> Kind<'a> {
        let ptr = self.types.pointer_size as u64;
        let size = byte_size(a).unwrap_or_else(|| {
            // The Itanium C++ ABI: a pointer to a member function is {function, adjustment}.
            if self.points_to_function(ctx, a.ty.as_ref()) {
                2 * ptr
            } else {
                ptr
            }
        });
        if size > ptr && ptr > 0 && size.is_multiple_of(ptr) {
            let word = self.types.push(Type {
                name: "",
                kind: Kind::Pointer { target },
            });
            self.filled.push(true);
            Kind::Array {
                elem: word,
                count: size / ptr,
            }
        } else {
            Kind::Pointer { target }
        }
    }

    /// Whether the type a `DW_AT_type` names is a function type (looked up in the DIE itself:
    /// it may not have been read yet).
    fn points_to_function(
        &self,
        ctx: &UnitCtx<'_, 'a>,
        ty: Option<&AttributeValue<Slice<'a>>>,
    ) -> bool {
        match ty {
            Some(AttributeValue::UnitRef(off)) => ctx
                .unit
                .entry(*off)
                .map(|e| e.tag() == dw::DW_TAG_subroutine_type)
                .unwrap_or(false),
            _ => false,
        }
    }

    /// Whether an enum's underlying type (`DW_AT_type`) is signed.
    fn underlying_signed(
        &self,
        ctx: &UnitCtx<'_, 'a>,
        ty: Option<&AttributeValue<Slice<'a>>>,
    ) -> bool {
        let Some(AttributeValue::UnitRef(off)) = ty else {
            return false;
        };
        let mut off = *off;
        // Through typedefs and qualifiers (`enum e : int32_t`).
        for _ in 0..8 {
            let Ok(e) = ctx.unit.entry(off) else {
                return false;
            };
            if e.tag() == dw::DW_TAG_base_type {
                return matches!(
                    e.attr_value(dw::DW_AT_encoding),
                    Some(AttributeValue::Encoding(
                        dw::DW_ATE_signed | dw::DW_ATE_signed_char | dw::DW_ATE_signed_fixed
                    ))
                );
            }
            match e.attr_value(dw::DW_AT_type) {
                Some(AttributeValue::UnitRef(next)) => off = next,
                _ => return false,
            }
        }
        false
    }

    fn name(&self, ctx: &UnitCtx<'_, 'a>, a: &Attrs<'a>) -> gimli::Result<&'a str> {
        if let Some(v) = &a.name {
            return self.string(ctx, *v);
        }
        // An out-of-line definition (`struct A::B { ... }`) is named by its declaration.
        if let Some(AttributeValue::UnitRef(off)) = a.specification
            && let Ok(decl) = ctx.unit.entry(off)
            && let Some(v) = decl.attr_value(dw::DW_AT_name)
        {
            return self.string(ctx, v);
        }
        Ok("")
    }

    fn string(
        &self,
        ctx: &UnitCtx<'_, 'a>,
        v: AttributeValue<Slice<'a>>,
    ) -> gimli::Result<&'a str> {
        match v {
            // Strings of a supplementary file (dwz) that we do not have.
            AttributeValue::DebugStrRefSup(_) => Ok(""),
            v => Ok(str_of(self.dwarf.attr_string(ctx.unit, v)?.slice())),
        }
    }

    /// The path of file `index` of the unit's line table, as the compiler recorded it: the
    /// directory is included unless it is the compilation directory.
    fn file_name(&self, ctx: &mut UnitCtx<'_, 'a>, index: u64) -> String {
        if let Some(f) = ctx.files.get(&index) {
            return f.clone();
        }
        let mut path = String::new();
        if let Some(program) = &ctx.unit.line_program {
            let header = program.header();
            if let Some(file) = header.file(index) {
                let name = self
                    .dwarf
                    .attr_string(ctx.unit, file.path_name())
                    .map(|s| str_of(s.slice()))
                    .unwrap_or("");
                if !name.starts_with('/')
                    && file.directory_index() != 0
                    && let Some(dir) = file.directory(header)
                    && let Ok(dir) = self.dwarf.attr_string(ctx.unit, dir)
                {
                    let dir = str_of(dir.slice());
                    if !dir.is_empty() && dir != "." {
                        path.push_str(dir);
                        if !dir.ends_with('/') {
                            path.push('/');
                        }
                    }
                }
                path.push_str(name.strip_prefix("./").unwrap_or(name));
            }
        }
        ctx.files.insert(index, path.clone());
        path
    }

    /// The key of the DIE a reference attribute points to.
    fn ref_key(&self, ctx: &UnitCtx<'_, 'a>, v: &AttributeValue<Slice<'a>>) -> Option<Key> {
        match *v {
            AttributeValue::UnitRef(off) => {
                Some(key(ctx.bucket, ctx.base.wrapping_add(off.0 as u64)))
            }
            // Into the main .debug_info (DW_FORM_ref_addr: LTO, dwz partial units).
            AttributeValue::DebugInfoRef(off) => Some(key(0, off.0 as u64)),
            AttributeValue::DebugTypesRef(sig) => self.signatures.get(&sig.0).copied(),
            _ => None,
        }
    }

    /// The type a `DW_AT_type` names; void when there is none or it cannot be found.
    fn type_ref(&mut self, ctx: &UnitCtx<'_, 'a>, v: Option<&AttributeValue<Slice<'a>>>) -> TypeId {
        match v.and_then(|v| self.ref_key(ctx, v)) {
            Some(k) => self.id_of(k),
            None => VOID,
        }
    }

    /// The id of the DIE at `k`, reserved now if it has not been seen.
    fn id_of(&mut self, k: Key) -> TypeId {
        if let Some(&id) = self.ids.get(&k) {
            return id;
        }
        let id = self.types.push(Type {
            name: "",
            kind: Kind::Other,
        });
        self.filled.push(false);
        self.ids.insert(k, id);
        id
    }

    fn fill(&mut self, id: TypeId, ty: Type<'a>) {
        if let Some(done) = self.filled.get_mut(id as usize) {
            if *done {
                // The same DIE twice can only come from a corrupt input; keep the first.
                return;
            }
            *done = true;
            self.types.types[id as usize] = ty;
        }
    }

    fn slot(&mut self, id: TypeId) -> &mut Type<'a> {
        let i = (id as usize).min(self.types.types.len() - 1);
        &mut self.types.types[i]
    }

    // -----------------------------------------------------------------------------------------
    // After all units

    fn finish(mut self) -> Result<Types<'a>, DwarfError> {
        for (id, index, location, bo) in std::mem::take(&mut self.bit_offset_fixups) {
            let Some(m) = self.types.composite(id).and_then(|c| c.members.get(index)) else {
                continue;
            };
            let (ty, bits) = (m.ty, m.bitfield_size);
            let unit = self.types.size_of(ty);
            let off = self.old_bit_offset(location, unit, bo, bits);
            if let Some(c) = self.composite_mut(id) {
                let size = c.size;
                if let Some(m) = c.members.get_mut(index) {
                    m.bit_offset = if size > 0 { off.min(size * 8) } else { off };
                }
            }
        }
        self.validate();
        let mut remap: Vec<TypeId> = (0..self.types.len() as TypeId).collect();
        for &(from, to) in &self.aliases {
            if from != to {
                remap[from as usize] = to;
            }
        }
        Dedup::new(&self.types).run(&mut remap, &mut self.types);
        apply_remap(&mut self.types, &remap);
        if !self.split_objects.is_empty() {
            let n = self.split_objects.len();
            let shown: Vec<&str> = self
                .split_objects
                .iter()
                .take(3)
                .map(String::as_str)
                .collect();
            self.types.warnings.push(format!(
                "{n} compile unit{} {} types in split DWARF (-gsplit-dwarf): {}{}; \
                 they are not in this file: pass the .dwo (or .dwp) to --dwarf",
                if n == 1 { "" } else { "s" },
                if n == 1 { "keeps its" } else { "keep their" },
                shown.join(", "),
                if n > 3 { ", ..." } else { "" }
            ));
        }
        Ok(self.types)
    }

    /// What later stages rely on: members start inside their struct (checked as they are
    /// read) and are no bigger than any struct can be, so offset arithmetic cannot overflow.
    /// A struct with a member larger than that is left out like an oversized struct (the
    /// others still read). A member reaching past the end is tolerated: rustc writes
    /// zero-sized types that way.
    fn validate(&mut self) {
        let mut bad = Vec::new();
        for (id, t) in self.types.types.iter().enumerate() {
            let (Kind::Struct(c) | Kind::Union(c)) = &t.kind else {
                continue;
            };
            if let Some(size) = c
                .members
                .iter()
                .map(|m| self.types.size_of(m.ty))
                .find(|&size| size > MAX_SIZE)
            {
                bad.push((id, t.name, size));
            }
        }
        for (id, name, size) in bad {
            self.note_oversized(name, size);
            if let Some(c) = self.composite_mut(id as TypeId) {
                c.members.clear();
                c.size = 0;
                c.is_declaration = true;
            }
        }
        let (n, names) = &self.oversized;
        if *n > 0 {
            self.types.warnings.push(format!(
                "{n} struct{} or union{} larger than {} left out: {}{}",
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "" } else { "s" },
                crate::input::human_bytes(MAX_SIZE + 1),
                names.join(", "),
                if *n > names.len() { ", ..." } else { "" }
            ));
        }
    }

    /// Counts a struct left out for its size (`size` bytes, or a member that large).
    fn note_oversized(&mut self, name: &str, size: u64) {
        let (n, names) = &mut self.oversized;
        *n += 1;
        if names.len() < 3 {
            let name = if name.is_empty() { "(anonymous)" } else { name };
            names.push(format!("'{}' ({size} bytes)", name.escape_debug()));
        }
    }
}

fn section_name(is_types: bool) -> &'static str {
    if is_types {
        ".debug_types"
    } else {
        ".debug_info"
    }
}

/// A header iterator over either kind of section.
trait UnitHeaders<'a> {
    fn next(&mut self) -> gimli::Result<Option<gimli::UnitHeader<Slice<'a>>>>;
}

impl<'a> UnitHeaders<'a> for gimli::DebugInfoUnitHeadersIter<Slice<'a>> {
    fn next(&mut self) -> gimli::Result<Option<gimli::UnitHeader<Slice<'a>>>> {
        gimli::DebugInfoUnitHeadersIter::next(self)
    }
}

impl<'a> UnitHeaders<'a> for gimli::DebugTypesUnitHeadersIter<Slice<'a>> {
    fn next(&mut self) -> gimli::Result<Option<gimli::UnitHeader<Slice<'a>>>> {
        gimli::DebugTypesUnitHeadersIter::next(self)
    }
}

fn unit_headers<'a>(endian: RunTimeEndian, b: Bucket<'a>) -> Box<dyn UnitHeaders<'a> + 'a> {
    let slice = EndianSlice::new(b.data, endian);
    if b.is_types {
        Box::new(gimli::DebugTypes::from(slice).units())
    } else {
        Box::new(gimli::DebugInfo::from(slice).units())
    }
}

fn unit_offset(header: &gimli::UnitHeader<Slice<'_>>) -> u64 {
    header.offset().0 as u64
}

/// Section bytes as text. DWARF names are UTF-8 in practice; a name that is not keeps its
/// valid parts (invalid bytes become U+FFFD) rather than failing the file or going nameless.
fn str_of(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_else(|_| crate::types::lossy_name(bytes))
}

/// DIEs that describe part of their parent type.
fn is_child_tag(tag: gimli::DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_member
            | dw::DW_TAG_inheritance
            | dw::DW_TAG_enumerator
            | dw::DW_TAG_formal_parameter
            | dw::DW_TAG_unspecified_parameters
            | dw::DW_TAG_subrange_type
            | dw::DW_TAG_generic_subrange
    )
}

fn is_type_tag(tag: gimli::DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_base_type
            | dw::DW_TAG_pointer_type
            | dw::DW_TAG_reference_type
            | dw::DW_TAG_rvalue_reference_type
            | dw::DW_TAG_ptr_to_member_type
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_atomic_type
            | dw::DW_TAG_immutable_type
            | dw::DW_TAG_packed_type
            | dw::DW_TAG_shared_type
            | dw::DW_TAG_typedef
            | dw::DW_TAG_enumeration_type
            | dw::DW_TAG_subroutine_type
            | dw::DW_TAG_unspecified_type
            | dw::DW_TAG_array_type
            | dw::DW_TAG_structure_type
            | dw::DW_TAG_class_type
            | dw::DW_TAG_interface_type
            | dw::DW_TAG_union_type
            | dw::DW_TAG_subrange_type
            | dw::DW_TAG_string_type
            | dw::DW_TAG_set_type
            | dw::DW_TAG_file_type
            | dw::DW_TAG_coarray_type
            | dw::DW_TAG_dynamic_type
    )
}

fn default_lower_bound(lang: gimli::DwLang) -> i128 {
    match lang {
        dw::DW_LANG_Ada83
        | dw::DW_LANG_Ada95
        | dw::DW_LANG_Ada2005
        | dw::DW_LANG_Ada2012
        | dw::DW_LANG_Cobol74
        | dw::DW_LANG_Cobol85
        | dw::DW_LANG_Fortran77
        | dw::DW_LANG_Fortran90
        | dw::DW_LANG_Fortran95
        | dw::DW_LANG_Fortran03
        | dw::DW_LANG_Fortran08
        | dw::DW_LANG_Fortran18
        | dw::DW_LANG_Modula2
        | dw::DW_LANG_Modula3
        | dw::DW_LANG_Pascal83
        | dw::DW_LANG_PLI
        | dw::DW_LANG_Julia => 1,
        _ => 0,
    }
}

/// `DW_AT_alignment`, when it is one: a power of two that fits the model.
fn alignment(a: &Attrs<'_>) -> Option<u32> {
    a.alignment
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| v.is_power_of_two())
}

fn byte_size(a: &Attrs<'_>) -> Option<u64> {
    match &a.byte_size {
        Some(AttributeValue::Udata(v)) => Some(*v),
        Some(_) => None,
        None => a.bit_size.map(|b| b.div_ceil(8)),
    }
}

fn base_kind<'a>(a: &Attrs<'a>, name: &str) -> Kind<'a> {
    let size = byte_size(a).unwrap_or(0).min(u32::MAX as u64) as u32;
    let enc = a.encoding.unwrap_or(dw::DW_ATE_signed);
    match enc {
        dw::DW_ATE_float
        | dw::DW_ATE_complex_float
        | dw::DW_ATE_imaginary_float
        | dw::DW_ATE_decimal_float => Kind::Float { size },
        _ => Kind::Int {
            size,
            signed: matches!(
                enc,
                dw::DW_ATE_signed | dw::DW_ATE_signed_char | dw::DW_ATE_signed_fixed
            ),
            is_char: matches!(enc, dw::DW_ATE_signed_char | dw::DW_ATE_unsigned_char)
                || (size == 1 && matches!(enc, dw::DW_ATE_UTF | dw::DW_ATE_ASCII | dw::DW_ATE_UCS))
                || (size == 1 && name.contains("char")),
            is_bool: enc == dw::DW_ATE_boolean,
        },
    }
}

/// Element count of a `DW_TAG_subrange_type`: `DW_AT_count`, or `upper - lower + 1`; 0 when
/// unknown (flexible arrays, variable-length arrays) or negative (`int a[0]` written as an
/// upper bound of -1).
fn subrange_count(a: &Attrs<'_>, default_lower: i128) -> u64 {
    if let Some(c) = a.count.as_ref().and_then(bound_value) {
        return c.clamp(0, u64::MAX as i128) as u64;
    }
    let Some(upper) = a.upper_bound.as_ref().and_then(bound_value) else {
        return 0;
    };
    let lower = a
        .lower_bound
        .as_ref()
        .and_then(bound_value)
        .unwrap_or(default_lower);
    (upper - lower + 1).clamp(0, u64::MAX as i128) as u64
}

/// A member location written as an expression: `DW_OP_plus_uconst N` (DWARF 2 style) or a
/// constant. Anything else (virtual bases) has no fixed offset.
fn constant_location(e: gimli::Expression<Slice<'_>>, encoding: gimli::Encoding) -> Option<u64> {
    let mut ops = e.operations(encoding);
    let first = ops.next().ok()??;
    if !matches!(ops.next(), Ok(None)) {
        return None;
    }
    match first {
        gimli::Operation::PlusConstant { value } | gimli::Operation::UnsignedConstant { value } => {
            Some(value)
        }
        gimli::Operation::SignedConstant { value } => u64::try_from(value).ok(),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Deduplication

/// A piece of a layout signature.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Tok<'a> {
    S(&'a str),
    N(u64),
}

struct Dedup {
    /// Per type: a duplicate (or unreachable part of one) to hide from `composites()`.
    hidden: Vec<bool>,
}

impl Dedup {
    fn new(types: &Types<'_>) -> Self {
        Dedup {
            hidden: vec![false; types.len()],
        }
    }

    fn run(mut self, remap: &mut [TypeId], types: &mut Types<'_>) {
        // 1. Named structs and unions with the same name and layout.
        let mut by_name: HashMap<(bool, &str), Vec<TypeId>, FastHash> = HashMap::default();
        let mut declarations = Vec::new();
        for (i, t) in types.types.iter().enumerate() {
            let (is_union, c) = match &t.kind {
                Kind::Struct(c) => (false, c),
                Kind::Union(c) => (true, c),
                _ => continue,
            };
            if t.name.is_empty() {
                continue;
            }
            if c.is_declaration {
                declarations.push((is_union, t.name, i as TypeId));
            } else {
                by_name
                    .entry((is_union, t.name))
                    .or_default()
                    .push(i as TypeId);
            }
        }
        // Distinct definitions per name, after merging.
        let mut distinct: HashMap<(bool, &str), Vec<TypeId>, FastHash> = HashMap::default();
        for (k, ids) in &by_name {
            let kept = if ids.len() == 1 {
                ids.clone()
            } else {
                self.merge(types, ids, remap, |_, id| id)
            };
            distinct.insert(*k, kept);
        }
        // 2. Anonymous structs and unions behind typedefs of the same name.
        let mut typedefs: HashMap<&str, Vec<TypeId>, FastHash> = HashMap::default();
        for (i, t) in types.types.iter().enumerate() {
            if let Kind::Typedef { target } = t.kind {
                let c = types.strip_qualifiers(target);
                let ct = types.get(c);
                let is_def = match &ct.kind {
                    Kind::Struct(comp) | Kind::Union(comp) => !comp.is_declaration,
                    _ => false,
                };
                if !t.name.is_empty() && ct.name.is_empty() && is_def && !self.hidden[c as usize] {
                    typedefs.entry(t.name).or_default().push(i as TypeId);
                }
            }
        }
        for ids in typedefs.values() {
            if ids.len() > 1 {
                self.merge(types, ids, remap, |types, td| match types.get(td).kind {
                    Kind::Typedef { target } => types.strip_qualifiers(target),
                    _ => td,
                });
            }
        }
        // 3. Declarations whose name has exactly one definition.
        for (is_union, name, id) in declarations {
            if let Some(defs) = distinct.get(&(is_union, name)).filter(|d| d.len() == 1) {
                remap[id as usize] = defs[0];
            }
        }
        for (i, hide) in self.hidden.iter().enumerate() {
            if *hide && let Kind::Struct(c) | Kind::Union(c) = &mut types.types[i].kind {
                c.is_declaration = true;
            }
        }
    }

    /// Merges the types in `ids` (all of one name) whose layouts agree: each later one is
    /// remapped to the first of its shape and its composite (`composite_of`) hidden. Returns
    /// the ids kept.
    fn merge(
        &mut self,
        types: &Types<'_>,
        ids: &[TypeId],
        remap: &mut [TypeId],
        composite_of: impl Fn(&Types<'_>, TypeId) -> TypeId,
    ) -> Vec<TypeId> {
        // The first of each signature, found by hashing: 10^5 different definitions of one
        // name must not be compared pairwise.
        let mut first_of: HashMap<Vec<Tok<'_>>, TypeId> = HashMap::new();
        let mut kept = Vec::new();
        for &id in ids {
            let comp = composite_of(types, id);
            let mut sig = Vec::new();
            composite_signature(types, comp, &mut sig, &mut Guard::new());
            match first_of.get(&sig) {
                Some(&first) => {
                    remap[id as usize] = first;
                    self.hide(types, comp, &mut Guard::new());
                }
                None => {
                    first_of.insert(sig, id);
                    kept.push(id);
                }
            }
        }
        kept
    }

    /// Hides composite `id` and the anonymous structs and unions only it uses.
    fn hide(&mut self, types: &Types<'_>, id: TypeId, g: &mut Guard) {
        if self.hidden.get(id as usize).copied().unwrap_or(true) {
            return;
        }
        self.hidden[id as usize] = true;
        if let Some(c) = types.composite(id) {
            for m in &c.members {
                let inner = types.strip_arrays(m.ty);
                if types.get(inner).name.is_empty() && types.composite(inner).is_some() {
                    if g.enter() {
                        self.hide(types, inner, g);
                        g.leave();
                    }
                }
            }
        }
    }
}

fn composite_signature<'a>(types: &Types<'a>, id: TypeId, out: &mut Vec<Tok<'a>>, g: &mut Guard) {
    let t = types.get(id);
    let (tag, c) = match &t.kind {
        Kind::Struct(c) => (1, c),
        Kind::Union(c) => (2, c),
        _ => {
            type_signature(types, id, out, g);
            return;
        }
    };
    out.extend([
        Tok::N(tag),
        Tok::N(c.size),
        Tok::N(c.declared_align.map_or(u64::MAX, u64::from)),
        Tok::N(c.members.len() as u64),
    ]);
    for m in &c.members {
        if out.len() > MAX_SIGNATURE {
            return;
        }
        out.extend([
            Tok::S(m.name),
            Tok::N(m.bit_offset),
            Tok::N(m.bitfield_size as u64),
            Tok::N(m.declared_align.map_or(u64::MAX, u64::from)),
            Tok::N(types.size_of(m.ty)),
        ]);
        type_signature(types, m.ty, out, g);
    }
}

/// How a member's type reads: named types by their name, anonymous ones by their shape.
fn type_signature<'a>(types: &Types<'a>, id: TypeId, out: &mut Vec<Tok<'a>>, g: &mut Guard) {
    if out.len() > MAX_SIGNATURE || !g.enter() {
        out.push(Tok::N(u64::MAX));
        return;
    }
    type_signature_inner(types, id, out, g);
    g.leave();
}

fn type_signature_inner<'a>(types: &Types<'a>, id: TypeId, out: &mut Vec<Tok<'a>>, g: &mut Guard) {
    let t = types.get(id);
    match &t.kind {
        Kind::Void => out.push(Tok::N(100)),
        Kind::Int { size, .. } => out.extend([Tok::N(101), Tok::S(t.name), Tok::N(*size as u64)]),
        Kind::Float { size } => out.extend([Tok::N(102), Tok::S(t.name), Tok::N(*size as u64)]),
        Kind::Pointer { target } => {
            out.push(Tok::N(103));
            type_signature(types, *target, out, g);
        }
        Kind::Array { elem, count } => {
            out.extend([Tok::N(104), Tok::N(*count)]);
            type_signature(types, *elem, out, g);
        }
        Kind::Struct(_) | Kind::Union(_) if t.name.is_empty() => {
            composite_signature(types, id, out, g)
        }
        Kind::Struct(_) => out.extend([Tok::N(105), Tok::S(t.name)]),
        Kind::Union(_) => out.extend([Tok::N(106), Tok::S(t.name)]),
        Kind::Enum { size, values, .. } => {
            out.extend([Tok::N(107), Tok::S(t.name), Tok::N(*size as u64)]);
            if t.name.is_empty() {
                for v in values.iter().take(64) {
                    out.extend([Tok::S(v.name), Tok::N(v.value)]);
                }
            }
        }
        Kind::Fwd { is_union } => {
            out.extend([Tok::N(108), Tok::N(*is_union as u64), Tok::S(t.name)])
        }
        Kind::Typedef { .. } => out.extend([Tok::N(109), Tok::S(t.name)]),
        Kind::Qualified { qualifier, target } => {
            out.extend([Tok::N(110), Tok::N(*qualifier as u64)]);
            type_signature(types, *target, out, g);
        }
        Kind::TypeTag { target, tag } => {
            out.extend([Tok::N(111), Tok::S(tag)]);
            type_signature(types, *target, out, g);
        }
        Kind::FuncProto {
            ret,
            params,
            variadic,
        } => {
            out.extend([
                Tok::N(112),
                Tok::N(params.len() as u64),
                Tok::N(*variadic as u64),
            ]);
            type_signature(types, *ret, out, g);
            for p in params {
                type_signature(types, *p, out, g);
            }
        }
        Kind::Other => out.extend([Tok::N(113), Tok::S(t.name)]),
    }
}

/// Points every reference at `remap[id]`, following chains (an alias of a duplicate).
fn apply_remap(types: &mut Types<'_>, remap: &[TypeId]) {
    if remap.iter().enumerate().all(|(i, &r)| i as TypeId == r) {
        return;
    }
    let resolve = |mut id: TypeId| -> TypeId {
        for _ in walk::chain() {
            match remap.get(id as usize) {
                Some(&next) if next != id => id = next,
                _ => break,
            }
        }
        id
    };
    let final_: Vec<TypeId> = (0..remap.len() as TypeId).map(resolve).collect();
    let map = |id: &mut TypeId| {
        if let Some(&to) = final_.get(*id as usize) {
            *id = to;
        }
    };
    for t in &mut types.types {
        match &mut t.kind {
            Kind::Pointer { target }
            | Kind::Typedef { target }
            | Kind::Qualified { target, .. }
            | Kind::TypeTag { target, .. } => map(target),
            Kind::Array { elem, .. } => map(elem),
            Kind::Struct(c) | Kind::Union(c) => c.members.iter_mut().for_each(|m| map(&mut m.ty)),
            Kind::FuncProto { ret, params, .. } => {
                map(ret);
                params.iter_mut().for_each(map);
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Every section, for readers that need more than types

/// All DWARF sections of ELF file `elf`, location and range lists included, relocated and
/// decompressed as [`parse`] reads them: what typing an instruction from its variables'
/// locations needs ([`crate::readers::typing`]). The first section of each name serves.
pub(crate) fn load_all<'a>(
    elf: &'a [u8],
    arena: &'a typed_arena::Arena<Vec<u8>>,
) -> Result<gimli::Dwarf<Slice<'a>>, DwarfError> {
    let obj = object::File::parse(elf).map_err(|e| DwarfError::NotElf(e.to_string()))?;
    if obj.format() != object::BinaryFormat::Elf {
        return Err(DwarfError::NotElf(format!("{:?} file", obj.format())));
    }
    let big_endian = !obj.is_little_endian();
    let endian = if big_endian {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    let relocatable = obj.kind() == object::ObjectKind::Relocatable;
    if obj.section_by_name(".debug_info").is_none() && obj.section_by_name(".zdebug_info").is_none()
    {
        return Err(DwarfError::NoDebugInfo);
    }
    gimli::Dwarf::load(|id: gimli::SectionId| -> Result<Slice<'a>, DwarfError> {
        let name = id.name();
        let compressed = name.replacen(".debug_", ".zdebug_", 1);
        let section = obj
            .section_by_name(name)
            .or_else(|| obj.section_by_name(&compressed));
        let data = match section {
            Some(s) if s.kind() != object::SectionKind::UninitializedData => {
                section_data(&obj, &s, name, relocatable, big_endian, arena)?
            }
            _ => &[],
        };
        Ok(EndianSlice::new(data, endian))
    })
}

// ---------------------------------------------------------------------------------------------
// Function prototypes

/// Every named function (`DW_TAG_subprogram`) with the structs its formal parameters and
/// return type point to, by name (typedefs, `const` and `volatile` followed): what binding
/// evidence rows to types needs from a program without BTF.
pub fn function_prototypes(
    elf: &[u8],
    arena: &typed_arena::Arena<Vec<u8>>,
) -> Result<Vec<(String, Vec<String>)>, DwarfError> {
    let sections = Sections::load(elf, arena)?;
    let dwarf = sections.dwarf();
    let mut out = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let mut entries = unit.entries();
        // (depth of the subprogram, its name, structs so far)
        let mut open: Option<(isize, String, Vec<String>)> = None;
        while let Ok(Some(entry)) = entries.next_dfs() {
            let depth = entry.depth();
            if let Some((d, _, _)) = &open
                && depth <= *d
                && let Some((_, name, structs)) = open.take()
            {
                out.push((name, structs));
            }
            match entry.tag() {
                dw::DW_TAG_subprogram => {
                    let name = entry
                        .attr_value(dw::DW_AT_name)
                        .and_then(|v| dwarf.attr_string(&unit, v).ok())
                        .map(|s| String::from_utf8_lossy(s.slice()).into_owned());
                    if let Some(name) = name {
                        let mut structs = Vec::new();
                        if let Some(s) = pointee_name(&dwarf, &unit, entry, 0) {
                            structs.push(s);
                        }
                        open = Some((depth, name, structs));
                    }
                }
                dw::DW_TAG_formal_parameter => {
                    if let Some((d, _, structs)) = &mut open
                        && depth == *d + 1
                        && let Some(s) = pointee_name(&dwarf, &unit, entry, 0)
                        && !structs.contains(&s)
                    {
                        structs.push(s);
                    }
                }
                _ => {}
            }
        }
        if let Some((_, name, structs)) = open.take() {
            out.push((name, structs));
        }
    }
    Ok(out)
}

/// The name of the struct or union that `entry`'s `DW_AT_type` points to, when it is a
/// pointer (through typedefs and qualifiers on either side of it).
fn pointee_name<'a>(
    dwarf: &gimli::Dwarf<Slice<'a>>,
    unit: &Unit<'a>,
    entry: &gimli::DebuggingInformationEntry<Slice<'a>>,
    _depth: usize,
) -> Option<String> {
    let mut off = match entry.attr_value(dw::DW_AT_type)? {
        AttributeValue::UnitRef(o) => o,
        _ => return None,
    };
    let mut through_pointer = false;
    for _ in 0..walk::MAX_DEPTH {
        let e = unit.entry(off).ok()?;
        match e.tag() {
            dw::DW_TAG_pointer_type if !through_pointer => through_pointer = true,
            dw::DW_TAG_typedef | dw::DW_TAG_const_type | dw::DW_TAG_volatile_type => {}
            dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type
                if through_pointer =>
            {
                let name = e.attr_value(dw::DW_AT_name)?;
                let s = dwarf.attr_string(unit, name).ok()?;
                return Some(String::from_utf8_lossy(s.slice()).into_owned());
            }
            _ => return None,
        }
        off = match e.attr_value(dw::DW_AT_type)? {
            AttributeValue::UnitRef(o) => o,
            _ => return None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocation_values_round_trip_in_both_byte_orders() {
        for big in [false, true] {
            let mut b = [0u8; 4];
            write_uint(&mut b, 0x1234_5678, big);
            assert_eq!(read_uint(&b, big), 0x1234_5678);
        }
        let mut b = [0u8; 4];
        write_uint(&mut b, 0x1234_5678, false);
        assert_eq!(b, [0x78, 0x56, 0x34, 0x12]);
    }

    #[test]
    fn minus_one_upper_bound_is_an_empty_array() {
        let a = Attrs {
            upper_bound: Some(AttributeValue::Data8(u64::MAX)),
            ..Attrs::default()
        };
        assert_eq!(subrange_count(&a, 0), 0);
        let a = Attrs {
            upper_bound: Some(AttributeValue::Data1(7)),
            ..Attrs::default()
        };
        assert_eq!(subrange_count(&a, 0), 8);
        let a = Attrs {
            upper_bound: Some(AttributeValue::Data1(0xff)),
            ..Attrs::default()
        };
        assert_eq!(subrange_count(&a, 0), 256);
        let a = Attrs {
            count: Some(AttributeValue::Data1(0xff)),
            ..Attrs::default()
        };
        assert_eq!(subrange_count(&a, 0), 255);
        let a = Attrs {
            upper_bound: Some(AttributeValue::Data1(7)),
            lower_bound: Some(AttributeValue::Data1(3)),
            ..Attrs::default()
        };
        assert_eq!(subrange_count(&a, 0), 5);
        assert_eq!(subrange_count(&Attrs::default(), 0), 0);
    }

    #[test]
    fn garbage_is_an_error() {
        let arena = typed_arena::Arena::new();
        let err = parse(b"\x7fELF garbage", &arena).unwrap_err();
        assert!(matches!(err, DwarfError::NotElf(_)), "{err}");
    }
}
