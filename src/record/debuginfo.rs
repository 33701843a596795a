//! What `lineup record` needs from the recorded program's ELF file and DWARF, besides the
//! type graph: function symbols (code address → `symbol+offset`), the line table (→
//! `file.c:123`), global and static variables with their addresses and struct types, and, per
//! function, the struct types it holds pointers to (which type a `malloc` in that function
//! most likely allocates).

use std::collections::HashMap;

use gimli::{AttributeValue, EndianSlice, RunTimeEndian, constants as dw};
use object::{Object, ObjectSection, ObjectSymbol};

type Slice<'a> = EndianSlice<'a, RunTimeEndian>;
type Unit<'a> = gimli::Unit<Slice<'a>>;
type Die<'a> = gimli::DebuggingInformationEntry<Slice<'a>>;

/// A struct or union type by name and size.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjType {
    pub name: String,
    pub size: u64,
}

/// A global or static variable whose type is a struct or union, or an array of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalVar {
    pub name: String,
    /// Link-time address (add the load bias for a PIE).
    pub addr: u64,
    pub elem: ObjType,
    /// Elements (1 unless the variable is an array).
    pub count: u64,
}

impl GlobalVar {
    pub fn size(&self) -> u64 {
        self.elem.size.saturating_mul(self.count.max(1))
    }
}

#[derive(Clone, Debug)]
struct Symbol {
    start: u64,
    size: u64,
    name: String,
}

#[derive(Clone, Copy, Debug)]
struct Row {
    addr: u64,
    file: u32,
    line: u32,
    end: bool,
}

#[derive(Clone, Debug)]
struct FunctionTypes {
    ranges: Vec<(u64, u64)>,
    types: Vec<ObjType>,
}

/// A code location resolved against the program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub symbol: Option<String>,
    pub offset: Option<u64>,
    pub source: Option<String>,
}

#[derive(Default)]
pub struct DebugInfo {
    symbols: Vec<Symbol>,
    rows: Vec<Row>,
    files: Vec<String>,
    functions: Vec<FunctionTypes>,
    pub globals: Vec<GlobalVar>,
    /// Executable sections: (address, bytes), to look at call instructions.
    code: Vec<(u64, Vec<u8>)>,
    pub has_dwarf: bool,
}

impl DebugInfo {
    /// Reads symbols and DWARF from ELF bytes. DWARF problems leave parts empty rather than
    /// fail: a recording without source lines is still a recording.
    pub fn read(elf: &[u8]) -> Result<DebugInfo, String> {
        let obj = object::File::parse(elf).map_err(|e| format!("not a valid ELF file: {e}"))?;
        let mut info = DebugInfo::default();
        for s in obj.symbols().chain(obj.dynamic_symbols()) {
            if s.kind() != object::SymbolKind::Text || s.address() == 0 {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            info.symbols.push(Symbol {
                start: s.address(),
                size: s.size(),
                name: demangle(name),
            });
        }
        info.symbols
            .sort_by(|a, b| a.start.cmp(&b.start).then(b.size.cmp(&a.size)));
        info.symbols.dedup_by_key(|s| s.start);
        for section in obj.sections() {
            if section.kind() == object::SectionKind::Text
                && let Ok(data) = section.data()
            {
                info.code.push((section.address(), data.to_vec()));
            }
        }
        // Sections, decompressed where needed; kept alive for the borrow below.
        let mut owned: HashMap<&'static str, Vec<u8>> = HashMap::new();
        for id in ALL_SECTIONS {
            let name = id.name();
            if let Some(s) = obj.section_by_name(name)
                && let Ok(data) = s.uncompressed_data()
            {
                owned.insert(name, data.into_owned());
            }
        }
        info.has_dwarf = owned.contains_key(".debug_info");
        if !info.has_dwarf {
            return Ok(info);
        }
        let endian = if obj.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let dwarf = gimli::Dwarf::load(|id| -> Result<Slice<'_>, ()> {
            Ok(EndianSlice::new(
                owned.get(id.name()).map(Vec::as_slice).unwrap_or(&[]),
                endian,
            ))
        })
        .map_err(|_| "cannot load DWARF".to_string())?;
        let mut units = dwarf.units();
        while let Ok(Some(header)) = units.next() {
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            info.read_lines(&dwarf, &unit);
            let _ = info.read_unit(&dwarf, &unit);
        }
        info.rows
            .sort_by(|a, b| a.addr.cmp(&b.addr).then(b.end.cmp(&a.end)));
        Ok(info)
    }

    fn read_lines(&mut self, dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>) {
        let Some(program) = unit.line_program.clone() else {
            return;
        };
        let mut file_ids: HashMap<u64, u32> = HashMap::new();
        let mut rows = program.rows();
        while let Ok(Some((header, row))) = rows.next_row() {
            let file = match file_ids.get(&row.file_index()) {
                Some(&f) => f,
                None => {
                    let name = header
                        .file(row.file_index())
                        .and_then(|f| dwarf.attr_string(unit, f.path_name()).ok())
                        .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
                        .unwrap_or_default();
                    let base = name.rsplit('/').next().unwrap_or("").to_string();
                    self.files.push(base);
                    let id = (self.files.len() - 1) as u32;
                    file_ids.insert(row.file_index(), id);
                    id
                }
            };
            self.rows.push(Row {
                addr: row.address(),
                file,
                line: row.line().map_or(0, |l| l.get() as u32),
                end: row.end_sequence(),
            });
        }
    }

    fn read_unit(&mut self, dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>) -> gimli::Result<()> {
        let mut cursor = unit.entries();
        // Functions (and inlined calls) enclosing the current entry: (depth, index).
        let mut scopes: Vec<(isize, usize)> = Vec::new();
        while let Some(entry) = cursor.next_dfs()? {
            let depth = entry.depth();
            while scopes.last().is_some_and(|&(d, _)| d >= depth) {
                scopes.pop();
            }
            match entry.tag() {
                dw::DW_TAG_subprogram | dw::DW_TAG_inlined_subroutine => {
                    let mut ranges = Vec::new();
                    if let Ok(mut it) = dwarf.die_ranges(unit, entry) {
                        while let Ok(Some(r)) = it.next() {
                            if r.end > r.begin {
                                ranges.push((r.begin, r.end));
                            }
                        }
                    }
                    if ranges.is_empty() {
                        continue;
                    }
                    let mut types = Vec::new();
                    // The return type (`struct queue *queue_new(void)`).
                    if let Some(t) = type_of(unit, entry).and_then(|t| pointee(dwarf, unit, t)) {
                        types.push(t);
                    }
                    self.functions.push(FunctionTypes { ranges, types });
                    scopes.push((depth, self.functions.len() - 1));
                }
                dw::DW_TAG_variable | dw::DW_TAG_formal_parameter => {
                    if let Some(addr) = static_address(dwarf, unit, entry) {
                        if let Some(t) = type_of(unit, entry)
                            && let Some((elem, count)) = composite(dwarf, unit, t)
                        {
                            let name = name_of(dwarf, unit, entry).unwrap_or_default();
                            self.globals.push(GlobalVar {
                                name,
                                addr,
                                elem,
                                count,
                            });
                        }
                    } else if let Some(&(_, f)) = scopes.last()
                        && let Some(t) = type_of(unit, entry).and_then(|t| pointee(dwarf, unit, t))
                        && !self.functions[f].types.contains(&t)
                    {
                        self.functions[f].types.push(t);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `symbol`, offset into it, and `file.c:line` of code address `addr` (link-time).
    pub fn resolve(&self, addr: u64) -> Resolved {
        let mut r = Resolved::default();
        let i = self.symbols.partition_point(|s| s.start <= addr);
        if i > 0 {
            let s = &self.symbols[i - 1];
            let next = self.symbols.get(i).map_or(u64::MAX, |n| n.start);
            if addr < s.start + s.size.max(1) || (s.size == 0 && addr < next) {
                r.symbol = Some(s.name.clone());
                r.offset = Some(addr - s.start);
            }
        }
        let j = self.rows.partition_point(|row| row.addr <= addr);
        if j > 0 {
            let row = self.rows[j - 1];
            if !row.end && row.line > 0 {
                r.source = Some(format!("{}:{}", self.files[row.file as usize], row.line));
            }
        }
        r
    }

    /// The instruction that made an access, from the instrumentation call's return address:
    /// the 5-byte `call` just before it, when there is one.
    pub fn call_site(&self, ret: u64) -> u64 {
        for (start, bytes) in &self.code {
            if ret >= *start + 5 && ret <= *start + bytes.len() as u64 {
                let at = (ret - 5 - start) as usize;
                return if bytes[at] == 0xe8 { ret - 5 } else { ret - 1 };
            }
        }
        ret.saturating_sub(1)
    }

    /// Struct types the code at `addr` (link-time) handles pointers to: its function's return
    /// type, parameters and locals, and those of functions inlined there.
    pub fn pointer_types_at(&self, addr: u64) -> Vec<ObjType> {
        let mut out: Vec<ObjType> = Vec::new();
        for f in &self.functions {
            if f.ranges.iter().any(|&(lo, hi)| addr >= lo && addr < hi) {
                for t in &f.types {
                    if !out.contains(t) {
                        out.push(t.clone());
                    }
                }
            }
        }
        out
    }
}

const ALL_SECTIONS: [gimli::SectionId; 13] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugLoc,
    gimli::SectionId::DebugLocLists,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugTypes,
    gimli::SectionId::DebugAranges,
];

/// The entry's `DW_AT_type`, looking through `DW_AT_specification` and
/// `DW_AT_abstract_origin` when it has none (out-of-line definitions, inlined copies).
fn type_of<'a>(unit: &Unit<'a>, entry: &Die<'a>) -> Option<gimli::UnitOffset> {
    let mut e = entry.clone();
    for _ in 0..4 {
        if let Some(AttributeValue::UnitRef(t)) = e.attr_value(dw::DW_AT_type) {
            return Some(t);
        }
        let next = e
            .attr_value(dw::DW_AT_specification)
            .or_else(|| e.attr_value(dw::DW_AT_abstract_origin));
        match next {
            Some(AttributeValue::UnitRef(o)) => e = unit.entry(o).ok()?,
            _ => return None,
        }
    }
    None
}

fn name_of<'a>(
    dwarf: &gimli::Dwarf<Slice<'a>>,
    unit: &Unit<'a>,
    entry: &Die<'a>,
) -> Option<String> {
    let mut e = entry.clone();
    for _ in 0..4 {
        if e.attr(dw::DW_AT_name).is_some() {
            return string_attr(dwarf, unit, &e, dw::DW_AT_name);
        }
        let next = e
            .attr_value(dw::DW_AT_specification)
            .or_else(|| e.attr_value(dw::DW_AT_abstract_origin));
        match next {
            Some(AttributeValue::UnitRef(o)) => e = unit.entry(o).ok()?,
            _ => return None,
        }
    }
    None
}

/// The address of a variable that lives at a fixed address (`DW_OP_addr`, `DW_OP_addrx`):
/// globals and function statics. Thread-locals and register/stack variables have none.
fn static_address(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
) -> Option<u64> {
    let Some(AttributeValue::Exprloc(expr)) = entry.attr_value(dw::DW_AT_location) else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let first = ops.next().ok()??;
    if !matches!(ops.next(), Ok(None)) {
        return None; // DW_OP_addr x; DW_OP_GNU_push_tls_address: a thread-local
    }
    match first {
        gimli::Operation::Address { address } => Some(address),
        gimli::Operation::AddressIndex { index } => dwarf.address(unit, index).ok(),
        _ => None,
    }
}

fn string_attr(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
    at: gimli::DwAt,
) -> Option<String> {
    let v = entry.attr_value(at)?;
    let s = dwarf.attr_string(unit, v).ok()?;
    Some(String::from_utf8_lossy(s.slice()).into_owned())
}

fn attr_u64(entry: &Die<'_>, at: gimli::DwAt) -> Option<u64> {
    entry.attr(at).and_then(|a| a.udata_value())
}

/// The struct or union that type `t` is, through typedefs, qualifiers and arrays, with the
/// number of elements the arrays multiply to. An anonymous struct is named by the nearest
/// typedef.
fn composite(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    mut t: gimli::UnitOffset,
) -> Option<(ObjType, u64)> {
    let mut count = 1u64;
    let mut typedef_name: Option<String> = None;
    for _ in 0..32 {
        let e = unit.entry(t).ok()?;
        match e.tag() {
            dw::DW_TAG_typedef
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_atomic_type => {
                if e.tag() == dw::DW_TAG_typedef && typedef_name.is_none() {
                    typedef_name = string_attr(dwarf, unit, &e, dw::DW_AT_name);
                }
                match e.attr_value(dw::DW_AT_type) {
                    Some(AttributeValue::UnitRef(n)) => t = n,
                    _ => return None,
                }
            }
            dw::DW_TAG_array_type => {
                // The dimensions are the array's children: step onto the array, then into
                // its first child, then along the children (`next_sibling` from the array
                // itself would walk the array's siblings, and every array had one element).
                let mut children = unit.entries_at_offset(t).ok()?;
                children.next_entry().ok()?;
                let mut n = 1u64;
                if e.has_children() && children.next_entry().ok()? {
                    while let Some(c) = children.current() {
                        if c.tag() == dw::DW_TAG_subrange_type {
                            let dim = attr_u64(c, dw::DW_AT_count)
                                .or_else(|| attr_u64(c, dw::DW_AT_upper_bound).map(|u| u + 1))
                                .unwrap_or(0);
                            n = n.saturating_mul(dim);
                        }
                        if children.next_sibling().is_err() {
                            break;
                        }
                    }
                }
                count = count.saturating_mul(n);
                match e.attr_value(dw::DW_AT_type) {
                    Some(AttributeValue::UnitRef(n)) => t = n,
                    _ => return None,
                }
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                if e.attr(dw::DW_AT_declaration).is_some() {
                    return None;
                }
                let size = attr_u64(&e, dw::DW_AT_byte_size)?;
                let name = string_attr(dwarf, unit, &e, dw::DW_AT_name).or(typedef_name)?;
                if size == 0 || name.is_empty() {
                    return None;
                }
                return Some((ObjType { name, size }, count));
            }
            _ => return None,
        }
    }
    None
}

/// The struct a pointer type points to (one level of pointer, through typedefs).
fn pointee(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    mut t: gimli::UnitOffset,
) -> Option<ObjType> {
    for _ in 0..16 {
        let e = unit.entry(t).ok()?;
        match e.tag() {
            dw::DW_TAG_typedef
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type => match e.attr_value(dw::DW_AT_type) {
                Some(AttributeValue::UnitRef(n)) => t = n,
                _ => return None,
            },
            dw::DW_TAG_pointer_type | dw::DW_TAG_reference_type => {
                let Some(AttributeValue::UnitRef(n)) = e.attr_value(dw::DW_AT_type) else {
                    return None;
                };
                return composite(dwarf, unit, n).map(|(t, _)| t);
            }
            _ => return None,
        }
    }
    None
}

/// A C++ symbol as people write it (`ring::push`, without the parameter list, so that names
/// stay one word in tables); C and anything that does not demangle stay as they are.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    let Ok(sym) = cpp_demangle::Symbol::new(name) else {
        return name.to_string();
    };
    let opts = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    sym.demangle_with_options(&opts)
        .unwrap_or_else(|_| name.to_string())
}

#[cfg(test)]
mod demangle_tests {
    #[test]
    fn cxx_names_demangle_without_parameters_and_c_names_stay() {
        assert_eq!(super::demangle("_ZN4ring4pushEi"), "ring::push");
        assert_eq!(super::demangle("_Z6workerPv"), "worker");
        assert_eq!(super::demangle("update_load_avg"), "update_load_avg");
        assert_eq!(super::demangle("_Zbogus"), "_Zbogus");
    }
}
