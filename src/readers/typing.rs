//! Typing a memory access from its instruction: which struct, and which byte of it, the
//! instruction at a code address touches, from the image's code and DWARF alone.
//!
//! The instruction is decoded (iced-x86) and its memory operand's base register is typed at
//! that address, as perf's data-type profiling and TypeCraft do:
//!
//! 1. **Locations.** A parameter or variable whose DWARF location at the address (a location
//!    list entry, or an expression valid over its scope) is the register, or the register
//!    plus a constant (`DW_OP_breg3 -16; DW_OP_stack_value`: what the compiler writes for a
//!    `container_of` result it keeps as the member's address), gives the register's type.
//!    Expressions are evaluated by gimli's evaluator, with a symbolic value for the register.
//! 2. **Propagation.** Otherwise the code is walked back, over every path that reaches the
//!    access within the function (jumps and fall-through), to the instruction that made the
//!    register: a register move; a load of a pointer member (`mov rax, [rbx+0x18]` with rbx a
//!    `struct foo *` and foo's member at 0x18 a `struct bar *` makes rax a `struct bar *`);
//!    a load of a global pointer; `lea`/`add`/`sub` of a constant (a member's address, or a
//!    `container_of`'s negative offset); a stack slot the register was spilled to and
//!    reloaded from; a call's return value (the callee's DWARF return type); a parameter
//!    register at the function's entry (the prototype's parameters, by the ABI). Each of
//!    those sources is typed the same way, at its own address.
//! 3. **Paths.** Paths that reach the access with different types leave it untyped; a path
//!    that gives no type (a loop's back edge, an unknown value) does not count against one
//!    that does.
//!
//! The answer is the struct and the byte offset in it (`exact`), or why not. An indexed
//! operand (`[rbx+rcx*8+0x10]`) names its member (the array) but not the element.
//!
//! ThreadSanitizer-instrumented code (`lineup cc`) makes each access a call
//! (`call __tsan_read8` with the address in `rdi`): such a call is typed as an access at its
//! first argument, which is how recorded access sites are typed against the ground truth
//! `lineup record` knows ([`check_recorded`]).
//!
//! AArch64 images are typed from DWARF locations only (step 1), at the register the access's
//! address was made from ([`super::code::decode_operand_aarch64`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use gimli::{AttributeValue, constants as dw};
use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    OpKind, Register,
};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use serde::Serialize;

use super::code::Isa;
use super::dwarf::Slice;
use super::{InputFile, LoadError};

/// A DIE's place: its `.debug_info` offset.
type TypeKey = u64;

/// What one access was typed as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypedAccess {
    /// The struct or union (its tag, or the typedef naming an anonymous one).
    pub type_name: String,
    /// Byte offset of the access in it: the member offset.
    pub offset: i64,
    /// The member at that offset (`stats.hits[1]`).
    pub member: String,
    /// The operand has an index register (or the pointer was indexed on the way): the member
    /// is known, the array element is not; `offset` is the first element's.
    pub indexed: bool,
    /// Bytes accessed, when the instruction says.
    pub size: Option<u32>,
    /// The instruction (`mov rax, [rbx+0x18]`).
    pub instruction: String,
    /// How the base register's type was found (`parameter p`, `loaded from foo.next`).
    pub via: String,
}

/// Why an access was not typed; `label` is the category coverage is reported by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotTyped {
    pub label: &'static str,
    pub detail: String,
}

impl NotTyped {
    fn new(label: &'static str, detail: impl Into<String>) -> Self {
        NotTyped {
            label,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for NotTyped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.label)
        } else {
            write!(f, "{}: {}", self.label, self.detail)
        }
    }
}

// Categories of accesses left untyped.
pub const NO_CODE: &str = "no code at the address";
pub const NOT_MEMORY: &str = "not a memory access";
pub const STACK: &str = "a stack slot (a local)";
pub const NO_DWARF: &str = "no DWARF for the function";
pub const UNTRACKED: &str = "base register's type not found";
pub const NOT_STRUCT: &str = "not a struct member";
pub const OUTSIDE: &str = "offset outside the type";
pub const IN_CALLEE: &str = "the access is in a callee";

// ---------------------------------------------------------------------------------------------
// Types, from the DWARF DIEs

#[derive(Clone, Debug)]
struct Field {
    name: String,
    offset: u64,
    ty: TypeKey,
}

#[derive(Clone, Debug)]
enum Ty {
    Struct {
        name: String,
        size: u64,
        fields: Vec<Field>,
    },
    /// `None`: `void *` (or a pointer to something not read).
    Pointer(Option<TypeKey>),
    Array {
        elem: TypeKey,
        count: u64,
    },
    Scalar {
        name: String,
        size: u64,
    },
    Unknown,
}

/// A register's value: the address `offset` bytes into an object of type `ty`.
#[derive(Clone, Debug)]
struct Ptr {
    ty: TypeKey,
    offset: i64,
    indexed: bool,
    via: String,
}

/// What the backward walk found for a place.
#[derive(Clone, Debug)]
enum Val {
    Ptr(Ptr),
    /// An address in the function's own frame.
    Stack,
    Unknown(String),
    /// An integer: an unknown part (an array index, scaled) plus this constant
    /// (`lea rdi, [r14*4+0x30]` is `Int(0x30)`): added to a pointer, the constant is a byte
    /// offset and the unknown part picks the element.
    Int(i64),
    /// On a cycle (a loop's back edge): says nothing.
    Pending,
}

/// A place a value lives in: a register (full 64-bit), or a stack slot `[base + disp]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Loc {
    Reg(Register),
    Slot(Register, i64),
}

/// One variable's location over one address range.
#[derive(Clone, Debug)]
struct VarLoc {
    lo: u64,
    hi: u64,
    /// DWARF register number.
    reg: u16,
    /// The variable is `reg + addend` (in a register), or lives at `[reg + addend]`.
    addend: i64,
    in_memory: bool,
    ty: TypeKey,
    name: String,
}

/// A function's code, decoded.
struct Function {
    start: u64,
    instrs: Vec<Instruction>,
    /// Jump sources of each instruction (within the function).
    jumped_from: Vec<Vec<usize>>,
    /// The function sets up a frame pointer (`mov rbp, rsp`): rbp-based operands are the
    /// frame's.
    frame_pointer: bool,
    vars: Vec<VarLoc>,
    /// Types of the parameters in order (the ABI's integer registers carry them).
    params: Vec<TypeKey>,
}

impl Function {
    fn index_of(&self, ip: u64) -> Option<usize> {
        self.instrs.binary_search_by_key(&ip, |i| i.ip()).ok()
    }
}

/// A DWARF subprogram's code range.
#[derive(Clone, Debug)]
struct FunctionRange {
    lo: u64,
    hi: u64,
    unit: usize,
    die: gimli::UnitOffset,
}

#[derive(Clone, Debug)]
struct Global {
    address: u64,
    size: u64,
    ty: TypeKey,
    name: String,
}

const SENTINEL: u64 = 0x4000_0000_0000_0000;
/// Why a register is unknown when paths give it different constants (not an array index).
const DIFFERENT_INTEGERS: &str = "paths give different integers";
/// Beyond this many steps one query gives up (a huge function's many paths).
const STEP_BUDGET: usize = 20_000;
/// Deepest nesting of path merges followed.
const MAX_MERGE_DEPTH: usize = 48;
/// The System V x86-64 integer argument registers, in order.
const ARG_REGS: [Register; 6] = [
    Register::RDI,
    Register::RSI,
    Register::RDX,
    Register::RCX,
    Register::R8,
    Register::R9,
];
/// Registers a call may change (System V x86-64), besides rax.
const CALLER_SAVED: [Register; 8] = [
    Register::RDI,
    Register::RSI,
    Register::RDX,
    Register::RCX,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
];

fn dwarf_reg(r: Register) -> Option<u16> {
    Some(match r {
        Register::RAX => 0,
        Register::RDX => 1,
        Register::RCX => 2,
        Register::RBX => 3,
        Register::RSI => 4,
        Register::RDI => 5,
        Register::RBP => 6,
        Register::RSP => 7,
        Register::R8 => 8,
        Register::R9 => 9,
        Register::R10 => 10,
        Register::R11 => 11,
        Register::R12 => 12,
        Register::R13 => 13,
        Register::R14 => 14,
        Register::R15 => 15,
        _ => return None,
    })
}

fn reg_name(r: Register) -> String {
    format!("{r:?}").to_lowercase()
}

/// An image's code and DWARF, ready to type accesses.
pub struct Typer<'a> {
    dwarf: gimli::Dwarf<Slice<'a>>,
    units: Vec<gimli::Unit<Slice<'a>>>,
    /// `.debug_info` offset of each unit's header, in order.
    unit_starts: Vec<u64>,
    functions: Vec<FunctionRange>,
    globals: Vec<Global>,
    /// Function entry → the type its DWARF says it returns.
    returns: HashMap<u64, TypeKey>,
    /// Struct and union definitions by name, for declarations.
    definitions: HashMap<String, TypeKey>,
    /// (start, size, name) of every function symbol, by start.
    symbols: Vec<(u64, u64, String)>,
    by_name: HashMap<String, u64>,
    /// Executable sections: (address, bytes).
    code: Vec<(u64, &'a [u8])>,
    /// Every section the image loads, code and data: (address, bytes); jump tables are read
    /// from them.
    loaded: Vec<(u64, &'a [u8])>,
    isa: Isa,
    types: RefCell<HashMap<TypeKey, Rc<Ty>>>,
    decoded: RefCell<HashMap<u64, Rc<Function>>>,
    /// Function entry -> the addresses of the direct calls to it, built on first use.
    callers: RefCell<Option<Rc<HashMap<u64, Vec<u64>>>>>,
    /// How many callers' walks are under way (a parameter typed by its callers' arguments).
    caller_depth: std::cell::Cell<usize>,
}

impl<'a> Typer<'a> {
    /// Reads the code, symbols and DWARF of `file` (a program, a shared object, a vmlinux).
    pub fn new(file: &'a InputFile) -> Result<Self, LoadError> {
        let path = &file.path;
        let bytes = file.bytes();
        let obj = object::File::parse(bytes)
            .map_err(|e| LoadError::new(path, format!("not an ELF object: {e}")))?;
        let isa = match obj.architecture() {
            object::Architecture::X86_64 => Isa::X86_64,
            object::Architecture::Aarch64 => Isa::Aarch64,
            a => {
                return Err(LoadError::new(
                    path,
                    format!("{a:?} code: lineup types only x86-64 and AArch64 instructions"),
                ));
            }
        };
        let dwarf = super::dwarf::load_all(bytes, &file.arena)
            .map_err(|e| LoadError::new(path, e.to_string()))?;
        let mut symbols: Vec<(u64, u64, String)> = obj
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        symbols.sort();
        symbols.dedup_by_key(|s| s.0);
        let by_name = symbols.iter().map(|s| (s.2.clone(), s.0)).collect();
        let code = obj
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect();
        let loaded = obj
            .sections()
            .filter(|s| {
                s.address() != 0
                    && !matches!(
                        s.kind(),
                        object::SectionKind::UninitializedData
                            | object::SectionKind::UninitializedTls
                    )
            })
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect();
        let mut typer = Typer {
            dwarf,
            units: Vec::new(),
            unit_starts: Vec::new(),
            functions: Vec::new(),
            globals: Vec::new(),
            returns: HashMap::new(),
            definitions: HashMap::new(),
            symbols,
            by_name,
            code,
            loaded,
            isa,
            types: RefCell::new(HashMap::new()),
            decoded: RefCell::new(HashMap::new()),
            callers: RefCell::new(None),
            caller_depth: std::cell::Cell::new(0),
        };
        typer
            .index()
            .map_err(|e| LoadError::new(path, format!("corrupt DWARF: {e}")))?;
        Ok(typer)
    }

    /// The instruction set of the image.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The names of the image's function symbols, by address.
    pub fn function_names(&self) -> Vec<&str> {
        self.symbols.iter().map(|s| s.2.as_str()).collect()
    }

    /// The address of function `name`.
    pub fn symbol_address(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// One pass over every unit: functions' ranges and return types, globals with a static
    /// address, struct definitions by name.
    fn index(&mut self) -> gimli::Result<()> {
        let mut typedefs: Vec<(String, TypeKey)> = Vec::new();
        let mut headers = self.dwarf.units();
        while let Some(header) = headers.next()? {
            let Some(start) = header.debug_info_offset().map(|o| o.0 as u64) else {
                continue;
            };
            let unit = self.dwarf.unit(header)?;
            let ui = self.units.len();
            let mut entries = unit.entries();
            while let Some(entry) = entries.next_dfs()? {
                match entry.tag() {
                    dw::DW_TAG_subprogram => {
                        let mut ranges = self.dwarf.die_ranges(&unit, entry)?;
                        // An out-of-line copy of an inline function (or a definition of a
                        // declaration) keeps its return type on the DIE it refers to.
                        let ret = self.type_attr(&unit, entry).or_else(|| {
                            let mut e = entry.clone();
                            for _ in 0..4 {
                                let Some(AttributeValue::UnitRef(o)) = e
                                    .attr_value(dw::DW_AT_abstract_origin)
                                    .or_else(|| e.attr_value(dw::DW_AT_specification))
                                else {
                                    return None;
                                };
                                e = unit.entry(o).ok()?;
                                if let Some(t) = self.type_attr(&unit, &e) {
                                    return Some(t);
                                }
                            }
                            None
                        });
                        while let Some(r) = ranges.next()? {
                            if r.begin >= r.end {
                                continue;
                            }
                            self.functions.push(FunctionRange {
                                lo: r.begin,
                                hi: r.end,
                                unit: ui,
                                die: entry.offset(),
                            });
                            if let Some(t) = ret {
                                self.returns.entry(r.begin).or_insert(t);
                            }
                        }
                    }
                    dw::DW_TAG_variable => {
                        let Some(AttributeValue::Exprloc(expr)) =
                            entry.attr_value(dw::DW_AT_location)
                        else {
                            continue;
                        };
                        let Some(ty) = self.type_attr(&unit, entry) else {
                            continue;
                        };
                        let Some(address) = static_address(&self.dwarf, &unit, expr) else {
                            continue;
                        };
                        let name = self.name_of(&unit, entry).unwrap_or_default();
                        self.globals.push(Global {
                            address,
                            size: 0,
                            ty,
                            name,
                        });
                    }
                    dw::DW_TAG_typedef => {
                        if let (Some(name), Some(target)) =
                            (self.name_of(&unit, entry), self.type_attr(&unit, entry))
                        {
                            typedefs.push((name, target));
                        }
                    }
                    dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                        let declaration = matches!(
                            entry.attr_value(dw::DW_AT_declaration),
                            Some(AttributeValue::Flag(true))
                        );
                        if declaration || entry.attr_value(dw::DW_AT_byte_size).is_none() {
                            continue;
                        }
                        if let Some(name) = self.name_of(&unit, entry)
                            && let Some(o) = entry.offset().to_debug_info_offset(&unit.header)
                        {
                            self.definitions.entry(name).or_insert(o.0 as u64);
                        }
                    }
                    _ => {}
                }
            }
            self.units.push(unit);
            self.unit_starts.push(start);
        }
        // `typedef struct { ... } name;`: the struct goes by the typedef's name.
        for (name, target) in typedefs {
            if self.definitions.contains_key(&name) {
                continue;
            }
            if let Ty::Struct { name: n, .. } = &*self.ty(target)
                && *n == name
            {
                let key = self.definition_key(target);
                self.definitions.insert(name, key);
            }
        }
        self.functions
            .sort_by_key(|f| (f.lo, std::cmp::Reverse(f.hi)));
        let mut globals = std::mem::take(&mut self.globals);
        for g in &mut globals {
            g.size = self.size_of(g.ty);
        }
        globals.sort_by_key(|g| g.address);
        self.globals = globals;
        Ok(())
    }

    /// The struct DIE a type key names, through typedefs and qualifiers.
    fn definition_key(&self, mut key: TypeKey) -> TypeKey {
        for _ in 0..16 {
            let Some(ui) = self.unit_of(key) else { break };
            let unit = &self.units[ui];
            let Some(off) = gimli::DebugInfoOffset(key as usize).to_unit_offset(&unit.header)
            else {
                break;
            };
            let Ok(entry) = unit.entry(off) else { break };
            if !matches!(
                entry.tag(),
                dw::DW_TAG_typedef | dw::DW_TAG_const_type | dw::DW_TAG_volatile_type
            ) {
                break;
            }
            match self.type_attr(unit, &entry) {
                Some(k) => key = k,
                None => break,
            }
        }
        key
    }

    fn name_of(
        &self,
        unit: &gimli::Unit<Slice<'a>>,
        entry: &gimli::DebuggingInformationEntry<Slice<'a>>,
    ) -> Option<String> {
        let v = entry.attr_value(dw::DW_AT_name)?;
        let s = self.dwarf.attr_string(unit, v).ok()?;
        Some(String::from_utf8_lossy(s.slice()).into_owned())
    }

    /// The `.debug_info` offset of the DIE `entry`'s `DW_AT_type` names.
    fn type_attr(
        &self,
        unit: &gimli::Unit<Slice<'a>>,
        entry: &gimli::DebuggingInformationEntry<Slice<'a>>,
    ) -> Option<TypeKey> {
        match entry.attr_value(dw::DW_AT_type)? {
            AttributeValue::UnitRef(o) => Some(o.to_debug_info_offset(&unit.header)?.0 as u64),
            AttributeValue::DebugInfoRef(o) => Some(o.0 as u64),
            _ => None,
        }
    }

    fn unit_of(&self, key: TypeKey) -> Option<usize> {
        let i = self.unit_starts.partition_point(|&s| s <= key);
        i.checked_sub(1)
    }

    fn ty(&self, key: TypeKey) -> Rc<Ty> {
        if let Some(t) = self.types.borrow().get(&key) {
            return t.clone();
        }
        let t = Rc::new(self.read_type(key, 0).unwrap_or(Ty::Unknown));
        self.types.borrow_mut().insert(key, t.clone());
        t
    }

    /// Reads the type at `key`, through typedefs and qualifiers; an anonymous struct takes
    /// the name of the typedef that names it.
    fn read_type(&self, mut key: TypeKey, depth: usize) -> Option<Ty> {
        let mut alias: Option<String> = None;
        for _ in 0..32 {
            let ui = self.unit_of(key)?;
            let unit = &self.units[ui];
            let off = gimli::DebugInfoOffset(key as usize).to_unit_offset(&unit.header)?;
            let entry = unit.entry(off).ok()?;
            match entry.tag() {
                dw::DW_TAG_typedef
                | dw::DW_TAG_const_type
                | dw::DW_TAG_volatile_type
                | dw::DW_TAG_restrict_type
                | dw::DW_TAG_atomic_type => {
                    if entry.tag() == dw::DW_TAG_typedef && alias.is_none() {
                        alias = self.name_of(unit, &entry);
                    }
                    key = self.type_attr(unit, &entry)?;
                }
                dw::DW_TAG_pointer_type | dw::DW_TAG_reference_type => {
                    return Some(Ty::Pointer(self.type_attr(unit, &entry)));
                }
                dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                    let name = self.name_of(unit, &entry);
                    let declaration = matches!(
                        entry.attr_value(dw::DW_AT_declaration),
                        Some(AttributeValue::Flag(true))
                    );
                    if declaration {
                        let def = *self.definitions.get(name.as_ref()?)?;
                        if def == key || depth > 4 {
                            return None;
                        }
                        return self.read_type(def, depth + 1);
                    }
                    let size = entry
                        .attr_value(dw::DW_AT_byte_size)
                        .and_then(|v| v.udata_value())
                        .unwrap_or(0);
                    let fields = self.fields(unit, off);
                    return Some(Ty::Struct {
                        name: name.or(alias).unwrap_or_else(|| "(anonymous)".into()),
                        size,
                        fields,
                    });
                }
                dw::DW_TAG_array_type => {
                    let elem = self.type_attr(unit, &entry)?;
                    let count = self.array_count(unit, off);
                    return Some(Ty::Array { elem, count });
                }
                dw::DW_TAG_base_type | dw::DW_TAG_enumeration_type => {
                    let size = entry
                        .attr_value(dw::DW_AT_byte_size)
                        .and_then(|v| v.udata_value())
                        .unwrap_or(0);
                    let name = self.name_of(unit, &entry).unwrap_or_default();
                    return Some(Ty::Scalar { name, size });
                }
                _ => return None,
            }
        }
        None
    }

    fn fields(&self, unit: &gimli::Unit<Slice<'a>>, off: gimli::UnitOffset) -> Vec<Field> {
        let mut out = Vec::new();
        let Ok(mut tree) = unit.entries_tree(Some(off)) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if !matches!(e.tag(), dw::DW_TAG_member | dw::DW_TAG_inheritance) {
                continue;
            }
            if e.attr_value(dw::DW_AT_external).is_some() {
                continue;
            }
            let Some(ty) = self.type_attr(unit, e) else {
                continue;
            };
            let offset = match e.attr_value(dw::DW_AT_data_member_location) {
                Some(v) => match v.udata_value() {
                    Some(o) => o,
                    None => match v {
                        AttributeValue::Exprloc(x) => {
                            static_offset(x, unit.encoding()).unwrap_or(0)
                        }
                        _ => continue,
                    },
                },
                None => e
                    .attr_value(dw::DW_AT_data_bit_offset)
                    .and_then(|v| v.udata_value())
                    .map_or(0, |b| b / 8),
            };
            out.push(Field {
                name: self.name_of(unit, e).unwrap_or_default(),
                offset,
                ty,
            });
        }
        out
    }

    fn array_count(&self, unit: &gimli::Unit<Slice<'a>>, off: gimli::UnitOffset) -> u64 {
        let Ok(mut tree) = unit.entries_tree(Some(off)) else {
            return 0;
        };
        let Ok(root) = tree.root() else { return 0 };
        let mut children = root.children();
        let mut total: Option<u64> = None;
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != dw::DW_TAG_subrange_type {
                continue;
            }
            let n = if let Some(c) = e.attr_value(dw::DW_AT_count).and_then(|v| v.udata_value()) {
                c
            } else if let Some(u) = e.attr_value(dw::DW_AT_upper_bound) {
                match u {
                    AttributeValue::Data1(0xff)
                    | AttributeValue::Data2(0xffff)
                    | AttributeValue::Data4(0xffff_ffff) => 0,
                    _ => u.udata_value().map_or(0, |u| u.wrapping_add(1)),
                }
            } else {
                0
            };
            total = Some(total.unwrap_or(1).saturating_mul(n));
        }
        total.unwrap_or(0)
    }

    fn size_of(&self, key: TypeKey) -> u64 {
        self.size_of_depth(key, 0)
    }

    fn size_of_depth(&self, key: TypeKey, depth: usize) -> u64 {
        if depth > 16 {
            return 0;
        }
        match &*self.ty(key) {
            Ty::Struct { size, .. } => *size,
            Ty::Pointer(_) => 8,
            Ty::Array { elem, count } => {
                self.size_of_depth(*elem, depth + 1).saturating_mul(*count)
            }
            Ty::Scalar { size, .. } => *size,
            Ty::Unknown => 0,
        }
    }

    /// Whether type `key` is a struct or union, or an array of them.
    fn holds_structs(&self, key: TypeKey) -> bool {
        match &*self.ty(key) {
            Ty::Struct { .. } => true,
            Ty::Array { elem, .. } => self.struct_name(*elem).is_some(),
            _ => false,
        }
    }

    /// The struct's name, when `key` is a struct or union.
    fn struct_name(&self, key: TypeKey) -> Option<String> {
        match &*self.ty(key) {
            Ty::Struct { name, .. } => Some(name.clone()),
            _ => None,
        }
    }

    /// What lies at byte `offset` of type `key`: the innermost member's path and type and
    /// where it starts (relative to `key`'s start).
    fn leaf_at(&self, key: TypeKey, offset: u64) -> (String, TypeKey, u64) {
        let mut path = String::new();
        let (mut key, mut base) = (key, 0u64);
        for _ in 0..32 {
            let rel = offset - base;
            match &*self.ty(key) {
                Ty::Struct { fields, .. } => {
                    let hit = fields.iter().find(|f| {
                        let size = self.size_of(f.ty).max(1);
                        f.offset <= rel && rel < f.offset + size
                    });
                    let Some(f) = hit else { break };
                    if !f.name.is_empty() {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(&f.name);
                    }
                    key = f.ty;
                    base += f.offset;
                }
                Ty::Array { elem, .. } => {
                    let size = self.size_of(*elem).max(1);
                    let i = rel / size;
                    path.push_str(&format!("[{i}]"));
                    key = *elem;
                    base += i * size;
                }
                _ => break,
            }
        }
        (path, key, base)
    }

    /// The one struct that embeds struct `inner` by value at some offset `at` such that
    /// `at + offset` falls inside it: where a pointer to `inner` is used at `offset` outside
    /// it, the code holds a member pointer and reaches the container (`container_of`).
    fn only_container(&self, inner: TypeKey, offset: i64) -> Option<(TypeKey, i64)> {
        let name = self.struct_name(inner)?;
        let size = self.size_of(inner);
        let mut found: Option<(TypeKey, i64)> = None;
        let mut seen: HashSet<String> = HashSet::new();
        for (outer_name, &outer) in &self.definitions {
            if !seen.insert(outer_name.clone()) {
                continue;
            }
            let Ty::Struct {
                fields, size: os, ..
            } = &*self.ty(outer)
            else {
                continue;
            };
            for f in fields {
                let is_inner = self.struct_name(f.ty).as_deref() == Some(name.as_str())
                    && self.size_of(f.ty) == size;
                let at = f.offset as i64;
                if is_inner && (0..*os as i64).contains(&(at + offset)) {
                    if found.is_some() {
                        return None;
                    }
                    found = Some((outer, at));
                }
            }
        }
        found
    }

    /// Every struct byte `offset` of struct `type_name` lies in, outermost first, with the
    /// offset and member path within each: an access typed as an embedded struct
    /// (`xxhState.v[1]` as `XXH64_state_s` +16 `v[1]`) names the same byte.
    pub fn levels(&self, type_name: &str, offset: u64) -> Vec<(String, u64, String)> {
        let mut out = Vec::new();
        let Some(&key) = self.definitions.get(type_name) else {
            return out;
        };
        let (mut key, mut base) = (key, 0u64);
        for _ in 0..32 {
            let ty = self.ty(key);
            match &*ty {
                Ty::Struct { name, fields, .. } => {
                    let rel = offset - base;
                    out.push((name.clone(), rel, self.leaf_at(key, rel).0));
                    let Some(f) = fields
                        .iter()
                        .find(|f| f.offset <= rel && rel < f.offset + self.size_of(f.ty).max(1))
                    else {
                        break;
                    };
                    key = f.ty;
                    base += f.offset;
                }
                Ty::Array { elem, .. } => {
                    let size = self.size_of(*elem).max(1);
                    base += (offset - base) / size * size;
                    key = *elem;
                }
                _ => break,
            }
        }
        out
    }

    /// The member path at byte `offset` of the struct named `type_name`.
    pub fn member_of(&self, type_name: &str, offset: u64) -> Option<String> {
        let key = *self.definitions.get(type_name)?;
        Some(self.leaf_at(key, offset).0)
    }

    // -----------------------------------------------------------------------------------------
    // Functions and their variables

    fn function_range(&self, pc: u64) -> Option<&FunctionRange> {
        let i = self.functions.partition_point(|f| f.lo <= pc);
        self.functions[..i]
            .iter()
            .rev()
            .take(64)
            .filter(|f| pc < f.hi)
            .min_by_key(|f| f.hi - f.lo)
    }

    /// The symbol whose code holds `pc`: (start, end).
    fn symbol_span(&self, pc: u64) -> Option<(u64, u64)> {
        let i = self.symbols.partition_point(|s| s.0 <= pc);
        let (start, size, _) = self.symbols.get(i.checked_sub(1)?)?;
        let end = if *size > 0 {
            start + size
        } else {
            self.symbols.get(i).map_or(start + 1, |s| s.0)
        };
        (pc < end).then_some((*start, end))
    }

    fn symbol_at(&self, address: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 < address);
        let s = self.symbols.get(i)?;
        (s.0 == address).then_some(s.2.as_str())
    }

    fn code_at(&self, start: u64, end: u64) -> Option<&'a [u8]> {
        let &(addr, data) = self
            .code
            .iter()
            .find(|(a, d)| *a <= start && start < a + d.len() as u64)?;
        let from = (start - addr) as usize;
        let to = ((end - addr) as usize).min(data.len());
        data.get(from..to)
    }

    /// The function holding `pc`, decoded, with its variables' locations.
    fn function(&self, pc: u64) -> Option<Rc<Function>> {
        let range = self.function_range(pc).cloned();
        let (start, end) = match (self.symbol_span(pc), &range) {
            (Some(s), _) => s,
            (None, Some(r)) => (r.lo, r.hi),
            (None, None) => return None,
        };
        if let Some(f) = self.decoded.borrow().get(&start) {
            return Some(f.clone());
        }
        let bytes = self.code_at(start, end)?;
        let mut instrs = Vec::new();
        if self.isa == Isa::X86_64 {
            let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
            while decoder.can_decode() {
                instrs.push(decoder.decode());
            }
        }
        let mut jumped_from = vec![Vec::new(); instrs.len()];
        for (i, ins) in instrs.iter().enumerate() {
            if matches!(
                ins.flow_control(),
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
            ) && let Ok(t) = instrs.binary_search_by_key(&ins.near_branch_target(), |x| x.ip())
            {
                jumped_from[t].push(i);
            }
        }
        // Switch tables and computed gotos: each indirect jump's table targets are jumped to
        // from it. A table's base may be made on paths that pass through code reached only
        // through another table (an interpreter's dispatch inside its handlers): tables read
        // give edges, and jumps not read yet are tried again with them, until none is new.
        let mut read = vec![false; instrs.len()];
        for _round in 0..4 {
            let mut new_edges = false;
            for j in 0..instrs.len() {
                if read[j] || instrs[j].flow_control() != FlowControl::IndirectBranch {
                    continue;
                }
                let targets = self.jump_table_targets(&instrs, &jumped_from, j, start, end);
                if targets.is_empty() {
                    continue;
                }
                read[j] = true;
                for t in targets {
                    if let Ok(k) = instrs.binary_search_by_key(&t, |x| x.ip())
                        && !jumped_from[k].contains(&j)
                    {
                        jumped_from[k].push(j);
                        new_edges = true;
                    }
                }
            }
            if !new_edges {
                break;
            }
        }
        let frame_pointer = instrs.iter().take(12).any(|i| {
            i.mnemonic() == Mnemonic::Mov
                && i.op0_kind() == OpKind::Register
                && i.op1_kind() == OpKind::Register
                && i.op0_register() == Register::RBP
                && i.op1_register() == Register::RSP
        });
        let (vars, params) = match &range {
            Some(r) => self.variables(r, frame_pointer),
            None => (Vec::new(), Vec::new()),
        };
        let f = Rc::new(Function {
            start,
            instrs,
            jumped_from,
            frame_pointer,
            vars,
            params,
        });
        self.decoded.borrow_mut().insert(start, f.clone());
        Some(f)
    }

    /// `n` bytes the image loads at `address`.
    fn loaded_bytes(&self, address: u64, n: usize) -> Option<&'a [u8]> {
        let &(a, d) = self
            .loaded
            .iter()
            .find(|(a, d)| *a <= address && address + n as u64 <= a + d.len() as u64)?;
        d.get((address - a) as usize..(address - a) as usize + n)
    }

    /// The targets of the indirect jump `instrs[j]` read from its jump table, the compilers'
    /// two shapes: `jmp [base+idx*8]` (absolute entries: a computed goto's table, or a
    /// switch's in position-dependent code) and `movsxd r, [base+idx*4]; add r, base; jmp r`
    /// (entries relative to the table). The table's base is a constant the function makes
    /// with `lea base, [rip+T]`; its length is the bound a `cmp idx, N; ja` before it checks,
    /// else entries are read while they land on instructions of the function.
    fn jump_table_targets(
        &self,
        instrs: &[Instruction],
        jumped_from: &[Vec<usize>],
        j: usize,
        start: u64,
        end: u64,
    ) -> Vec<u64> {
        let constant_address = |instrs: &[Instruction], idx: usize, r: Register| -> Option<u64> {
            reaching_address(instrs, jumped_from, idx, r)
                .or_else(|| constant_address(instrs, idx, r))
        };
        let ins = &instrs[j];
        // (table address, entry bytes, relative entries)
        let table = if ins.op0_kind() == OpKind::Memory {
            if ins.memory_index() == Register::None || ins.memory_index_scale() != 8 {
                return Vec::new();
            }
            let disp = ins.memory_displacement64();
            let base = match ins.memory_base() {
                Register::None => Some(0),
                Register::RIP => return Vec::new(),
                b => constant_address(instrs, j, b.full_register()),
            };
            base.map(|b| (b.wrapping_add(disp), 8usize, false))
        } else if ins.op0_kind() == OpKind::Register {
            let mut r = ins.op0_register().full_register();
            let mut found = None;
            for k in (j.saturating_sub(12)..j).rev() {
                let x = &instrs[k];
                if !writes_register(x, r) {
                    continue;
                }
                // The target moved on its way to the jump (`mov rcx, rax; jmp rcx`).
                if x.mnemonic() == Mnemonic::Mov
                    && x.op0_kind() == OpKind::Register
                    && x.op0_register() == r
                    && x.op1_kind() == OpKind::Register
                    && x.op1_register().full_register() == x.op1_register()
                {
                    r = x.op1_register();
                    continue;
                }
                if x.mnemonic() == Mnemonic::Add
                    && x.op0_kind() == OpKind::Register
                    && x.op0_register() == r
                    && x.op1_kind() == OpKind::Register
                {
                    let b = x.op1_register().full_register();
                    found = constant_address(instrs, k, b).map(|t| (t, 4usize, true));
                } else if x.mnemonic() == Mnemonic::Mov
                    && x.op1_kind() == OpKind::Memory
                    && x.memory_index_scale() == 8
                    && x.memory_size().size() == 8
                {
                    let base = match x.memory_base() {
                        Register::None => Some(0),
                        Register::RIP => None,
                        b => constant_address(instrs, k, b.full_register()),
                    };
                    found =
                        base.map(|b| (b.wrapping_add(x.memory_displacement64()), 8usize, false));
                }
                break;
            }
            found
        } else {
            None
        };
        let Some((table, width, relative)) = table else {
            return Vec::new();
        };
        // The bound: `cmp idx, N; ja default` (N+1 entries) or `jae` (N) just before.
        let mut bound = None;
        for k in (j.saturating_sub(16)..j).rev() {
            let x = &instrs[k];
            if matches!(x.flow_control(), FlowControl::ConditionalBranch)
                && matches!(x.mnemonic(), Mnemonic::Ja | Mnemonic::Jae)
                && k > 0
                && instrs[k - 1].mnemonic() == Mnemonic::Cmp
                && matches!(
                    instrs[k - 1].op1_kind(),
                    OpKind::Immediate8
                        | OpKind::Immediate8to32
                        | OpKind::Immediate8to64
                        | OpKind::Immediate32
                        | OpKind::Immediate32to64
                )
            {
                let n = instrs[k - 1].immediate(1);
                bound = Some(if x.mnemonic() == Mnemonic::Ja {
                    n + 1
                } else {
                    n
                });
                break;
            }
            if !matches!(x.flow_control(), FlowControl::Next) {
                break;
            }
        }
        let limit = bound.unwrap_or(1024).min(4096) as usize;
        let mut out = Vec::new();
        for i in 0..limit {
            let Some(b) = self.loaded_bytes(table + (i * width) as u64, width) else {
                break;
            };
            let t = if relative {
                let e = i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64;
                table.wrapping_add(e as u64)
            } else {
                u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
            };
            let valid =
                start <= t && t < end && instrs.binary_search_by_key(&t, |x| x.ip()).is_ok();
            if valid {
                out.push(t);
            } else if bound.is_none() {
                break;
            }
        }
        out
    }

    /// Every parameter and variable of the subprogram (inlined ones and those of nested
    /// blocks included) with its location over each address range; and the subprogram's own
    /// parameter types, in order.
    fn variables(&self, range: &FunctionRange, frame_pointer: bool) -> (Vec<VarLoc>, Vec<TypeKey>) {
        let unit = &self.units[range.unit];
        let mut vars = Vec::new();
        let mut params = Vec::new();
        let Ok(mut cursor) = unit.entries_at_offset(range.die) else {
            return (vars, params);
        };
        let Ok(Some(root)) = cursor.next_dfs() else {
            return (vars, params);
        };
        let root_depth = root.depth();
        let frame_base = root
            .attr_value(dw::DW_AT_frame_base)
            .and_then(|v| match v {
                AttributeValue::Exprloc(x) => Some(x),
                _ => None,
            })
            .and_then(|x| frame_base_register(x, unit.encoding()));
        // Scopes open above the current DIE: (depth, ranges).
        let mut scopes: Vec<(isize, Vec<(u64, u64)>)> =
            vec![(root_depth, vec![(range.lo, range.hi)])];
        while let Ok(Some(entry)) = cursor.next_dfs() {
            let depth = entry.depth();
            if depth <= root_depth {
                break;
            }
            while scopes.last().is_some_and(|s| s.0 >= depth) {
                scopes.pop();
            }
            match entry.tag() {
                dw::DW_TAG_lexical_block | dw::DW_TAG_inlined_subroutine => {
                    let mut rs = Vec::new();
                    if let Ok(mut it) = self.dwarf.die_ranges(unit, entry) {
                        while let Ok(Some(r)) = it.next() {
                            rs.push((r.begin, r.end));
                        }
                    }
                    if rs.is_empty() {
                        rs = scopes.last().map(|s| s.1.clone()).unwrap_or_default();
                    }
                    scopes.push((depth, rs));
                }
                dw::DW_TAG_formal_parameter | dw::DW_TAG_variable => {
                    let (name, ty) = self.name_and_type(unit, entry);
                    let Some(ty) = ty else { continue };
                    if entry.tag() == dw::DW_TAG_formal_parameter && depth == root_depth + 1 {
                        params.push(ty);
                    }
                    let Some(loc) = entry.attr_value(dw::DW_AT_location) else {
                        continue;
                    };
                    let scope = scopes.last().map(|s| s.1.clone()).unwrap_or_default();
                    let mut add = |lo: u64, hi: u64, x: gimli::Expression<Slice<'a>>| {
                        if let Some((reg, addend, in_memory)) =
                            register_location(x, unit.encoding(), frame_base, frame_pointer)
                        {
                            vars.push(VarLoc {
                                lo,
                                hi,
                                reg,
                                addend,
                                in_memory,
                                ty,
                                name: name.clone(),
                            });
                        }
                    };
                    match loc {
                        AttributeValue::Exprloc(x) => {
                            for &(lo, hi) in &scope {
                                add(lo, hi, x.clone());
                            }
                        }
                        other => {
                            if let Ok(Some(mut list)) = self.dwarf.attr_locations(unit, other) {
                                while let Ok(Some(e)) = list.next() {
                                    add(e.range.begin, e.range.end, e.data);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        (vars, params)
    }

    /// A variable's name and type, through `DW_AT_abstract_origin` (inlined and out-of-line
    /// copies keep them on the abstract DIE).
    fn name_and_type(
        &self,
        unit: &gimli::Unit<Slice<'a>>,
        entry: &gimli::DebuggingInformationEntry<Slice<'a>>,
    ) -> (String, Option<TypeKey>) {
        let mut name = self.name_of(unit, entry);
        let mut ty = self.type_attr(unit, entry);
        let mut origin = entry
            .attr_value(dw::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(dw::DW_AT_specification));
        // The unit the origin reference is relative to.
        let mut header = unit.header;
        for _ in 0..4 {
            if name.is_some() && ty.is_some() {
                break;
            }
            let key = match origin {
                Some(AttributeValue::UnitRef(o)) => o.to_debug_info_offset(&header),
                Some(AttributeValue::DebugInfoRef(o)) => Some(o),
                _ => None,
            };
            let Some(key) = key else { break };
            let Some(ui) = self.unit_of(key.0 as u64) else {
                break;
            };
            let u = &self.units[ui];
            let Some(off) = key.to_unit_offset(&u.header) else {
                break;
            };
            let Ok(e) = u.entry(off) else { break };
            name = name.or_else(|| self.name_of(u, &e));
            ty = ty.or_else(|| self.type_attr(u, &e));
            origin = e
                .attr_value(dw::DW_AT_abstract_origin)
                .or_else(|| e.attr_value(dw::DW_AT_specification));
            header = u.header;
        }
        (name.unwrap_or_default(), ty)
    }

    /// The pointer a variable in `loc` holds at `pc`, by its DWARF location.
    fn variable_at(&self, f: &Function, pc: u64, loc: Loc) -> Option<Ptr> {
        let (reg, disp, in_memory) = match loc {
            Loc::Reg(r) => (dwarf_reg(r)?, 0, false),
            Loc::Slot(r, d) => (dwarf_reg(r)?, d, true),
        };
        let mut best: Option<Ptr> = None;
        for v in &f.vars {
            if v.reg != reg || v.in_memory != in_memory || pc < v.lo || pc >= v.hi {
                continue;
            }
            if in_memory && v.addend != disp {
                continue;
            }
            let Ty::Pointer(Some(target)) = &*self.ty(v.ty) else {
                continue;
            };
            let target = *target;
            let offset = if in_memory { 0 } else { -v.addend };
            let is_struct = self.struct_name(target).is_some();
            let via = if in_memory {
                format!(
                    "variable `{}` stored at [{}{:+}]",
                    v.name,
                    reg_name(loc_reg(loc)),
                    disp
                )
            } else if v.addend != 0 {
                format!(
                    "variable `{}` is {}{:+}",
                    v.name,
                    reg_name(loc_reg(loc)),
                    v.addend
                )
            } else {
                format!("variable `{}` in {}", v.name, reg_name(loc_reg(loc)))
            };
            let p = Ptr {
                ty: target,
                offset,
                indexed: false,
                via,
            };
            // The innermost scope's variable comes last; a struct pointer beats a `void *`
            // or a scalar pointer describing the same register.
            match &best {
                Some(b) if self.struct_name(b.ty).is_some() && !is_struct => {}
                _ => best = Some(p),
            }
        }
        best
    }

    // -----------------------------------------------------------------------------------------
    // The access

    /// Types the access made by the instruction at image address `pc`.
    pub fn type_at(&self, pc: u64) -> Result<TypedAccess, NotTyped> {
        match self.isa {
            Isa::X86_64 => self.type_at_x86(pc),
            Isa::Aarch64 => self.type_at_aarch64(pc),
        }
    }

    /// Every memory access of function `symbol` (x86-64): its address and what it was typed
    /// as. Stack and instruction-pointer-relative operands are listed too.
    pub fn accesses_in(&self, symbol: &str) -> Vec<(u64, Result<TypedAccess, NotTyped>)> {
        let Some(start) = self.symbol_address(symbol) else {
            return Vec::new();
        };
        let Some(f) = self.function(start) else {
            return Vec::new();
        };
        f.instrs
            .iter()
            .filter(|i| {
                self.instrumented_size(i).is_some()
                    || ((0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory)
                        && !matches!(i.mnemonic(), Mnemonic::Lea | Mnemonic::Nop))
            })
            .map(|i| (i.ip(), self.type_at(i.ip())))
            .collect()
    }

    fn type_at_x86(&self, pc: u64) -> Result<TypedAccess, NotTyped> {
        let Some(f) = self.function(pc) else {
            return Err(NotTyped::new(NO_CODE, format!("{pc:#x} is in no function")));
        };
        let Some(idx) = f.index_of(pc) else {
            // Inside an instruction: a recorded site inside a call longer than 5 bytes
            // (`call [rip+x]`: the recording names the byte before the return address).
            let i = f.instrs.partition_point(|i| i.ip() <= pc);
            if let Some(ins) = i.checked_sub(1).map(|i| &f.instrs[i])
                && pc < ins.next_ip()
                && matches!(
                    ins.flow_control(),
                    FlowControl::Call | FlowControl::IndirectCall
                )
            {
                return Err(NotTyped::new(
                    IN_CALLEE,
                    format!(
                        "{pc:#x} is inside `{}`, a call through a pointer: its callee, not known here, made the access",
                        show(ins)
                    ),
                ));
            }
            return Err(NotTyped::new(
                NO_CODE,
                format!("{pc:#x} is not an instruction boundary"),
            ));
        };
        let ins = &f.instrs[idx];
        let text = show(ins);
        // An instrumented access: `call __tsan_read8` with the address in rdi.
        let (base, index, disp, size) = if let Some(size) = self.instrumented_size(ins) {
            (Register::RDI, Register::None, 0i64, size)
        } else {
            if !(0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory) {
                return Err(NotTyped::new(NOT_MEMORY, text));
            }
            if matches!(ins.mnemonic(), Mnemonic::Lea | Mnemonic::Nop) {
                return Err(NotTyped::new(NOT_MEMORY, text));
            }
            let size = ins.memory_size().size() as u32;
            (
                ins.memory_base(),
                ins.memory_index(),
                ins.memory_displacement64() as i64,
                (size > 0).then_some(size),
            )
        };
        if base == Register::RIP {
            return self.global_access(
                ins.ip_rel_memory_address(),
                index != Register::None,
                size,
                text,
            );
        }
        if base == Register::RSP || (base == Register::RBP && f.frame_pointer) {
            return Err(NotTyped::new(STACK, text));
        }
        if base == Register::None {
            return Err(NotTyped::new(
                UNTRACKED,
                format!("no base register: {text}"),
            ));
        }
        let mut walk = Walk::default();
        let mut val = self.before(&f, &mut walk, idx, Loc::Reg(base.full_register()), 0);
        // `[rsi+rdi*1+0x10]` with the pointer in the index and the scaled index in the base.
        if !matches!(val, Val::Ptr(_)) && index != Register::None && ins.memory_index_scale() == 1 {
            let mut walk = Walk::default();
            if let Val::Ptr(p) = self.before(&f, &mut walk, idx, Loc::Reg(index.full_register()), 0)
            {
                val = Val::Ptr(p);
            }
        }
        match val {
            Val::Ptr(p) => self.finish(p, disp, index != Register::None, size, text),
            Val::Stack => Err(NotTyped::new(STACK, text)),
            Val::Unknown(why) => Err(NotTyped::new(
                UNTRACKED,
                format!("{}: {why}", reg_name(base)),
            )),
            Val::Int(_) => Err(NotTyped::new(
                UNTRACKED,
                format!("{}: an integer, not a pointer", reg_name(base)),
            )),
            Val::Pending => Err(NotTyped::new(
                UNTRACKED,
                format!("{}: only loops reach it", reg_name(base)),
            )),
        }
    }

    /// The access size of a ThreadSanitizer hook call (`__tsan_read8`: 8), `Some(None)` for
    /// hooks whose size the name does not give; `None` for any other instruction.
    fn instrumented_size(&self, ins: &Instruction) -> Option<Option<u32>> {
        if ins.flow_control() != FlowControl::Call {
            return None;
        }
        let name = self.symbol_at(ins.near_branch_target())?;
        let hook = name.strip_prefix("__tsan_")?;
        let kind = [
            "unaligned_read",
            "unaligned_write",
            "read_write",
            "read",
            "write",
            "atomic",
        ]
        .iter()
        .find(|k| hook.starts_with(*k))?;
        let digits: String = hook[kind.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let n: Option<u32> = digits.parse().ok();
        Some(n.map(|n| if *kind == "atomic" { n / 8 } else { n }))
    }

    /// A call's pointer arguments as the addresses it accesses: a recorded access site at a
    /// call (`pthread_mutex_lock(&a->lock)`, `memset(&s->stats, 0, n)`, which the recording
    /// runtime counts at the call, whether the function is the C library's or the runtime's
    /// own copy linked into the program). `memcpy` and `memmove` access both their
    /// arguments: the one typed as a struct member answers when the other is known not to be
    /// one (a local, a scalar buffer); both typed must agree.
    pub fn type_call_argument(&self, pc: u64) -> Result<TypedAccess, NotTyped> {
        let f = self
            .function(pc)
            .ok_or_else(|| NotTyped::new(NO_CODE, format!("{pc:#x} is in no function")))?;
        let idx = f
            .index_of(pc)
            .ok_or_else(|| NotTyped::new(NO_CODE, format!("{pc:#x}")))?;
        let ins = &f.instrs[idx];
        if ins.flow_control() != FlowControl::Call {
            return Err(NotTyped::new(NOT_MEMORY, show(ins)));
        }
        let target = ins.near_branch_target();
        let name = self
            .symbol_at(target)
            .map(|n| n.split('@').next().unwrap_or(n));
        let args: &[Register] = match name.map(pointer_arguments) {
            Some(Some(args)) => args,
            // A call into the program itself may touch anything its callees reach; only a
            // call out of it (a PLT stub) is read as an access to its first argument.
            _ if self.function_range(target).is_some() => {
                return Err(NotTyped::new(
                    IN_CALLEE,
                    format!(
                        "{}: a call into the program, the access is in the callee",
                        show(ins)
                    ),
                ));
            }
            _ => &[Register::RDI],
        };
        // The memory functions' length (rdx), when the code sets it to a constant: the access
        // is that many bytes from the pointer.
        let size =
            if args.len() == 2 || name.is_some_and(|n| n.contains("mem") || n.contains("bzero")) {
                let len = if name.is_some_and(|n| n == "bzero" || n == "explicit_bzero") {
                    Register::RSI
                } else {
                    Register::RDX
                };
                constant_before(&f, idx, len).and_then(|n| u32::try_from(n).ok())
            } else {
                None
            };
        let mut results = Vec::new();
        for &r in args {
            let mut walk = Walk::default();
            let what = reg_name(r);
            results.push(match self.before(&f, &mut walk, idx, Loc::Reg(r), 0) {
                Val::Ptr(p) => self.finish(p, 0, false, size, show(ins)),
                Val::Stack => Err(NotTyped::new(STACK, show(ins))),
                Val::Unknown(why) => Err(NotTyped::new(UNTRACKED, format!("{what}: {why}"))),
                Val::Int(_) => Err(NotTyped::new(
                    UNTRACKED,
                    format!("{what}: an integer, not a pointer"),
                )),
                Val::Pending => Err(NotTyped::new(
                    UNTRACKED,
                    format!("{what}: only loops reach it"),
                )),
            });
        }
        let typed: Vec<&TypedAccess> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        let unknown = results.iter().any(|r| {
            r.as_ref()
                .is_err_and(|e| e.label != STACK && e.label != NOT_STRUCT)
        });
        match typed.as_slice() {
            [] => results.swap_remove(0),
            [one] if !unknown => Ok((*one).clone()),
            [a, b] if a.type_name == b.type_name && a.member == b.member => Ok((*a).clone()),
            [_] => Err(NotTyped::new(
                UNTRACKED,
                format!("{}: one argument typed, the other not found", show(ins)),
            )),
            _ => Err(NotTyped::new(
                UNTRACKED,
                format!("{}: the arguments point to different structs", show(ins)),
            )),
        }
    }

    /// An access to a global at `address`.
    fn global_access(
        &self,
        address: u64,
        indexed: bool,
        size: Option<u32>,
        text: String,
    ) -> Result<TypedAccess, NotTyped> {
        let Some(g) = self.global_at(address) else {
            return Err(NotTyped::new(
                NOT_STRUCT,
                format!("{address:#x} is in no variable with a DWARF type"),
            ));
        };
        let p = Ptr {
            ty: g.ty,
            offset: (address - g.address) as i64,
            indexed: false,
            via: format!("global `{}`", g.name),
        };
        self.finish(p, 0, indexed, size, text)
    }

    fn global_at(&self, address: u64) -> Option<&Global> {
        let i = self.globals.partition_point(|g| g.address <= address);
        let g = self.globals.get(i.checked_sub(1)?)?;
        (address < g.address + g.size.max(1)).then_some(g)
    }

    /// The access `[p + disp]` as a struct and member offset.
    fn finish(
        &self,
        p: Ptr,
        disp: i64,
        indexed: bool,
        size: Option<u32>,
        instruction: String,
    ) -> Result<TypedAccess, NotTyped> {
        let indexed = indexed || p.indexed;
        let mut key = p.ty;
        let mut offset = p.offset + disp;
        // An array global or member of structs: the element's struct.
        if let Ty::Array { elem, .. } = &*self.ty(key)
            && self.struct_name(*elem).is_some()
        {
            let es = self.size_of(*elem).max(1) as i64;
            offset = offset.rem_euclid(es);
            key = *elem;
        }
        let ty = self.ty(key);
        let Ty::Struct { name, size: ts, .. } = &*ty else {
            let what = match &*ty {
                Ty::Scalar { name, .. } => format!("`{name}`"),
                Ty::Pointer(_) => "a pointer".to_string(),
                Ty::Array { .. } => "an array of scalars".to_string(),
                _ => "an unknown type".to_string(),
            };
            return Err(NotTyped::new(
                NOT_STRUCT,
                format!("{instruction}: base points to {what} ({})", p.via),
            ));
        };
        let ts = *ts as i64;
        if ts > 0 && indexed && !(0..ts).contains(&offset) {
            // Pointer arithmetic over an array of these structs: the element is unknown.
            offset = offset.rem_euclid(ts);
        }
        if !(0..ts.max(1)).contains(&offset)
            && let Some((outer, at)) = self.only_container(key, offset)
        {
            let p = Ptr {
                ty: outer,
                offset: at + p.offset,
                indexed: p.indexed,
                via: format!(
                    "container_of: struct {name} inside struct {}, the one struct that embeds it where the offset fits ({})",
                    self.struct_name(outer).unwrap_or_default(),
                    p.via
                ),
            };
            return self.finish(p, disp, indexed, size, instruction);
        }
        if !(0..ts.max(1)).contains(&offset) {
            return Err(NotTyped::new(
                OUTSIDE,
                format!(
                    "{instruction}: byte {offset} of struct {name} ({ts} bytes; {})",
                    p.via
                ),
            ));
        }
        let member = self.leaf_at(key, offset as u64).0;
        Ok(TypedAccess {
            type_name: name.clone(),
            offset,
            member,
            indexed,
            size,
            instruction,
            via: p.via,
        })
    }

    fn type_at_aarch64(&self, pc: u64) -> Result<TypedAccess, NotTyped> {
        let Some((start, end)) = self
            .symbol_span(pc)
            .or_else(|| self.function_range(pc).map(|r| (r.lo, r.hi)))
        else {
            return Err(NotTyped::new(NO_CODE, format!("{pc:#x} is in no function")));
        };
        let Some(code) = self.code_at(start, end) else {
            return Err(NotTyped::new(NO_CODE, format!("{pc:#x}")));
        };
        let at = (pc - start) as usize;
        let from = at.saturating_sub(64) & !3;
        let Some(op) = self.isa.decode(&code[from..], at - from, pc) else {
            return Err(NotTyped::new(NOT_MEMORY, format!("{pc:#x}")));
        };
        let Some(reg) = op
            .base
            .strip_prefix('x')
            .and_then(|r| r.parse::<u16>().ok())
        else {
            return Err(NotTyped::new(UNTRACKED, op.instruction));
        };
        let range = self.function_range(pc).cloned();
        let Some(range) = range else {
            return Err(NotTyped::new(NO_DWARF, op.instruction));
        };
        let (vars, _) = self.variables(&range, false);
        let f = Function {
            start,
            instrs: Vec::new(),
            jumped_from: Vec::new(),
            frame_pointer: false,
            vars,
            params: Vec::new(),
        };
        // The register the address was made from, at the access (made just before it).
        let Some(p) = f
            .vars
            .iter()
            .filter(|v| v.reg == reg && !v.in_memory && v.lo <= pc && pc < v.hi)
            .find_map(|v| match &*self.ty(v.ty) {
                Ty::Pointer(Some(t)) => Some(Ptr {
                    ty: *t,
                    offset: -v.addend,
                    indexed: false,
                    via: format!("variable `{}` in x{reg}", v.name),
                }),
                _ => None,
            })
        else {
            return Err(NotTyped::new(
                UNTRACKED,
                format!("{}: no variable in x{reg} there", op.instruction),
            ));
        };
        let _ = f.start;
        self.finish(
            p,
            op.displacement,
            !op.index.is_empty(),
            op.size,
            op.instruction,
        )
    }

    // -----------------------------------------------------------------------------------------
    // The backward walk

    /// What `loc` holds just before instruction `idx` of `f` runs.
    fn before(&self, f: &Function, walk: &mut Walk, idx: usize, loc: Loc, depth: usize) -> Val {
        if let Some(v) = walk.memo.get(&(idx, loc)) {
            return v.clone().unwrap_or(Val::Pending);
        }
        walk.memo.insert((idx, loc), None);
        let mut fallback = None;
        let v = match self.before_uncached(f, walk, idx, loc, depth, &mut fallback) {
            Val::Ptr(p) => Val::Ptr(p),
            Val::Stack => Val::Stack,
            // A variable that points to a scalar or a pointer (`GCObject **pnext`), where
            // the code does not show it to be a struct member's address: its declared type.
            other => fallback.map_or(other, Val::Ptr),
        };
        walk.memo.insert((idx, loc), Some(v.clone()));
        v
    }

    fn before_uncached(
        &self,
        f: &Function,
        walk: &mut Walk,
        mut idx: usize,
        mut loc: Loc,
        depth: usize,
        fallback: &mut Option<Ptr>,
    ) -> Val {
        let mut seen: HashSet<(usize, Loc)> = HashSet::new();
        loop {
            if walk.steps >= STEP_BUDGET {
                return Val::Unknown("search budget spent".into());
            }
            walk.steps += 1;
            if let Some(p) = self.variable_at(f, f.instrs[idx].ip(), loc) {
                if self.holds_structs(p.ty) {
                    return Val::Ptr(p);
                }
                // A pointer to a scalar or a pointer may hold a struct member's address
                // (`GCObject **p = &g->allgc`): the code that made it says which.
                fallback.get_or_insert(p);
            }
            if !seen.insert((idx, loc)) {
                return Val::Pending;
            }
            let preds = predecessors(f, idx);
            if preds.is_empty() {
                return if idx == 0 {
                    self.at_entry(f, loc)
                } else if matches!(f.instrs[idx].mnemonic(), Mnemonic::Nop | Mnemonic::Int3) {
                    // Alignment padding after a jump (`jmp L; nop dword [rax]; L2:`): no
                    // control reaches it, so the path through it says nothing.
                    Val::Pending
                } else {
                    Val::Unknown("code reached only by an indirect jump".into())
                };
            }
            if preds.len() == 1 {
                if let Some(p) = self.copy_of(f, preds[0], loc) {
                    return Val::Ptr(p);
                }
                match self.effect(f, walk, preds[0], loc, depth) {
                    Effect::Through(l) => {
                        idx = preds[0];
                        loc = l;
                        continue;
                    }
                    Effect::Value(v) => return v,
                }
            }
            if depth >= MAX_MERGE_DEPTH {
                return Val::Unknown("too many paths".into());
            }
            let vals: Vec<Val> = preds
                .iter()
                .map(|&p| {
                    if let Some(q) = self.copy_of(f, p, loc) {
                        return Val::Ptr(q);
                    }
                    match self.effect(f, walk, p, loc, depth + 1) {
                        Effect::Through(l) => self.before(f, walk, p, l, depth + 1),
                        Effect::Value(v) => v,
                    }
                })
                .collect();
            return self.merge(vals);
        }
    }

    /// When instruction `p` copies `loc` into another register (`mov r15, rdi`) that a
    /// variable's location names just after it, that variable's struct pointer: the two hold
    /// one value there (`void *thr_ptr` in rdi copied to `worker_thread *thr` in r15).
    fn copy_of(&self, f: &Function, p: usize, loc: Loc) -> Option<Ptr> {
        let Loc::Reg(r) = loc else {
            return None;
        };
        let ins = &f.instrs[p];
        if ins.mnemonic() != Mnemonic::Mov
            || ins.op0_kind() != OpKind::Register
            || ins.op1_kind() != OpKind::Register
            || ins.op1_register() != r
        {
            return None;
        }
        let dest = ins.op0_register();
        if dest == r || dest.full_register() != dest {
            return None;
        }
        let q = self.variable_at(f, ins.next_ip(), Loc::Reg(dest))?;
        self.holds_structs(q.ty).then_some(q)
    }

    /// Whether byte `offset` of struct `header` and of struct `object` is one member of a
    /// common initial sequence of the two (C11 6.5.2.3: a header struct read through a
    /// pointer to it, `GCObject *o; o->marked`, when the object is a `lua_State` that begins
    /// with the same members): every member of `header` up to the one holding the byte is,
    /// in order, a member of `object` with the same name, offset and type. Unions (members
    /// all at offset 0) are not sequences.
    pub fn in_common_initial_sequence(&self, header: &str, object: &str, offset: u64) -> bool {
        let (Some(&a), Some(&b)) = (self.definitions.get(header), self.definitions.get(object))
        else {
            return false;
        };
        let (ta, tb) = (self.ty(a), self.ty(b));
        let (Ty::Struct { fields: fa, .. }, Ty::Struct { fields: fb, .. }) = (&*ta, &*tb) else {
            return false;
        };
        let is_union = |f: &[Field]| f.len() > 1 && f.iter().all(|x| x.offset == 0);
        if is_union(fa) || is_union(fb) {
            return false;
        }
        for (x, y) in fa.iter().zip(fb.iter()) {
            if x.name != y.name
                || x.offset != y.offset
                || self.type_text(x.ty) != self.type_text(y.ty)
                || self.size_of(x.ty) != self.size_of(y.ty)
            {
                return false;
            }
            if x.offset <= offset && offset < x.offset + self.size_of(x.ty).max(1) {
                return true;
            }
        }
        false
    }

    /// A type's spelling for comparing members: `struct GCObject *`, `unsigned char`.
    fn type_text(&self, key: TypeKey) -> String {
        match &*self.ty(key) {
            Ty::Pointer(Some(t)) => format!("{} *", self.describe(*t)),
            Ty::Pointer(None) => "void *".into(),
            Ty::Array { elem, count } => format!("{}[{count}]", self.describe(*elem)),
            _ => self.describe(key),
        }
    }

    /// One value from the paths that meet: the type they agree on.
    fn merge(&self, vals: Vec<Val>) -> Val {
        let mut found: Option<Ptr> = None;
        let mut stack = false;
        let mut unknown: Option<String> = None;
        // Integers the paths give: the constant when they agree.
        let mut ints: Option<Option<i64>> = None;
        for v in vals {
            match v {
                Val::Ptr(p) => match &mut found {
                    None => found = Some(p),
                    Some(f) if f.ty == p.ty || self.same_struct(f.ty, p.ty) => {
                        if f.offset != p.offset {
                            // Elements of one array (of the struct, or in it): the member is
                            // known, the element is not.
                            let size = self.size_of(f.ty) as i64;
                            let same_element =
                                size > 0 && (f.offset - p.offset).rem_euclid(size) == 0;
                            let same_array = f.offset >= 0
                                && p.offset >= 0
                                && without_indices(&self.leaf_at(f.ty, f.offset as u64).0)
                                    == without_indices(&self.leaf_at(p.ty, p.offset as u64).0)
                                && self.leaf_at(f.ty, f.offset as u64).0.contains('[');
                            if !same_element && !same_array {
                                return Val::Unknown("paths give different offsets".into());
                            }
                            f.offset = f.offset.min(p.offset);
                            f.indexed = true;
                        }
                        f.indexed |= p.indexed;
                    }
                    Some(f) => {
                        return Val::Unknown(format!(
                            "paths disagree ({} and {})",
                            self.describe(f.ty),
                            self.describe(p.ty)
                        ));
                    }
                },
                Val::Stack => stack = true,
                Val::Unknown(w) => {
                    unknown.get_or_insert(w);
                }
                Val::Int(c) => {
                    ints = Some(match ints {
                        None => Some(c),
                        Some(prev) => prev.filter(|p| *p == c),
                    });
                }
                Val::Pending => {}
            }
        }
        match (found, stack) {
            (Some(_), true) => Val::Unknown("a path gives a stack address".into()),
            (Some(p), false) => Val::Ptr(p),
            (None, true) => Val::Stack,
            (None, false) => match (unknown, ints) {
                (None, Some(Some(c))) => Val::Int(c),
                (None, Some(None)) => Val::Unknown(DIFFERENT_INTEGERS.into()),
                (u, _) => u.map_or(Val::Pending, Val::Unknown),
            },
        }
    }

    fn same_struct(&self, a: TypeKey, b: TypeKey) -> bool {
        match (self.struct_name(a), self.struct_name(b)) {
            (Some(x), Some(y)) => x == y && self.size_of(a) == self.size_of(b),
            _ => false,
        }
    }

    fn describe(&self, key: TypeKey) -> String {
        match &*self.ty(key) {
            Ty::Struct { name, .. } => format!("struct {name}"),
            Ty::Scalar { name, .. } => name.clone(),
            Ty::Pointer(_) => "a pointer".into(),
            Ty::Array { .. } => "an array".into(),
            Ty::Unknown => "?".into(),
        }
    }

    /// A register at the function's entry: the parameter the ABI passes in it.
    fn at_entry(&self, f: &Function, loc: Loc) -> Val {
        let Loc::Reg(r) = loc else {
            return Val::Unknown("the caller's stack".into());
        };
        let Some(n) = ARG_REGS.iter().position(|a| *a == r) else {
            return Val::Unknown(format!("{} at the function's entry", reg_name(r)));
        };
        if f.params.len() <= n {
            return Val::Unknown(format!("{} at entry: no such parameter", reg_name(r)));
        }
        // Each parameter before it must take one integer register.
        for &p in &f.params[..n] {
            match &*self.ty(p) {
                Ty::Pointer(_) => {}
                Ty::Scalar { name, size }
                    if *size <= 8 && !name.contains("float") && !name.contains("double") => {}
                _ => return Val::Unknown("parameters not all in integer registers".into()),
            }
        }
        match &*self.ty(f.params[n]) {
            Ty::Pointer(Some(t)) if !self.holds_structs(*t) => {
                // A pointer to a scalar or a pointer (`size_t *out_pos`): what every caller
                // passes, when they all pass the same struct member.
                let declared = Ptr {
                    ty: *t,
                    offset: 0,
                    indexed: false,
                    via: format!("parameter {} ({}) at entry", n + 1, reg_name(r)),
                };
                Val::Ptr(self.passed_by_callers(f.start, r).unwrap_or(declared))
            }
            Ty::Pointer(Some(t)) => Val::Ptr(Ptr {
                ty: *t,
                offset: 0,
                indexed: false,
                via: format!("parameter {} ({}) at entry", n + 1, reg_name(r)),
            }),
            _ => Val::Unknown(format!("parameter {} is not a typed pointer", n + 1)),
        }
    }

    /// The argument every direct call to the function at `entry` passes in register `r`,
    /// when there are calls and each passes a pointer into a struct, the same struct and
    /// offset (`&coder->outq.read_pos` for a `size_t *out_pos`); one level of callers.
    fn passed_by_callers(&self, entry: u64, r: Register) -> Option<Ptr> {
        if self.caller_depth.get() >= 1 {
            return None;
        }
        let callers = self.callers_index();
        let sites = callers.get(&entry)?;
        if sites.is_empty() || sites.len() > 64 {
            return None;
        }
        self.caller_depth.set(self.caller_depth.get() + 1);
        let mut found: Option<Ptr> = None;
        let mut ok = true;
        for &pc in sites {
            let g = self.function(pc);
            let val = g.as_ref().and_then(|g| {
                let idx = g.index_of(pc)?;
                let mut walk = Walk::default();
                Some(self.before(g, &mut walk, idx, Loc::Reg(r), 0))
            });
            match val {
                Some(Val::Ptr(p)) if self.holds_structs(p.ty) => match &found {
                    None => found = Some(p),
                    Some(q) if self.same_struct(q.ty, p.ty) && q.offset == p.offset => {}
                    Some(_) => ok = false,
                },
                _ => ok = false,
            }
            if !ok {
                break;
            }
        }
        self.caller_depth.set(self.caller_depth.get() - 1);
        let p = found.filter(|_| ok)?;
        Some(Ptr {
            via: format!(
                "passed in {} by every caller ({} calls; {})",
                reg_name(r),
                sites.len(),
                p.via
            ),
            ..p
        })
    }

    /// Direct calls (`call rel32`, and `jmp rel32` out of the function: a tail call) in the
    /// image's code, by target.
    fn callers_index(&self) -> Rc<HashMap<u64, Vec<u64>>> {
        if let Some(c) = self.callers.borrow().as_ref() {
            return c.clone();
        }
        let mut map: HashMap<u64, Vec<u64>> = HashMap::new();
        if self.isa == Isa::X86_64 {
            for &(start, size, _) in &self.symbols {
                let Some(bytes) = self.code_at(start, start + size) else {
                    continue;
                };
                let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
                while decoder.can_decode() {
                    let ins = decoder.decode();
                    // Calls, and tail calls: jumps out of the function.
                    let tail = ins.flow_control() == FlowControl::UnconditionalBranch
                        && !(start..start + size).contains(&ins.near_branch_target());
                    if ins.flow_control() == FlowControl::Call || tail {
                        map.entry(ins.near_branch_target())
                            .or_default()
                            .push(ins.ip());
                    }
                }
            }
        }
        let map = Rc::new(map);
        *self.callers.borrow_mut() = Some(map.clone());
        map
    }

    /// What instruction `p` does to `loc`: passes it through (maybe as another place), or
    /// gives its value.
    fn effect(&self, f: &Function, walk: &mut Walk, p: usize, loc: Loc, depth: usize) -> Effect {
        let ins = &f.instrs[p];
        match loc {
            Loc::Reg(r) => self.register_effect(f, walk, p, ins, r, depth),
            Loc::Slot(base, d) => slot_effect(ins, base, d),
        }
    }

    fn register_effect(
        &self,
        f: &Function,
        walk: &mut Walk,
        p: usize,
        ins: &Instruction,
        r: Register,
        depth: usize,
    ) -> Effect {
        if matches!(
            ins.flow_control(),
            FlowControl::Call | FlowControl::IndirectCall
        ) {
            if r == Register::RAX {
                return Effect::Value(self.returned(ins));
            }
            if CALLER_SAVED.contains(&r) {
                return Effect::Value(Val::Unknown("changed by a call".into()));
            }
            return Effect::Through(Loc::Reg(r));
        }
        if !writes_register(ins, r) {
            return Effect::Through(Loc::Reg(r));
        }
        let text = || show(ins);
        // A constant: `mov eax, 0x118` (a 32-bit write clears the upper half), `xor eax, eax`.
        if ins.op_count() >= 1
            && ins.op0_kind() == OpKind::Register
            && ins.op0_register().full_register() == r
            && (ins.op0_register() == r || ins.op0_register().is_gpr32())
        {
            if ins.mnemonic() == Mnemonic::Mov
                && matches!(
                    ins.op1_kind(),
                    OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                )
            {
                return Effect::Value(Val::Int(ins.immediate(1) as i64));
            }
            if ins.mnemonic() == Mnemonic::Xor
                && ins.op1_kind() == OpKind::Register
                && ins.op1_register() == ins.op0_register()
            {
                return Effect::Value(Val::Int(0));
            }
        }
        let full_dest =
            ins.op_count() >= 1 && ins.op0_kind() == OpKind::Register && ins.op0_register() == r;
        if !full_dest {
            return Effect::Value(Val::Unknown(format!("made by `{}`", text())));
        }
        match ins.mnemonic() {
            Mnemonic::Mov if ins.op1_kind() == OpKind::Register => {
                let s = ins.op1_register();
                if s == Register::RSP {
                    return Effect::Value(Val::Stack);
                }
                if s.full_register() == s {
                    return Effect::Through(Loc::Reg(s));
                }
                Effect::Value(Val::Unknown(format!("made by `{}`", text())))
            }
            Mnemonic::Mov if ins.op1_kind() == OpKind::Memory => {
                Effect::Value(self.load(f, walk, p, ins, depth))
            }
            Mnemonic::Lea => Effect::Value(self.address_of(f, walk, p, ins, depth)),
            Mnemonic::Add | Mnemonic::Sub
                if matches!(
                    ins.op1_kind(),
                    OpKind::Immediate8to64 | OpKind::Immediate32to64 | OpKind::Immediate32
                ) =>
            {
                let imm = ins.immediate(1) as i64;
                let imm = if ins.mnemonic() == Mnemonic::Sub {
                    -imm
                } else {
                    imm
                };
                Effect::Value(match self.before(f, walk, p, Loc::Reg(r), depth + 1) {
                    Val::Ptr(mut q) => {
                        q.offset += imm;
                        Val::Ptr(q)
                    }
                    Val::Int(c) => Val::Int(c + imm),
                    other => other,
                })
            }
            Mnemonic::Add if ins.op1_kind() == OpKind::Register => {
                // A pointer plus a scaled index (or an index plus a pointer).
                let s = ins.op1_register().full_register();
                let a = self.before(f, walk, p, Loc::Reg(r), depth + 1);
                let b = self.before(f, walk, p, Loc::Reg(s), depth + 1);
                Effect::Value(match (a, b) {
                    // Not one of several known constants: those are different members.
                    (Val::Ptr(mut q), Val::Unknown(w)) | (Val::Unknown(w), Val::Ptr(mut q))
                        if w != DIFFERENT_INTEGERS =>
                    {
                        q.indexed = true;
                        Val::Ptr(q)
                    }
                    // The index's constant part (`lea rdi, [r14*4+0x30]; add rdi, rbp`) is a
                    // byte offset from the pointer.
                    (Val::Ptr(mut q), Val::Int(c)) | (Val::Int(c), Val::Ptr(mut q)) => {
                        q.offset += c;
                        q.indexed = true;
                        Val::Ptr(q)
                    }
                    _ => Val::Unknown(format!("made by `{}`", text())),
                })
            }
            m if format!("{m:?}").starts_with("Cmov") && ins.op1_kind() == OpKind::Register => {
                let s = ins.op1_register();
                if s.full_register() != s {
                    return Effect::Value(Val::Unknown(format!("made by `{}`", text())));
                }
                let a = self.before(f, walk, p, Loc::Reg(r), depth + 1);
                let b = self.before(f, walk, p, Loc::Reg(s), depth + 1);
                Effect::Value(self.merge(vec![a, b]))
            }
            _ => Effect::Value(Val::Unknown(format!("made by `{}`", text()))),
        }
    }

    /// A pointer loaded by `mov r, [mem]`: a spilled register, a global pointer, or a pointer
    /// member of a typed struct.
    fn load(
        &self,
        f: &Function,
        walk: &mut Walk,
        p: usize,
        ins: &Instruction,
        depth: usize,
    ) -> Val {
        if ins.memory_size().size() != 8 {
            return Val::Unknown(format!("made by `{}`", show(ins)));
        }
        let base = ins.memory_base();
        let disp = ins.memory_displacement64() as i64;
        let indexed = ins.memory_index() != Register::None;
        if base == Register::RIP {
            let address = ins.ip_rel_memory_address();
            let Some(g) = self.global_at(address) else {
                return Val::Unknown(format!("loaded from {address:#x}, no variable"));
            };
            let off = address - g.address;
            return self.pointer_member(g.ty, off, false, &format!("global `{}`", g.name));
        }
        if (base == Register::RSP || (base == Register::RBP && f.frame_pointer)) && !indexed {
            return self.before(f, walk, p, Loc::Slot(base, disp), depth + 1);
        }
        if base == Register::None {
            return Val::Unknown(format!("made by `{}`", show(ins)));
        }
        match self.before(f, walk, p, Loc::Reg(base.full_register()), depth + 1) {
            Val::Ptr(q) => {
                let off = q.offset + disp;
                if off < 0 {
                    return Val::Unknown(format!("loaded from before a {}", self.describe(q.ty)));
                }
                self.pointer_member(q.ty, off as u64, indexed || q.indexed, &q.via)
            }
            Val::Stack => Val::Unknown("loaded from a stack address".into()),
            Val::Int(_) => Val::Unknown("loaded from an integer address".into()),
            other => other,
        }
    }

    /// The pointer stored at byte `off` of type `key` (its member, or an array element).
    fn pointer_member(&self, key: TypeKey, off: u64, indexed: bool, via: &str) -> Val {
        let (mut path, mut leaf, start) = self.leaf_at(key, off);
        if start != off && !indexed {
            return Val::Unknown(format!("loaded from inside {}", self.describe(key)));
        }
        // `p->ptrs[i]`: an indexed load of an element of an array of pointers.
        if let Ty::Array { elem, .. } = &*self.ty(leaf) {
            leaf = *elem;
            path.push_str("[i]");
        }
        match &*self.ty(leaf) {
            Ty::Pointer(Some(t)) => Val::Ptr(Ptr {
                ty: *t,
                offset: 0,
                indexed: false,
                via: format!(
                    "loaded from {}{}{path} ({via})",
                    self.describe(key),
                    if path.is_empty() { "" } else { "." }
                ),
            }),
            _ => Val::Unknown(format!(
                "loaded from {}{}{path}, not a typed pointer",
                self.describe(key),
                if path.is_empty() { "" } else { "." }
            )),
        }
    }

    /// The address `lea r, [mem]` makes.
    fn address_of(
        &self,
        f: &Function,
        walk: &mut Walk,
        p: usize,
        ins: &Instruction,
        depth: usize,
    ) -> Val {
        let base = ins.memory_base();
        let disp = ins.memory_displacement64() as i64;
        let indexed = ins.memory_index() != Register::None;
        if base == Register::RIP {
            let address = ins.ip_rel_memory_address();
            return match self.global_at(address) {
                Some(g) => Val::Ptr(Ptr {
                    ty: g.ty,
                    offset: (address - g.address) as i64,
                    indexed,
                    via: format!("address of global `{}`", g.name),
                }),
                None => Val::Unknown(format!("address {address:#x} of no variable")),
            };
        }
        if base == Register::RSP || (base == Register::RBP && f.frame_pointer) {
            return Val::Stack;
        }
        if base == Register::None {
            // `lea rdi, [r14*4+0x30]`: a scaled index and a constant.
            return if indexed {
                Val::Int(disp)
            } else {
                Val::Unknown(format!("made by `{}`", show(ins)))
            };
        }
        match self.before(f, walk, p, Loc::Reg(base.full_register()), depth + 1) {
            Val::Ptr(mut q) => {
                q.offset += disp;
                q.indexed |= indexed;
                Val::Ptr(q)
            }
            Val::Int(c) if !indexed => Val::Int(c + disp),
            Val::Int(c) if ins.memory_index_scale() == 1 => {
                // `lea rax, [rcx+rdx*1+8]` with the pointer in the index.
                let index = ins.memory_index().full_register();
                match self.before(f, walk, p, Loc::Reg(index), depth + 1) {
                    Val::Ptr(mut q) => {
                        q.offset += c + disp;
                        q.indexed = true;
                        Val::Ptr(q)
                    }
                    _ => Val::Int(c + disp),
                }
            }
            Val::Int(c) => Val::Int(c + disp),
            // `lea r12, [r14+r13*1]` with an index of unknown value in the base (a loop's
            // byte counter) and the pointer in the index.
            Val::Unknown(w)
                if indexed && ins.memory_index_scale() == 1 && w != DIFFERENT_INTEGERS =>
            {
                let index = ins.memory_index().full_register();
                match self.before(f, walk, p, Loc::Reg(index), depth + 1) {
                    Val::Ptr(mut q) => {
                        q.offset += disp;
                        q.indexed = true;
                        Val::Ptr(q)
                    }
                    _ => Val::Unknown(w),
                }
            }
            other => other,
        }
    }

    /// The pointer a call returns: its callee's DWARF return type.
    fn returned(&self, ins: &Instruction) -> Val {
        if ins.flow_control() != FlowControl::Call {
            return Val::Unknown("returned by an indirect call".into());
        }
        let target = ins.near_branch_target();
        let name = self.symbol_at(target).unwrap_or("?");
        match self.returns.get(&target).map(|t| self.ty(*t)) {
            Some(t) => match &*t {
                Ty::Pointer(Some(to)) => Val::Ptr(Ptr {
                    ty: *to,
                    offset: 0,
                    indexed: false,
                    via: format!("returned by {name}"),
                }),
                _ => Val::Unknown(format!("returned by {name}, not a typed pointer")),
            },
            None => Val::Unknown(format!("returned by {name} (no DWARF)")),
        }
    }
}

/// The address register `r` holds at instruction `idx`, when the function makes it one way:
/// the nearest write before it (straight-line, within 32 instructions) or, else, every write
/// of it in the function (a prologue's `pop` aside) is `lea r, [rip+T]` with one `T`.
fn constant_address(instrs: &[Instruction], idx: usize, r: Register) -> Option<u64> {
    let lea_rip = |x: &Instruction| {
        (x.mnemonic() == Mnemonic::Lea
            && x.op0_register() == r
            && x.memory_base() == Register::RIP
            && x.memory_index() == Register::None)
            .then(|| x.ip_rel_memory_address())
    };
    for k in (idx.saturating_sub(32)..idx).rev() {
        let x = &instrs[k];
        if !matches!(
            x.flow_control(),
            FlowControl::Next | FlowControl::ConditionalBranch
        ) {
            break;
        }
        if writes_register(x, r) {
            if let Some(t) = lea_rip(x) {
                return Some(t);
            }
            break;
        }
    }
    let mut found = None;
    for x in instrs {
        if x.mnemonic() == Mnemonic::Pop || !writes_register(x, r) {
            continue;
        }
        let t = lea_rip(x)?;
        if found.is_some_and(|f| f != t) {
            return None;
        }
        found = Some(t);
    }
    found
}

/// The address register `r` holds before instruction `idx`, when every path that reaches it
/// (fall-through, the jumps in `jumped_from`) made it with `lea r, [rip+T]` with one `T`,
/// maybe moved through other registers on the way (`lea rdx, [rip+T]; mov rsi, rdx`): a
/// table base made before a loop, in another block, or kept in a callee-saved register
/// across calls. A path that reaches the function's entry, or another write of the
/// register, gives no answer; a path into code no known edge reaches (a handler entered
/// through the table itself) says nothing.
fn reaching_address(
    instrs: &[Instruction],
    jumped_from: &[Vec<usize>],
    idx: usize,
    r: Register,
) -> Option<u64> {
    let mut found = None;
    let mut stack = vec![(idx, r)];
    let mut seen: HashSet<(usize, Register)> = HashSet::new();
    while let Some((i, reg)) = stack.pop() {
        if seen.len() > 50_000 {
            return None;
        }
        let preds = preds_of(instrs, jumped_from, i);
        if preds.is_empty() {
            if i != 0 {
                // Reached by an indirect jump not read yet (or padding): the jumps that
                // reach it carry the register from elsewhere; the paths that are known
                // decide.
                continue;
            }
            return None;
        }
        for p in preds {
            let x = &instrs[p];
            let next = if matches!(
                x.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) {
                if reg == Register::RAX || CALLER_SAVED.contains(&reg) {
                    return None;
                }
                reg
            } else if !writes_register(x, reg) {
                reg
            } else if x.mnemonic() == Mnemonic::Lea
                && x.op0_register() == reg
                && x.memory_base() == Register::RIP
                && x.memory_index() == Register::None
            {
                let t = x.ip_rel_memory_address();
                if found.is_some_and(|f| f != t) {
                    return None;
                }
                found = Some(t);
                continue;
            } else if x.mnemonic() == Mnemonic::Mov
                && x.op0_kind() == OpKind::Register
                && x.op0_register() == reg
                && x.op1_kind() == OpKind::Register
                && x.op1_register().full_register() == x.op1_register()
            {
                x.op1_register()
            } else {
                return None;
            };
            if seen.insert((p, next)) {
                stack.push((p, next));
            }
        }
    }
    found
}

/// The constant register `r` holds before instruction `idx`, when the code just before it (on
/// the one path falling through to it, within 32 instructions) sets it: `mov edx, 0x58`.
fn constant_before(f: &Function, idx: usize, r: Register) -> Option<u64> {
    let mut i = idx;
    for _ in 0..32 {
        if !f.jumped_from[i].is_empty() || i == 0 {
            return None;
        }
        i -= 1;
        let ins = &f.instrs[i];
        if matches!(
            ins.flow_control(),
            FlowControl::Call
                | FlowControl::IndirectCall
                | FlowControl::UnconditionalBranch
                | FlowControl::IndirectBranch
                | FlowControl::Return
        ) {
            return None;
        }
        if !writes_register(ins, r) {
            continue;
        }
        let dest = ins.op0_register();
        let full = ins.op0_kind() == OpKind::Register
            && dest.full_register() == r
            && (dest == r || dest.is_gpr32());
        if full
            && ins.mnemonic() == Mnemonic::Mov
            && matches!(
                ins.op1_kind(),
                OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
            )
        {
            return Some(ins.immediate(1));
        }
        return None;
    }
    None
}

/// The argument registers a C library function accesses memory through, for the functions
/// the recording runtime counts at their call: the string and memory functions, and the
/// pthread and semaphore objects.
fn pointer_arguments(name: &str) -> Option<&'static [Register]> {
    const BOTH: &[Register] = &[Register::RDI, Register::RSI];
    const FIRST: &[Register] = &[Register::RDI];
    match name {
        "memcpy" | "memmove" | "mempcpy" | "__memcpy_chk" | "__memmove_chk" => Some(BOTH),
        "memset" | "__memset_chk" | "bzero" | "explicit_bzero" => Some(FIRST),
        n if n.starts_with("pthread_mutex_")
            || n.starts_with("pthread_spin_")
            || n.starts_with("pthread_rwlock_")
            || n.starts_with("pthread_barrier_")
            || n.starts_with("sem_") =>
        {
            Some(FIRST)
        }
        _ => None,
    }
}

/// `mov rax, [rbx+0x18]`: the instruction as the answers show it.
fn show(ins: &Instruction) -> String {
    let ops: Vec<String> = (0..ins.op_count())
        .map(|i| match ins.op_kind(i) {
            OpKind::Register => reg_name(ins.op_register(i)),
            OpKind::Memory => {
                let mut m = String::from("[");
                if ins.memory_base() != Register::None {
                    m.push_str(&reg_name(ins.memory_base()));
                }
                if ins.memory_index() != Register::None {
                    m.push_str(&format!(
                        "{}{}*{}",
                        if m.len() > 1 { "+" } else { "" },
                        reg_name(ins.memory_index()),
                        ins.memory_index_scale()
                    ));
                }
                let d = if ins.memory_base() == Register::RIP {
                    ins.ip_rel_memory_address() as i64
                } else {
                    ins.memory_displacement64() as i64
                };
                if ins.memory_base() == Register::RIP {
                    m = format!("[{d:#x}");
                } else if d != 0 || m.len() == 1 {
                    m.push_str(&format!(
                        "{}{:#x}",
                        if d < 0 { "-" } else { "+" },
                        d.unsigned_abs()
                    ));
                }
                m.push(']');
                m
            }
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                format!("{:#x}", ins.near_branch_target())
            }
            _ => ins
                .try_immediate(i)
                .map_or_else(|_| "?".to_string(), |v| format!("{v:#x}")),
        })
        .collect();
    let m = format!("{:?}", ins.mnemonic()).to_lowercase();
    if ops.is_empty() {
        m
    } else {
        format!("{m} {}", ops.join(", "))
    }
}

fn loc_reg(loc: Loc) -> Register {
    match loc {
        Loc::Reg(r) | Loc::Slot(r, _) => r,
    }
}

#[derive(Default)]
struct Walk {
    steps: usize,
    /// Values found (or being found: `None`) per place.
    memo: HashMap<(usize, Loc), Option<Val>>,
}

enum Effect {
    /// The instruction leaves the value where it was, or moved it from this place.
    Through(Loc),
    Value(Val),
}

/// The instructions control reaches `idx` from: the one before it (unless that one jumps
/// away or returns) and the jumps to it.
fn predecessors(f: &Function, idx: usize) -> Vec<usize> {
    preds_of(&f.instrs, &f.jumped_from, idx)
}

fn preds_of(instrs: &[Instruction], jumped_from: &[Vec<usize>], idx: usize) -> Vec<usize> {
    let mut out = Vec::new();
    if idx > 0 {
        let prev = &instrs[idx - 1];
        let falls = !matches!(
            prev.flow_control(),
            FlowControl::UnconditionalBranch
                | FlowControl::IndirectBranch
                | FlowControl::Return
                | FlowControl::Exception
                | FlowControl::Interrupt
        ) && prev.mnemonic() != Mnemonic::Ud2;
        if falls {
            out.push(idx - 1);
        }
    }
    out.extend(jumped_from[idx].iter().copied());
    out
}

/// Whether `ins` writes (any part of) 64-bit register `r`.
fn writes_register(ins: &Instruction, r: Register) -> bool {
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(ins);
    info.used_registers().iter().any(|u| {
        u.register().full_register() == r
            && matches!(
                u.access(),
                OpAccess::Write
                    | OpAccess::ReadWrite
                    | OpAccess::CondWrite
                    | OpAccess::ReadCondWrite
            )
    })
}

/// What instruction `ins` does to the stack slot `[base + d]` (as it is after `ins`).
fn slot_effect(ins: &Instruction, base: Register, d: i64) -> Effect {
    let unknown = |why: String| Effect::Value(Val::Unknown(why));
    if matches!(
        ins.flow_control(),
        FlowControl::Call | FlowControl::IndirectCall
    ) {
        return Effect::Through(Loc::Slot(base, d));
    }
    if writes_register(ins, base) {
        if base != Register::RSP {
            return unknown(format!("frame pointer changed by `{}`", show(ins)));
        }
        // Follow the slot across pushes, pops and constant adjustments of rsp.
        return match ins.mnemonic() {
            Mnemonic::Push => {
                if d == 0 && ins.op0_kind() == OpKind::Register {
                    Effect::Through(Loc::Reg(ins.op0_register().full_register()))
                } else {
                    Effect::Through(Loc::Slot(base, d - 8))
                }
            }
            Mnemonic::Pop => Effect::Through(Loc::Slot(base, d + 8)),
            Mnemonic::Sub | Mnemonic::Add
                if ins.op0_register() == Register::RSP
                    && matches!(
                        ins.op1_kind(),
                        OpKind::Immediate8to64 | OpKind::Immediate32to64
                    ) =>
            {
                let imm = ins.immediate(1) as i64;
                Effect::Through(Loc::Slot(
                    base,
                    if ins.mnemonic() == Mnemonic::Sub {
                        d - imm
                    } else {
                        d + imm
                    },
                ))
            }
            _ => unknown(format!("stack pointer changed by `{}`", show(ins))),
        };
    }
    let writes_memory = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory)
        && ins.memory_base() == base
        && ins.memory_index() == Register::None
        && {
            let mut factory = InstructionInfoFactory::new();
            factory.info(ins).used_memory().iter().any(|m| {
                matches!(
                    m.access(),
                    OpAccess::Write
                        | OpAccess::ReadWrite
                        | OpAccess::CondWrite
                        | OpAccess::ReadCondWrite
                )
            })
        };
    if !writes_memory {
        return Effect::Through(Loc::Slot(base, d));
    }
    let at = ins.memory_displacement64() as i64;
    let size = ins.memory_size().size() as i64;
    if at + size <= d || d + 8 <= at {
        return Effect::Through(Loc::Slot(base, d));
    }
    if ins.mnemonic() == Mnemonic::Mov && at == d && size == 8 && ins.op1_kind() == OpKind::Register
    {
        return Effect::Through(Loc::Reg(ins.op1_register()));
    }
    unknown(format!("slot written by `{}`", show(ins)))
}

// ---------------------------------------------------------------------------------------------
// DWARF expressions, by gimli's evaluator

/// The static address a variable's location expression gives (`DW_OP_addr`), if that is all
/// it is.
fn static_address<'a>(
    dwarf: &gimli::Dwarf<Slice<'a>>,
    unit: &gimli::Unit<Slice<'a>>,
    expr: gimli::Expression<Slice<'a>>,
) -> Option<u64> {
    let mut eval = expr.evaluation(unit.encoding());
    let mut state = eval.evaluate().ok()?;
    loop {
        match state {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresRelocatedAddress(a) => {
                state = eval.resume_with_relocated_address(a).ok()?;
            }
            // DWARF 5's DW_OP_addrx: the address is in .debug_addr.
            gimli::EvaluationResult::RequiresIndexedAddress { index, .. } => {
                let a = dwarf.address(unit, index).ok()?;
                state = eval.resume_with_indexed_address(a).ok()?;
            }
            _ => return None,
        }
    }
    let pieces = eval.result();
    match pieces.as_slice() {
        [
            gimli::Piece {
                location: gimli::Location::Address { address },
                ..
            },
        ] if *address != 0 => Some(*address),
        _ => None,
    }
}

/// A member offset written as an expression (`DW_OP_plus_uconst`, DWARF 2).
fn static_offset(expr: gimli::Expression<Slice<'_>>, encoding: gimli::Encoding) -> Option<u64> {
    let mut eval = expr.evaluation(encoding);
    eval.set_initial_value(0);
    let state = eval.evaluate().ok()?;
    if state != gimli::EvaluationResult::Complete {
        return None;
    }
    match eval.result().as_slice() {
        [
            gimli::Piece {
                location: gimli::Location::Address { address },
                ..
            },
        ] => Some(*address),
        _ => None,
    }
}

/// The register a function's `DW_AT_frame_base` names (`DW_OP_reg6`: rbp), or the CFA
/// (register `u16::MAX`).
fn frame_base_register(
    expr: gimli::Expression<Slice<'_>>,
    encoding: gimli::Encoding,
) -> Option<u16> {
    let mut eval = expr.evaluation(encoding);
    let state = eval.evaluate().ok()?;
    match state {
        gimli::EvaluationResult::Complete => match eval.result().as_slice() {
            [
                gimli::Piece {
                    location: gimli::Location::Register { register },
                    ..
                },
            ] => Some(register.0),
            _ => None,
        },
        gimli::EvaluationResult::RequiresCallFrameCfa => Some(u16::MAX),
        _ => None,
    }
}

/// A variable's location as (DWARF register, addend, in memory): the variable is
/// `register + addend`, or is stored at `[register + addend]`. Evaluated by gimli with a
/// symbolic register value; `frame_base` is the function's frame base register (the CFA as
/// `u16::MAX`, taken as rbp+16 where the function keeps a frame pointer).
fn register_location(
    expr: gimli::Expression<Slice<'_>>,
    encoding: gimli::Encoding,
    frame_base: Option<u16>,
    frame_pointer: bool,
) -> Option<(u16, i64, bool)> {
    let mut eval = expr.evaluation(encoding);
    eval.set_max_iterations(64);
    let mut state = eval.evaluate().ok()?;
    let mut used: Option<(u16, i64)> = None;
    loop {
        match state {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresRegister { register, .. } => {
                if used.is_some() {
                    return None;
                }
                used = Some((register.0, 0));
                state = eval
                    .resume_with_register(gimli::Value::Generic(SENTINEL))
                    .ok()?;
            }
            gimli::EvaluationResult::RequiresFrameBase => {
                let reg = frame_base?;
                if used.is_some() {
                    return None;
                }
                if reg == u16::MAX {
                    if !frame_pointer {
                        return None;
                    }
                    // The CFA is rbp+16 once `push rbp; mov rbp, rsp` ran.
                    used = Some((6, 16));
                } else {
                    used = Some((reg, 0));
                }
                state = eval.resume_with_frame_base(SENTINEL).ok()?;
            }
            gimli::EvaluationResult::RequiresCallFrameCfa => {
                if used.is_some() || !frame_pointer {
                    return None;
                }
                used = Some((6, 16));
                state = eval.resume_with_call_frame_cfa(SENTINEL).ok()?;
            }
            gimli::EvaluationResult::RequiresRelocatedAddress(a) => {
                state = eval.resume_with_relocated_address(a).ok()?;
            }
            _ => return None,
        }
    }
    let pieces = eval.result();
    let [piece] = pieces.as_slice() else {
        return None;
    };
    if piece.size_in_bits.is_some_and(|b| b != 64) {
        return None;
    }
    let near = |v: u64, extra: i64| -> Option<i64> {
        let d = v.wrapping_sub(SENTINEL) as i64;
        (d.abs() < 1 << 24).then_some(d + extra)
    };
    match (&piece.location, used) {
        (gimli::Location::Register { register }, None) => Some((register.0, 0, false)),
        (gimli::Location::Value { value }, Some((reg, extra))) => {
            let v = match *value {
                gimli::Value::Generic(v) | gimli::Value::U64(v) => v,
                gimli::Value::I64(v) => v as u64,
                _ => return None,
            };
            Some((reg, near(v, extra)?, false))
        }
        (gimli::Location::Address { address }, Some((reg, extra))) => {
            Some((reg, near(*address, extra)?, true))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Rows of a profile, and coverage

/// Typed accesses of evidence rows, by (line address, row index in the line).
pub type TypedRows = BTreeMap<(u64, usize), TypedAccess>;

/// What share of a profile was typed, and why the rest was not.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Coverage {
    /// Rows with a code address.
    pub rows: u64,
    pub rows_typed: u64,
    /// The rows' weight (accesses, or samples: what the profile counts).
    pub weight: f64,
    pub weight_typed: f64,
    /// Per reason left untyped: (rows, weight), and one example.
    pub untyped: BTreeMap<String, (u64, f64, String)>,
}

impl Coverage {
    pub fn add(&mut self, weight: f64, result: &Result<TypedAccess, NotTyped>) {
        self.rows += 1;
        self.weight += weight;
        match result {
            Ok(_) => {
                self.rows_typed += 1;
                self.weight_typed += weight;
            }
            Err(e) => {
                let entry =
                    self.untyped
                        .entry(e.label.to_string())
                        .or_insert((0, 0.0, e.detail.clone()));
                entry.0 += 1;
                entry.1 += weight;
            }
        }
    }

    /// `typed from the instruction: 91% of the weight (120 of 131 rows); not typed: ...`
    pub fn describe(&self) -> String {
        if self.rows == 0 {
            return "typed from the instruction: no row names code in the image".into();
        }
        let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
        let mut s = format!(
            "typed from the instruction: {:.0}% of the weight ({} of {} rows)",
            pct(self.weight_typed, self.weight),
            self.rows_typed,
            self.rows
        );
        if !self.untyped.is_empty() {
            let mut why: Vec<(&String, &(u64, f64, String))> = self.untyped.iter().collect();
            why.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
            let parts: Vec<String> = why
                .iter()
                .map(|(label, (rows, w, _))| {
                    format!("{label} {:.0}% ({rows} rows)", pct(*w, self.weight))
                })
                .collect();
            s.push_str(&format!("; not typed: {}", parts.join(", ")));
        }
        s
    }
}

/// The image address of a row's instruction: `symbol+offset` through the image's symbols,
/// else the raw address (a linked image whose addresses the profile kept).
fn row_address(typer: &Typer<'_>, code: &crate::profile::CodeLocation) -> Option<u64> {
    if let (Some(sym), Some(off)) = (&code.symbol, code.symbol_offset) {
        let name = sym.split('+').next().unwrap_or(sym);
        if let Some(a) = typer.symbol_address(name) {
            return Some(a + off);
        }
    }
    code.address
}

/// Whether a row's code lives in the image: rows of other objects (libc, the kernel) are
/// not the image's to type.
fn row_in_image(image: &str, code: &crate::profile::CodeLocation) -> bool {
    match &code.object {
        None => true,
        Some(o) => {
            let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
            base(o) == base(image) || o.starts_with("[kernel") && image.contains("vmlinux")
        }
    }
}

/// Types every row of `profile`'s raw lines whose code is in `typer`'s image (`image` is
/// its file name), and says what share was typed.
pub fn type_rows(
    typer: &Typer<'_>,
    image: &str,
    profile: &crate::profile::Profile,
) -> (TypedRows, Coverage) {
    let mut out = TypedRows::new();
    let mut cov = Coverage::default();
    for line in &profile.lines {
        for (i, a) in line.accesses.iter().enumerate() {
            let Some(code) = &a.code else { continue };
            if !row_in_image(image, code) {
                continue;
            }
            let Some(pc) = row_address(typer, code) else {
                continue;
            };
            let result = typer.type_at(pc);
            cov.add(a.counts.accesses().max(1e-9), &result);
            if let Ok(t) = result {
                out.insert((line.address, i), t);
            }
        }
    }
    (out, cov)
}

// ---------------------------------------------------------------------------------------------
// Against a recording's ground truth

/// One recorded access site checked against what its instruction was typed as.
#[derive(Clone, Debug, Serialize)]
pub struct SiteCheck {
    #[serde(serialize_with = "crate::hex::address")]
    pub address: u64,
    /// What the recording attributed the site's accesses to (the most accessed).
    pub truth_type: String,
    pub truth_member: String,
    pub accesses: f64,
    pub typed: Option<TypedAccess>,
    pub not_typed: Option<NotTyped>,
    pub right: bool,
}

/// Coverage and accuracy of typing from instructions against a recording.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Accuracy {
    /// Recorded struct-access sites in the image.
    pub sites: u64,
    pub typed: u64,
    /// Typed as the struct and member the recording saw.
    pub right: u64,
    /// The same, weighted by recorded accesses.
    pub accesses: f64,
    pub accesses_typed: f64,
    pub accesses_right: f64,
    /// Sites left untyped, per reason.
    pub untyped: BTreeMap<String, u64>,
    pub checks: Vec<SiteCheck>,
}

/// `hits[3].x` → `hits.x`: a member without its array indices.
fn without_indices(path: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Types every access site of a `lineup record` profile of the program in `typer` from its
/// instruction alone, and checks each against the object and member the recording
/// attributed its accesses to (their exact data addresses, through allocation sites and
/// symbols). Only sites whose accesses were attributed to a struct of the program count.
pub fn check_recorded(
    typer: &Typer<'_>,
    image: &str,
    profile: &crate::profile::Profile,
) -> Accuracy {
    // site → (type, offset) → accesses
    let mut truth: BTreeMap<u64, HashMap<(String, u64), f64>> = BTreeMap::new();
    for t in &profile.types {
        if !typer.definitions.contains_key(&t.type_name) {
            continue;
        }
        for a in &t.accesses {
            let (Some(code), Some(offset)) = (&a.code, a.offset) else {
                continue;
            };
            if !row_in_image(image, code) {
                continue;
            }
            let Some(pc) = code.address else { continue };
            *truth
                .entry(pc)
                .or_default()
                .entry((t.type_name.clone(), offset))
                .or_default() += a.counts.accesses();
        }
    }
    let mut acc = Accuracy::default();
    for (pc, seen) in truth {
        let total: f64 = seen.values().sum();
        // The most accessed (struct, offset); ties to the first in order, so that every run
        // checks the same one.
        let Some(((ty, off), _)) = seen
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(a.0)))
        else {
            continue;
        };
        let member = typer.member_of(ty, *off).unwrap_or_default();
        let result = match typer.type_at(pc) {
            Err(e) if e.label == NOT_MEMORY || e.label == IN_CALLEE => {
                match typer.type_call_argument(pc) {
                    // Not a call: the first reason stands.
                    Err(e2) if e2.label == NOT_MEMORY || e2.label == NO_CODE => Err(e),
                    other => other,
                }
            }
            other => other,
        };
        acc.sites += 1;
        acc.accesses += total;
        let right = match &result {
            Ok(t) => {
                acc.typed += 1;
                acc.accesses_typed += total;
                typer.levels(ty, *off).iter().any(|(name, at, path)| {
                    t.type_name == *name
                        && (if t.indexed {
                            without_indices(&t.member) == without_indices(path)
                        } else {
                            // The recorded byte is one the access covers (a memset's
                            // range, from its first member).
                            let covers = t.offset >= 0
                                && t.size.is_some_and(|n| {
                                    (t.offset as u64..t.offset as u64 + n as u64).contains(at)
                                });
                            t.offset as u64 == *at || t.member == *path || covers
                        })
                }) || (t.offset >= 0
                    // A header struct whose members begin the object's (C's common initial
                    // sequence): the same member, at the same offset, with the same type.
                    && typer.levels(ty, *off).iter().any(|(name, at, path)| {
                        t.offset as u64 == *at
                            && !path.contains('.')
                            && without_indices(&t.member) == without_indices(path)
                            && typer.in_common_initial_sequence(&t.type_name, name, *at)
                    }))
            }
            Err(e) => {
                *acc.untyped.entry(e.label.to_string()).or_default() += 1;
                false
            }
        };
        if right {
            acc.right += 1;
            // Accesses to the site's other objects count as right when they are the same
            // member of the same type.
            acc.accesses_right += seen
                .iter()
                .filter(|((t2, o2), _)| {
                    t2 == ty
                        && typer.member_of(t2, *o2).map(|m| without_indices(&m))
                            == Some(without_indices(&member))
                })
                .map(|(_, n)| n)
                .sum::<f64>();
        }
        let (typed, not_typed) = match result {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(e)),
        };
        acc.checks.push(SiteCheck {
            address: pc,
            truth_type: ty.clone(),
            truth_member: member,
            accesses: total,
            typed,
            not_typed,
            right,
        });
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_dropped_from_member_paths() {
        assert_eq!(without_indices("hits[3]"), "hits");
        assert_eq!(without_indices("a[1].b[2].c"), "a.b.c");
        assert_eq!(without_indices("plain"), "plain");
    }

    #[test]
    fn a_register_plus_constant_location_is_read_by_the_evaluator() {
        // DW_OP_breg3 -16; DW_OP_stack_value: the variable is rbx-16.
        let bytes = [0x73u8, 0x70, 0x9f];
        let expr = gimli::Expression(gimli::EndianSlice::new(
            &bytes,
            gimli::RunTimeEndian::Little,
        ));
        let enc = gimli::Encoding {
            format: gimli::Format::Dwarf32,
            version: 4,
            address_size: 8,
        };
        assert_eq!(
            register_location(expr, enc, None, false),
            Some((3, -16, false))
        );
        // DW_OP_reg5: in rdi.
        let bytes = [0x55u8];
        let expr = gimli::Expression(gimli::EndianSlice::new(
            &bytes,
            gimli::RunTimeEndian::Little,
        ));
        assert_eq!(
            register_location(expr, enc, None, false),
            Some((5, 0, false))
        );
        // DW_OP_fbreg -24 with the frame base in rbp: stored at [rbp-24].
        let bytes = [0x91u8, 0x68];
        let expr = gimli::Expression(gimli::EndianSlice::new(
            &bytes,
            gimli::RunTimeEndian::Little,
        ));
        assert_eq!(
            register_location(expr, enc, Some(6), true),
            Some((6, -24, true))
        );
    }

    // -----------------------------------------------------------------------------------------
    // Propagation classes, on small C programs compiled here (gcc and clang, -O2 -g) and on
    // hand-assembled functions typed with the compiled program's DWARF types.

    const CLASSES: &str = r#"
typedef unsigned long size_t;
struct enc { long low; unsigned count; unsigned symbols[64]; };
struct cfg { long a[64]; long b; };
struct mtx { int word[10]; };
struct locked { long pad; struct mtx lock; long hits; };
struct big { long a; long b; long c; long d; long e; long f; long tail; };
struct cfg gcfg;
/* A header struct and objects that begin with it, or with something like it. */
struct hdr { struct hdr *next; unsigned char tt; unsigned char marked; };
struct obj { struct hdr *next; unsigned char tt; unsigned char marked; int x; long y; };
struct other { struct hdr *next; unsigned char kind; unsigned char marked; };
struct hdr ghdr; struct obj gobj; struct other gother;
#define NOINLINE __attribute__((noinline))
/* A pointer to a scalar parameter: both callers pass the same member's address. */
struct queue { long head; unsigned long pos; unsigned long size; };
__attribute__((noinline, noipa)) void advance(unsigned long *pos, unsigned long n) { *pos += n; }
NOINLINE void push(struct queue *q) { advance(&q->pos, 1); }
NOINLINE void push_many(struct queue *q, unsigned long n) { advance(&q->pos, n); q->size += n; }
/* The program's own copies, as the recording runtime links them in. */
NOINLINE void *memset(void *d, int c, size_t n) {
    volatile char *p = d;
    while (n--) *p++ = (char)c;
    return d;
}
NOINLINE int pthread_mutex_lock(struct mtx *m) { return ((volatile int *)m->word)[0]; }
NOINLINE void opaque(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }
NOINLINE long put(struct enc *rc, unsigned s) { rc->symbols[rc->count] = s; return rc->low; }
NOINLINE void clear(struct cfg *c) { memset(c, 0, sizeof *c); c->b = 1; }
NOINLINE void clear_some(struct cfg *c, size_t n) { memset(c->a, 0, n); c->b = 2; }
NOINLINE void bump(struct locked *l) { l->hits += pthread_mutex_lock(&l->lock); }
NOINLINE long sw(struct big *b, int k) {
    switch (k) {
    case 0: b->a += 3; opaque(b); break;
    case 1: b->b *= 5; opaque(0); break;
    case 2: b->c ^= 7; opaque(b); break;
    case 3: b->d -= 9; opaque(0); break;
    case 4: b->e |= 11; opaque(b); break;
    case 5: b->f &= 13; opaque(0); break;
    case 6: b->tail += b->a; opaque(b); break;
    case 7: b->tail -= 2; opaque(0); break;
    }
    return k;
}
int main(int argc, char **argv) {
    static struct enc e; static struct cfg c; static struct locked l; static struct big b;
    static struct queue qu;
    put(&e, argc); clear(&c); clear_some(&c, argc); bump(&l); push(&qu); push_many(&qu, argc);
    return (int)sw(&b, argc) + (int)c.b;
}
"#;

    /// `CLASSES` built by `cc` at -O2 -g in a fresh directory; `None` without that compiler.
    fn build(cc: &str, tag: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        let dir = std::env::temp_dir().join(format!(
            "lineup-typing-unit-{tag}-{cc}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("classes.c");
        std::fs::write(&src, CLASSES).unwrap();
        let out = dir.join("classes");
        let r = std::process::Command::new(cc)
            .args(["-O2", "-g", "-fno-inline-functions", "-fno-builtin", "-o"])
            .arg(&out)
            .arg(&src)
            .output();
        match r {
            Ok(r) if r.status.success() => Some((dir, out)),
            Ok(r) => panic!("{cc}: {}", String::from_utf8_lossy(&r.stderr)),
            Err(_) => None,
        }
    }

    /// Every call in function `name` to function `callee`.
    fn calls_to(typer: &Typer<'_>, name: &str, callee: &str) -> Vec<u64> {
        let target = typer.symbol_address(callee).unwrap();
        let f = typer.function(typer.symbol_address(name).unwrap()).unwrap();
        f.instrs
            .iter()
            .filter(|i| i.flow_control() == FlowControl::Call && i.near_branch_target() == target)
            .map(|i| i.ip())
            .collect()
    }

    #[test]
    fn calls_to_the_memory_and_lock_functions_are_accesses_to_their_arguments() {
        for cc in ["gcc", "clang"] {
            let Some((dir, bin)) = build(cc, "calls") else {
                continue;
            };
            let file = InputFile::open(&bin).unwrap();
            let typer = Typer::new(&file).unwrap();
            // memset(c, 0, sizeof *c): the struct from its first byte, 520 bytes long.
            let sites = calls_to(&typer, "clear", "memset");
            assert!(!sites.is_empty(), "{cc}: clear calls memset");
            for pc in sites {
                let t = typer.type_call_argument(pc).unwrap();
                assert_eq!((t.type_name.as_str(), t.offset), ("cfg", 0), "{cc}: {t:?}");
                assert_eq!(t.size, Some(520), "{cc}: {t:?}");
            }
            // memset(c->a, 0, n): the member, length unknown.
            for pc in calls_to(&typer, "clear_some", "memset") {
                let t = typer.type_call_argument(pc).unwrap();
                assert_eq!(
                    (t.type_name.as_str(), t.member.as_str()),
                    ("cfg", "a[0]"),
                    "{cc}"
                );
                assert_eq!(t.size, None, "{cc}: {t:?}");
            }
            // pthread_mutex_lock(&l->lock), defined in the program.
            let sites = calls_to(&typer, "bump", "pthread_mutex_lock");
            assert!(!sites.is_empty(), "{cc}: bump calls pthread_mutex_lock");
            for pc in sites {
                let t = typer.type_call_argument(pc).unwrap();
                assert_eq!(
                    (t.type_name.as_str(), t.offset),
                    ("locked", 8),
                    "{cc}: {t:?}"
                );
                assert!(t.member.starts_with("lock"), "{cc}: {t:?}");
            }
            // A call to any other function of the program: the callee made the access.
            let pc = calls_to(&typer, "sw", "opaque")[0];
            assert_eq!(typer.type_call_argument(pc).unwrap_err().label, IN_CALLEE);
            std::fs::remove_dir_all(&dir).ok();
        }
    }

    #[test]
    fn a_switch_tables_targets_are_jumped_to_from_its_indirect_jump() {
        let mut tables = 0;
        for cc in ["gcc", "clang"] {
            let Some((dir, bin)) = build(cc, "switch") else {
                continue;
            };
            let file = InputFile::open(&bin).unwrap();
            let typer = Typer::new(&file).unwrap();
            let f = typer.function(typer.symbol_address("sw").unwrap()).unwrap();
            let jumps: Vec<usize> = (0..f.instrs.len())
                .filter(|&j| f.instrs[j].flow_control() == FlowControl::IndirectBranch)
                .collect();
            for &j in &jumps {
                let targets = f
                    .jumped_from
                    .iter()
                    .filter(|from| from.contains(&j))
                    .count();
                // Eight cases (the default may share a target).
                assert!(
                    targets >= 7,
                    "{cc}: {targets} targets from {}",
                    show(&f.instrs[j])
                );
                tables += 1;
            }
            // Every access in a case is typed, its register from before the jump.
            for (pc, r) in typer.accesses_in("sw") {
                if let Ok(t) = &r {
                    assert_eq!(t.type_name, "big", "{cc} {pc:#x}: {t:?}");
                } else {
                    // Locals, and the read of the jump table itself (no variable).
                    let e = r.unwrap_err();
                    assert!(
                        e.label == STACK
                            || e.label == NOT_STRUCT
                            || e.detail.contains("of no variable"),
                        "{cc} {pc:#x}: {e}"
                    );
                }
            }
            std::fs::remove_dir_all(&dir).ok();
        }
        // At least one compiler made a jump table of the switch (gcc does at -O2).
        if Command::new("gcc").arg("--version").output().is_ok() {
            assert!(tables >= 1, "no jump table read");
        }
    }

    use std::process::Command;

    /// A function of hand-assembled x86-64 `bytes` whose parameters are those of the compiled
    /// program's function `like` (its DWARF types), and no variable locations: what the code
    /// does is all the typer sees.
    fn synthetic(typer: &Typer<'_>, like: &str, bytes: &[u8]) -> Function {
        let params = typer
            .function(typer.symbol_address(like).unwrap())
            .unwrap()
            .params
            .clone();
        let mut decoder = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE);
        let mut instrs = Vec::new();
        while decoder.can_decode() {
            instrs.push(decoder.decode());
        }
        let jumped_from = vec![Vec::new(); instrs.len()];
        Function {
            start: 0x1000,
            instrs,
            jumped_from,
            frame_pointer: false,
            vars: Vec::new(),
            params,
        }
    }

    /// Types the last instruction's memory operand of `f`, as `type_at` does.
    fn type_last(typer: &Typer<'_>, f: &Function) -> Result<TypedAccess, String> {
        let idx = f.instrs.len() - 1;
        let ins = &f.instrs[idx];
        let base = ins.memory_base().full_register();
        let mut walk = Walk::default();
        match typer.before(f, &mut walk, idx, Loc::Reg(base), 0) {
            Val::Ptr(p) => typer
                .finish(
                    p,
                    ins.memory_displacement64() as i64,
                    ins.memory_index() != Register::None,
                    Some(4),
                    show(ins),
                )
                .map_err(|e| e.to_string()),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn an_index_with_a_constant_added_to_a_pointer_keeps_the_constant() {
        let Some((dir, bin)) = build("gcc", "index") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        // put(struct enc *rc, ...): rc in rdi at entry.
        //   mov rbp, rdi; lea rdi, [r14*4+0xc]; add rdi, rbp; mov [rdi], eax
        // is &rc->symbols[r14]: the lea's 0xc is the member's offset.
        let f = synthetic(
            &typer,
            "put",
            &[
                0x48, 0x89, 0xfd, 0x4a, 0x8d, 0x3c, 0xb5, 0x0c, 0x00, 0x00, 0x00, 0x48, 0x01, 0xef,
                0x89, 0x07,
            ],
        );
        assert_eq!(show(&f.instrs[1]), "lea rdi, [r14*4+0xc]");
        let t = type_last(&typer, &f).unwrap();
        assert_eq!((t.type_name.as_str(), t.offset), ("enc", 12), "{t:?}");
        assert_eq!(t.member, "symbols[0]");
        assert!(t.indexed);
        // mov eax, 0x10; add rax, rdi; mov [rax], ecx: rc + 16, symbols[1].
        let f = synthetic(
            &typer,
            "put",
            &[0xb8, 0x10, 0x00, 0x00, 0x00, 0x48, 0x01, 0xf8, 0x89, 0x08],
        );
        let t = type_last(&typer, &f).unwrap();
        assert_eq!((t.type_name.as_str(), t.offset), ("enc", 16), "{t:?}");
        assert_eq!(t.member, "symbols[1]");
        // lea r12, [r14+rdi*1+0x8]; mov eax, [r12]: r14 unknown (a byte counter), the pointer
        // in the index: rc + 8 and an element, count.
        let g = synthetic(
            &typer,
            "put",
            &[0x4d, 0x8d, 0x64, 0x3e, 0x08, 0x41, 0x8b, 0x04, 0x24],
        );
        assert_eq!(show(&g.instrs[0]), "lea r12, [r14+rdi*1+0x8]");
        let t = type_last(&typer, &g).unwrap();
        assert_eq!(
            (t.type_name.as_str(), t.member.as_str()),
            ("enc", "count"),
            "{t:?}"
        );
        assert!(t.indexed);
        // Two paths giving different constants say nothing: xor eax, eax; add rax, rdi ...
        // with a jump over a `mov eax, 8` : not typed as either.
        //   xor eax, eax; test esi, esi; je +5; mov eax, 8; add rax, rdi; mov [rax], ecx
        let mut f = synthetic(
            &typer,
            "put",
            &[
                0x31, 0xc0, 0x85, 0xf6, 0x74, 0x05, 0xb8, 0x08, 0x00, 0x00, 0x00, 0x48, 0x01, 0xf8,
                0x89, 0x08,
            ],
        );
        let je = 2;
        let target = f.index_of(f.instrs[je].near_branch_target()).unwrap();
        f.jumped_from[target].push(je);
        assert!(type_last(&typer, &f).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_pointer_to_a_scalar_made_from_a_members_address_is_that_member() {
        let Some((dir, bin)) = build("gcc", "scalar") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        // lea rbx, [rdi+0x8]; mov eax, [rbx]: rbx is &rc->count (a `unsigned *` to DWARF,
        // were it a variable), typed as the member of the struct its address was made from.
        let f = synthetic(&typer, "put", &[0x48, 0x8d, 0x5f, 0x08, 0x8b, 0x03]);
        let t = type_last(&typer, &f).unwrap();
        assert_eq!((t.type_name.as_str(), t.member.as_str()), ("enc", "count"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_register_copied_into_a_typed_variable_is_that_variables_type() {
        let Some((dir, bin)) = build("gcc", "copy") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        let enc_ptr = typer
            .function(typer.symbol_address("put").unwrap())
            .unwrap()
            .params[0];
        // A thread's start routine: `void *arg` in rdi (no typed parameter here), copied to
        // r15, which DWARF names `struct enc *e` from the next instruction on.
        //   mov r15, rdi; lea rbp, [rdi+0x8]; mov eax, [rbp]
        let mut f = synthetic(
            &typer,
            "put",
            &[0x49, 0x89, 0xff, 0x48, 0x8d, 0x6f, 0x08, 0x8b, 0x45, 0x00],
        );
        f.params.clear();
        assert!(type_last(&typer, &f).is_err(), "rdi at entry is untyped");
        f.vars.push(VarLoc {
            lo: f.instrs[1].ip(),
            hi: 0x2000,
            reg: 15,
            addend: 0,
            in_memory: false,
            ty: enc_ptr,
            name: "e".into(),
        });
        let t = type_last(&typer, &f).unwrap();
        assert_eq!((t.type_name.as_str(), t.member.as_str()), ("enc", "count"));
        assert!(t.via.contains("variable `e` in r15"), "{t:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn alignment_padding_after_a_jump_says_nothing_about_the_paths() {
        let Some((dir, bin)) = build("gcc", "padding") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        // mov eax, 0x10; jmp L; nop dword [rax]; L: add rax, rdi; mov [rax], ecx
        // The nop is reached by no path: only the jump's path counts, and rax is 16 there,
        // rc + 16, symbols[1].
        let mut f = synthetic(
            &typer,
            "put",
            &[
                0xb8, 0x10, 0x00, 0x00, 0x00, 0xeb, 0x04, 0x0f, 0x1f, 0x40, 0x00, 0x48, 0x01, 0xf8,
                0x89, 0x08,
            ],
        );
        assert_eq!(show(&f.instrs[2]), "nop [rax]");
        f.jumped_from[3].push(1);
        let t = type_last(&typer, &f).unwrap();
        assert_eq!((t.type_name.as_str(), t.offset), ("enc", 16), "{t:?}");
        assert_eq!(t.member, "symbols[1]");
        // The same code with a real instruction where the padding was (reached only by a
        // jump the reader does not know): that path's rax is unknown, so the constant is.
        let mut g = synthetic(
            &typer,
            "put",
            &[
                0xb8, 0x10, 0x00, 0x00, 0x00, 0xeb, 0x05, 0xb8, 0x08, 0x00, 0x00, 0x00, 0x48, 0x01,
                0xf8, 0x89, 0x08,
            ],
        );
        assert_eq!(show(&g.instrs[2]), "mov eax, 0x8");
        g.jumped_from[3].push(1);
        assert_ne!(type_last(&typer, &g).map(|t| t.offset), Ok(16));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Decodes `bytes` at 0x1000 with the direct jumps' edges.
    fn decoded(bytes: &[u8]) -> (Vec<Instruction>, Vec<Vec<usize>>) {
        let mut decoder = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE);
        let mut instrs = Vec::new();
        while decoder.can_decode() {
            instrs.push(decoder.decode());
        }
        let mut jumped_from = vec![Vec::new(); instrs.len()];
        for (i, ins) in instrs.iter().enumerate() {
            if matches!(
                ins.flow_control(),
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
            ) && let Ok(t) = instrs.binary_search_by_key(&ins.near_branch_target(), |x| x.ip())
            {
                jumped_from[t].push(i);
            }
        }
        (instrs, jumped_from)
    }

    #[test]
    fn a_jump_tables_base_made_before_calls_loops_and_moves_is_found() {
        // lea r12, [rip+0x100]; L: call L2 (itself a callee); mov rcx, r12;
        // mov eax, [rdi]; jmp [rcx+rax*8]
        // The base is kept in a callee-saved register across the call and moved once.
        let bytes = [
            0x4c, 0x8d, 0x25, 0x00, 0x01, 0x00, 0x00, // lea r12, [rip+0x100]
            0xe8, 0x00, 0x00, 0x00, 0x00, // call next
            0x4c, 0x89, 0xe1, // mov rcx, r12
            0x8b, 0x07, // mov eax, [rdi]
            0xff, 0x24, 0xc1, // jmp [rcx+rax*8]
        ];
        let (instrs, jumped_from) = decoded(&bytes);
        assert_eq!(show(&instrs[4]), "jmp [rcx+rax*8]");
        let table = 0x1007 + 0x100;
        assert_eq!(
            reaching_address(&instrs, &jumped_from, 4, Register::RCX),
            Some(table)
        );
        // The straight-line reader stops at the call.
        assert_eq!(constant_address(&instrs, 4, Register::RCX), None);
        // The same with rcx made before the call: a call may change rcx.
        let bytes = [
            0x48, 0x8d, 0x0d, 0x00, 0x01, 0x00, 0x00, // lea rcx, [rip+0x100]
            0xe8, 0x00, 0x00, 0x00, 0x00, // call next
            0x8b, 0x07, // mov eax, [rdi]
            0xff, 0x24, 0xc1, // jmp [rcx+rax*8]
        ];
        let (instrs, jumped_from) = decoded(&bytes);
        assert_eq!(
            reaching_address(&instrs, &jumped_from, 3, Register::RCX),
            None
        );
        // A loop: the base made before it; the back edge comes from a handler reached only
        // through the table (no known edge), which says nothing.
        //   lea r12, [rip+0x100]; L: mov eax, [rdi]; jmp [r12+rax*8]; H: add rdi, 4; jmp L
        let bytes = [
            0x4c, 0x8d, 0x25, 0x00, 0x01, 0x00, 0x00, // lea r12, [rip+0x100]
            0x8b, 0x07, // L: mov eax, [rdi]
            0x41, 0xff, 0x24, 0xc4, // jmp [r12+rax*8]
            0x48, 0x83, 0xc7, 0x04, // H: add rdi, 4
            0xeb, 0xf4, // jmp L
        ];
        let (instrs, jumped_from) = decoded(&bytes);
        assert_eq!(show(&instrs[4]), "jmp 0x1007");
        assert_eq!(jumped_from[1], vec![4]);
        assert_eq!(
            reaching_address(&instrs, &jumped_from, 2, Register::R12),
            Some(table)
        );
        // Another path making r12 otherwise: no answer.
        //   lea r12, [rip+0x100]; test esi, esi; je L; mov r12, [rdi]; L: jmp [r12+rax*8]
        let bytes = [
            0x4c, 0x8d, 0x25, 0x00, 0x01, 0x00, 0x00, // lea r12, [rip+0x100]
            0x85, 0xf6, // test esi, esi
            0x74, 0x03, // je L
            0x4c, 0x8b, 0x27, // mov r12, [rdi]
            0x41, 0xff, 0x24, 0xc4, // L: jmp [r12+rax*8]
        ];
        let (instrs, jumped_from) = decoded(&bytes);
        assert_eq!(jumped_from[4], vec![2]);
        assert_eq!(
            reaching_address(&instrs, &jumped_from, 4, Register::R12),
            None
        );
    }

    #[test]
    fn a_header_struct_is_right_only_within_the_common_initial_sequence() {
        let Some((dir, bin)) = build("gcc", "header") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        // struct hdr { next; tt; marked; } begins struct obj member for member.
        assert!(typer.in_common_initial_sequence("hdr", "obj", 0));
        assert!(typer.in_common_initial_sequence("hdr", "obj", 8));
        assert!(typer.in_common_initial_sequence("hdr", "obj", 9));
        // Past the header: obj's own members.
        assert!(!typer.in_common_initial_sequence("hdr", "obj", 12));
        // struct other names its byte 8 `kind`: the sequence ends before it, so `marked`
        // at 9 is not in it either, though it has the same name and offset.
        assert!(typer.in_common_initial_sequence("hdr", "other", 0));
        assert!(!typer.in_common_initial_sequence("hdr", "other", 8));
        assert!(!typer.in_common_initial_sequence("hdr", "other", 9));
        assert!(!typer.in_common_initial_sequence("hdr", "nosuch", 0));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_pointer_to_a_scalar_parameter_is_the_member_every_caller_passes() {
        let Some((dir, bin)) = build("gcc", "callers") else {
            return;
        };
        let file = InputFile::open(&bin).unwrap();
        let typer = Typer::new(&file).unwrap();
        // advance(unsigned long *pos, ...): push and push_many both pass &q->pos.
        let list = typer.accesses_in("advance");
        assert!(!list.is_empty());
        for (pc, t) in &list {
            let t = t.as_ref().unwrap_or_else(|e| panic!("{pc:#x}: {e}"));
            assert_eq!(
                (t.type_name.as_str(), t.member.as_str()),
                ("queue", "pos"),
                "{t:?}"
            );
            assert!(t.via.contains("by every caller (2 calls"), "{t:?}");
        }
        // Not a pointer the callers pass: no answer.
        let entry = typer.symbol_address("advance").unwrap();
        let p = typer.passed_by_callers(entry, Register::RSI);
        assert!(p.is_none(), "the second argument is a count: {p:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
