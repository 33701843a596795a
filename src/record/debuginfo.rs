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
    /// What `DW_OP_fbreg` offsets count from, as an offset from `%rbp`: 0 when the frame
    /// base is `%rbp` (clang), 16 when it is the CFA (gcc; after `push %rbp; mov %rsp,
    /// %rbp`, as -O0 code has it). `None` for inlined copies and other frame bases.
    frame_from_rbp: Option<i64>,
    /// The frame base is `%rsp` itself (clang -O2): `DW_OP_fbreg` offsets are `%rsp` ones.
    frame_is_rsp: bool,
    /// The frame base is the CFA (gcc): `DW_OP_fbreg` offsets count from the caller's `%rsp`.
    frame_is_cfa: bool,
}

/// What a pointer points to, as its DWARF type says: a struct (an array of them on the
/// heap) or a scalar (an array of scalars), named as the source writes it (`size_t`, not
/// `unsigned long`; an anonymous struct by its typedef).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Elem {
    pub name: String,
    pub size: u64,
    pub kind: ElemKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemKind {
    Struct,
    Float,
    Int,
    Bool,
    Char,
    Pointer,
}

impl ElemKind {
    pub fn label(self) -> &'static str {
        match self {
            ElemKind::Struct => "struct",
            ElemKind::Float => "float",
            ElemKind::Int => "int",
            ElemKind::Bool => "bool",
            ElemKind::Char => "char",
            ElemKind::Pointer => "pointer",
        }
    }
}

/// A local variable or parameter of pointer type, with where it is declared: the static
/// way to name the block `double *buf = malloc(...)` allocates.
#[derive(Clone, Debug)]
struct PointerLocal {
    function: usize,
    name: String,
    file: String,
    line: u64,
    elem: Option<Elem>,
    /// `%rbp`-relative address of a variable that lives in the frame (-O0).
    rbp_offset: Option<i64>,
    /// Where an optimized variable lives in a register: (from, to, DWARF register).
    in_registers: Vec<(u64, u64, u16)>,
    /// Where it lives in the frame at an `%rsp` offset (-O2 code without a frame pointer,
    /// a variable whose address is taken): (from, to, offset).
    on_stack: Vec<(u64, u64, i64)>,
    /// Where it lives at an offset from the CFA, its frame base (gcc -O2 frames): (from,
    /// to, `DW_OP_fbreg` offset).
    on_cfa: Vec<(u64, u64, i64)>,
}

/// A global or static variable of pointer type: a slot a block's address can be stored into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointerGlobal {
    pub name: String,
    /// Link-time address (add the load bias for a PIE).
    pub addr: u64,
    pub elem: Option<Elem>,
}

/// A pointer variable found for an allocation call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteVariable {
    pub name: String,
    pub elem: Option<Elem>,
}

/// A code location resolved against the program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub symbol: Option<String>,
    pub offset: Option<u64>,
    pub source: Option<String>,
}

/// A call the compiler inlined (`DW_TAG_inlined_subroutine`): where its code lies, what it
/// calls, and the caller's line.
#[derive(Clone, Debug)]
struct InlinedCall {
    ranges: Vec<(u64, u64)>,
    name: String,
    call_file: String,
    call_line: u32,
    /// The inlined function returns a pointer.
    returns_pointer: bool,
    /// Its entry in `functions` (the struct types its code holds pointers to).
    function: usize,
}

#[derive(Default)]
pub struct DebugInfo {
    symbols: Vec<Symbol>,
    rows: Vec<Row>,
    files: Vec<String>,
    functions: Vec<FunctionTypes>,
    pointer_locals: Vec<PointerLocal>,
    /// The pointer locals by their functions' code ranges, built when first asked.
    locals_by_code: std::sync::OnceLock<CodeSpans>,
    pub globals: Vec<GlobalVar>,
    /// Globals and statics of pointer type.
    pub pointer_globals: Vec<PointerGlobal>,
    /// Executable sections: (address, bytes), to look at call instructions.
    code: Vec<(u64, Vec<u8>)>,
    pub has_dwarf: bool,
    /// Direct calls by target: the call instructions' addresses, decoded once when first
    /// asked (allocation wrappers' callers).
    calls: std::sync::OnceLock<HashMap<u64, Vec<u64>>>,
    inlined: Vec<InlinedCall>,
    /// The inlined calls by their code ranges, built when first asked (zstd's DWARF has
    /// tens of thousands: a scan of them all for each allocation's site was a sixth of
    /// `lineup record`'s post-processing).
    inlined_by_code: std::sync::OnceLock<CodeSpans>,
    /// `--alloc-wrapper` names: functions whose callers name the blocks they allocate.
    pub alloc_wrappers: Vec<String>,
    /// `.eh_frame` (address, bytes) and `.text`'s address: where the CFA is at a code
    /// address, for frame slots that gcc's DWARF places relative to it.
    eh_frame: Option<(u64, Vec<u8>)>,
    /// `.eh_frame`'s FDEs: (first address, length, offset), sorted; built when first asked.
    fde_index: std::sync::OnceLock<Vec<(u64, u64, usize)>>,
    text_addr: Option<u64>,
}

/// Code ranges `[lo, hi)`, each naming an item by its index, for "which items' ranges
/// hold this address" without a scan of them all: a recording asks it for every access
/// site it types, and zstd's DWARF has tens of thousands of pointer locals (the scans were
/// 87% of `lineup record`'s CPU on it).
#[derive(Default)]
struct CodeSpans {
    /// (lo, hi, item), sorted by `lo`.
    spans: Vec<(u64, u64, u32)>,
    /// The largest `hi` of `spans[..=i]`.
    max_hi: Vec<u64>,
}

impl CodeSpans {
    fn new(mut spans: Vec<(u64, u64, u32)>) -> CodeSpans {
        spans.sort_unstable();
        let max_hi = spans
            .iter()
            .scan(0u64, |m, s| {
                *m = (*m).max(s.1);
                Some(*m)
            })
            .collect();
        CodeSpans { spans, max_hi }
    }

    /// The items whose ranges hold `at`, in index order, each once.
    fn holding(&self, at: u64) -> Vec<u32> {
        let mut j = self.spans.partition_point(|s| s.0 <= at);
        let mut out = Vec::new();
        while j > 0 && self.max_hi[j - 1] > at {
            let (_, hi, item) = self.spans[j - 1];
            if at < hi {
                out.push(item);
            }
            j -= 1;
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

impl DebugInfo {
    /// The pointer locals of the functions whose code holds `site`, in the order they
    /// were read.
    fn locals_around(&self, site: u64) -> impl Iterator<Item = &PointerLocal> {
        let index = self.locals_by_code.get_or_init(|| {
            let mut spans = Vec::new();
            for (i, v) in self.pointer_locals.iter().enumerate() {
                for &(lo, hi) in &self.functions[v.function].ranges {
                    spans.push((lo, hi, i as u32));
                }
            }
            CodeSpans::new(spans)
        });
        index
            .holding(site)
            .into_iter()
            .map(|i| &self.pointer_locals[i as usize])
    }

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
        if let Some(s) = obj.section_by_name(".eh_frame")
            && let Ok(data) = s.data()
        {
            info.eh_frame = Some((s.address(), data.to_vec()));
        }
        info.text_addr = obj.section_by_name(".text").map(|s| s.address());
        // Sections, decompressed where needed (borrowed from `elf` where not); kept alive
        // for the borrow below.
        let mut owned: HashMap<&'static str, std::borrow::Cow<'_, [u8]>> = HashMap::new();
        for id in ALL_SECTIONS {
            let name = id.name();
            if let Some(s) = obj.section_by_name(name)
                && let Ok(data) = s.uncompressed_data()
            {
                owned.insert(name, data);
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
                owned.get(id.name()).map(|d| &d[..]).unwrap_or(&[]),
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
        info.pointer_globals.sort_by_key(|g| g.addr);
        Ok(info)
    }

    /// Whether ELF bytes `elf` carry DWARF (`.debug_info`), as [`DebugInfo::read`] would
    /// find, without reading it: the check before a recording.
    pub fn has_dwarf(elf: &[u8]) -> Result<bool, String> {
        let obj = object::File::parse(elf).map_err(|e| format!("not a valid ELF file: {e}"))?;
        Ok(obj
            .section_by_name(".debug_info")
            .is_some_and(|s| s.uncompressed_data().is_ok()))
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
                    let frame_from_rbp = frame_base_from_rbp(unit, entry);
                    let frame_is_rsp = frame_base_is(unit, entry, FrameBase::Rsp);
                    let frame_is_cfa = frame_base_is(unit, entry, FrameBase::Cfa);
                    if entry.tag() == dw::DW_TAG_inlined_subroutine
                        && let Some(call_line) =
                            attr_u64(entry, dw::DW_AT_call_line).filter(|&l| l > 0)
                    {
                        let call_file = attr_u64(entry, dw::DW_AT_call_file)
                            .map(|i| file_base(dwarf, unit, i))
                            .unwrap_or_default();
                        self.inlined.push(InlinedCall {
                            ranges: ranges.clone(),
                            name: name_of(dwarf, unit, entry).unwrap_or_default(),
                            call_file,
                            call_line: call_line as u32,
                            returns_pointer: type_of(unit, entry)
                                .and_then(|t| pointer_elem(dwarf, unit, t))
                                .is_some(),
                            function: self.functions.len(),
                        });
                    }
                    self.functions.push(FunctionTypes {
                        ranges,
                        types,
                        frame_from_rbp,
                        frame_is_rsp,
                        frame_is_cfa,
                    });
                    scopes.push((depth, self.functions.len() - 1));
                }
                dw::DW_TAG_variable | dw::DW_TAG_formal_parameter => {
                    let pointer = type_of(unit, entry).and_then(|t| pointer_elem(dwarf, unit, t));
                    if let Some(addr) = static_address(dwarf, unit, entry) {
                        if let Some(elem) = pointer {
                            let name = name_of(dwarf, unit, entry).unwrap_or_default();
                            self.pointer_globals
                                .push(PointerGlobal { name, addr, elem });
                        } else if let Some(t) = type_of(unit, entry)
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
                    } else if let Some(&(_, f)) = scopes.last() {
                        if let Some(elem) = pointer
                            && let Some(name) = name_of(dwarf, unit, entry)
                            && let Some(line) = through_origin(unit, entry, dw::DW_AT_decl_line)
                                .and_then(|a| a.udata_value())
                        {
                            let file = through_origin(unit, entry, dw::DW_AT_decl_file)
                                .and_then(|a| a.udata_value())
                                .map(|i| file_base(dwarf, unit, i))
                                .unwrap_or_default();
                            // The frame base of the nearest function that has one.
                            let base = scopes
                                .iter()
                                .rev()
                                .find_map(|&(_, g)| self.functions[g].frame_from_rbp);
                            let rbp_offset =
                                base.and_then(|b| fbreg_offset(unit, entry).map(|o| o + b));
                            let in_registers = register_ranges(dwarf, unit, entry);
                            let mut on_stack = rsp_ranges(dwarf, unit, entry);
                            if self.functions[f].frame_is_rsp
                                && let Some(off) = fbreg_offset(unit, entry)
                            {
                                on_stack.extend(
                                    self.functions[f]
                                        .ranges
                                        .iter()
                                        .map(|&(lo, hi)| (lo, hi, off)),
                                );
                            }
                            let mut on_cfa = Vec::new();
                            if scopes
                                .iter()
                                .rev()
                                .any(|&(_, g)| self.functions[g].frame_is_cfa)
                            {
                                on_cfa = fbreg_ranges(dwarf, unit, entry);
                                if let Some(off) = fbreg_offset(unit, entry) {
                                    on_cfa.extend(
                                        self.functions[f]
                                            .ranges
                                            .iter()
                                            .map(|&(lo, hi)| (lo, hi, off)),
                                    );
                                }
                            }
                            self.pointer_locals.push(PointerLocal {
                                function: f,
                                name,
                                file,
                                line,
                                elem,
                                rbp_offset,
                                in_registers,
                                on_stack,
                                on_cfa,
                            });
                        }
                        if let Some(t) = type_of(unit, entry).and_then(|t| pointee(dwarf, unit, t))
                            && !self.functions[f].types.contains(&t)
                        {
                            self.functions[f].types.push(t);
                        }
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
        if let Some((start, name)) = self.function_at(addr) {
            r.symbol = Some(name.to_string());
            r.offset = Some(addr - start);
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

    /// `file.c` and line of code address `addr` (link-time), from the line table.
    pub fn line_of(&self, addr: u64) -> Option<(&str, u32)> {
        let j = self.rows.partition_point(|row| row.addr <= addr);
        let row = self.rows.get(j.checked_sub(1)?)?;
        (!row.end && row.line > 0).then(|| (self.files[row.file as usize].as_str(), row.line))
    }

    /// The pointer variables declared on the line of the call at `site` (link-time), in the
    /// functions (and inlined calls) around it: `double *buf = malloc(n)` names `buf`, a
    /// `double` array. Typed ones first.
    pub fn variables_declared_at(&self, site: u64) -> Vec<SiteVariable> {
        let Some((file, line)) = self.alloc_line(site) else {
            return Vec::new();
        };
        let file = file.as_str();
        let mut out: Vec<SiteVariable> = Vec::new();
        for v in self.locals_around(site) {
            if v.line == u64::from(line) && (v.file.is_empty() || v.file == file) {
                let s = SiteVariable {
                    name: v.name.clone(),
                    elem: v.elem.clone(),
                };
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out.sort_by_key(|v| v.elem.is_none());
        out
    }

    /// The pointer the result of the call at `site` (link-time) is first stored into, from
    /// the code after the call (x86-64): the result register, and registers it is copied
    /// into, followed to the first 8-byte store: into a global pointer variable
    /// (`%rip`-relative) or a local in the frame (`%rbp`-relative, -O0). Instrumentation
    /// calls (`__tsan_write8(&slot)` before the store) are stepped over; any other call,
    /// jump or overwrite of the registers ends the search.
    pub fn variable_assigned_at(&self, site: u64) -> Option<SiteVariable> {
        use iced_x86::{Decoder, DecoderOptions, FlowControl, Mnemonic, OpKind, Register};
        let (start, bytes) = self
            .code
            .iter()
            .find(|(start, bytes)| site >= *start && site < *start + bytes.len() as u64)?;
        let from = (site - start) as usize;
        let mut decoder = Decoder::with_ip(64, &bytes[from..], site, DecoderOptions::NONE);
        let call = decoder.decode();
        if call.flow_control() != FlowControl::Call {
            return None;
        }
        let volatile = CALL_CLOBBERED;
        let mut holding: Vec<Register> = vec![Register::RAX];
        let mut spills: Vec<i64> = Vec::new();
        for _ in 0..24 {
            if !decoder.can_decode() || (holding.is_empty() && spills.is_empty()) {
                return None;
            }
            // An optimized local that lives, here, in a register holding the result.
            if let Some(v) = self.local_in_registers(site, decoder.ip(), &holding) {
                return Some(v);
            }
            let ins = decoder.decode();
            match ins.flow_control() {
                FlowControl::Call => {
                    let target = ins.near_branch_target();
                    let hook = self
                        .resolve(target)
                        .symbol
                        .is_some_and(|s| s.starts_with("__tsan_"));
                    if !hook {
                        return None;
                    }
                    holding.retain(|r| !volatile.contains(r));
                    continue;
                }
                FlowControl::Next => {}
                // A null check's branch: the fall-through path is the assignment's.
                FlowControl::ConditionalBranch => continue,
                _ => return None,
            }
            if ins.mnemonic() == Mnemonic::Mov
                && ins.op_count() == 2
                && ins.op1_kind() == OpKind::Register
                && holding.contains(&ins.op1_register())
            {
                if ins.op0_kind() == OpKind::Register {
                    let dst = ins.op0_register();
                    if dst.size() == 8 && !holding.contains(&dst) {
                        holding.push(dst);
                    }
                    continue;
                }
                if ins.op0_kind() == OpKind::Memory && ins.op1_register().size() == 8 {
                    if ins.is_ip_rel_memory_operand() {
                        let g = self.pointer_global_at(ins.ip_rel_memory_address())?;
                        return Some(SiteVariable {
                            name: g.name.clone(),
                            elem: g.elem.clone(),
                        });
                    }
                    if ins.memory_base() == Register::RBP && ins.memory_index() == Register::None {
                        let disp = ins.memory_displacement64() as i64;
                        let local = self
                            .locals_around(site)
                            .find(|v| v.rbp_offset == Some(disp))
                            .map(|v| SiteVariable {
                                name: v.name.clone(),
                                elem: v.elem.clone(),
                            });
                        if local.is_some() {
                            return local;
                        }
                        // No variable lives there: a spill around the instrumentation call
                        // (clang -O0: `mov %rax,-0x68(%rbp); call __tsan_write8; mov
                        // -0x68(%rbp),%rax`), reloaded below.
                        spills.push(disp);
                        continue;
                    }
                    // A member of an object whose address is in a register: the recorded
                    // store tells which (`ObjectMap`), not the code.
                    return None;
                }
            }
            // A reload of a spilled result.
            if ins.mnemonic() == Mnemonic::Mov
                && ins.op_count() == 2
                && ins.op0_kind() == OpKind::Register
                && ins.op0_register().size() == 8
                && ins.op1_kind() == OpKind::Memory
                && ins.memory_base() == Register::RBP
                && ins.memory_index() == Register::None
                && spills.contains(&(ins.memory_displacement64() as i64))
            {
                let dst = ins.op0_register();
                if !holding.contains(&dst) {
                    holding.push(dst);
                }
                continue;
            }
            // Anything else that writes a register holding the result ends its holding.
            if ins.op_count() > 0 && ins.op0_kind() == OpKind::Register {
                let dst = ins.op0_register().full_register();
                holding.retain(|r| *r != dst);
            }
        }
        None
    }

    /// The pointer variable whose address the call at `site` (link-time) gets as its first
    /// argument: the out-parameter of `posix_memalign(&p, align, n)`, which the allocator
    /// stores the block's address into. The instruction that last set `%rdi` before the
    /// call (x86-64, the function decoded from its start) is a `lea` of: a global pointer
    /// (`%rip`-relative); a frame slot at -O0 (`%rbp`, the local living there); a frame
    /// slot at -O2 (`%rsp`): the local whose location list puts it in that slot there, else
    /// the local held by the register the slot is first reloaded into after the call (gcc
    /// describes such a variable only once it is in a register).
    pub fn out_parameter_at(&self, site: u64) -> Option<SiteVariable> {
        use iced_x86::{
            Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic,
            OpAccess, Register,
        };
        let (start, _) = self.function_at(site)?;
        if site - start > 1 << 16 {
            return None;
        }
        let (cstart, bytes) = self
            .code
            .iter()
            .find(|(s, b)| start >= *s && site < *s + b.len() as u64)?;
        let code = &bytes[(start - cstart) as usize..];
        let mut d = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
        let mut info = InstructionInfoFactory::new();
        let mut setter: Option<Instruction> = None;
        let mut rsp_moved = false;
        let call = loop {
            if !d.can_decode() {
                return None;
            }
            let ins = d.decode();
            if ins.ip() >= site {
                break (ins.ip() == site && ins.flow_control() == FlowControl::Call)
                    .then_some(ins)?;
            }
            if ins.flow_control() == FlowControl::Call {
                // A call in between clobbers `%rdi`.
                setter = None;
                continue;
            }
            let writes = |info: &mut InstructionInfoFactory, reg: Register| {
                info.info(&ins).used_registers().iter().any(|u| {
                    u.register().full_register() == reg
                        && matches!(
                            u.access(),
                            OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite
                        )
                })
            };
            if writes(&mut info, Register::RDI) {
                setter = Some(ins);
                rsp_moved = false;
            } else if setter.is_some() && writes(&mut info, Register::RSP) {
                rsp_moved = true;
            }
        };
        let lea = setter
            .filter(|i| i.mnemonic() == Mnemonic::Lea && i.memory_index() == Register::None)?;
        let named = |v: &PointerLocal| SiteVariable {
            name: v.name.clone(),
            elem: v.elem.clone(),
        };
        let disp = lea.memory_displacement64() as i64;
        match lea.memory_base() {
            Register::RIP => self
                .pointer_global_at(lea.ip_rel_memory_address())
                .map(|g| SiteVariable {
                    name: g.name.clone(),
                    elem: g.elem.clone(),
                }),
            Register::RBP => self
                .locals_around(site)
                .find(|v| v.rbp_offset == Some(disp))
                .map(named),
            Register::RSP if !rsp_moved => self
                .stack_local_at(site, lea.ip(), disp)
                .or_else(|| self.stack_local_at(site, call.next_ip(), disp))
                .map(named)
                .or_else(|| self.slot_followed_after(site, call.next_ip(), disp)),
            _ => None,
        }
    }

    /// The pointer local of the function around `site` that lives, at code address `ip`,
    /// in the frame slot `%rsp + disp`: by its location list (`DW_OP_breg7`), or by its
    /// frame offset and the CFA there (gcc).
    fn stack_local_at(&self, site: u64, ip: u64, disp: i64) -> Option<&PointerLocal> {
        let cfa_slot = self.cfa_above_rsp(ip).map(|k| disp - k);
        self.locals_around(site).find(|v| {
            v.on_stack
                .iter()
                .any(|&(lo, hi, off)| off == disp && ip >= lo && ip < hi)
                || cfa_slot.is_some_and(|c| {
                    v.on_cfa
                        .iter()
                        .any(|&(lo, hi, off)| off == c && ip >= lo && ip < hi)
                })
        })
    }

    /// How far the CFA lies above `%rsp` at code address `pc` (link-time), from `.eh_frame`.
    fn cfa_above_rsp(&self, pc: u64) -> Option<i64> {
        use gimli::UnwindSection;
        let (addr, data) = self.eh_frame.as_ref()?;
        let eh = gimli::EhFrame::new(data, gimli::LittleEndian);
        let bases = gimli::BaseAddresses::default()
            .set_eh_frame(*addr)
            .set_text(self.text_addr?);
        // The FDE covering `pc`, from an index of them all built once: gimli's own lookup
        // parses every entry before it on each call (4% of a recording of zstd's CPU).
        let fdes = self.fde_index.get_or_init(|| {
            let mut out = Vec::new();
            let mut entries = eh.entries(&bases);
            while let Ok(Some(entry)) = entries.next() {
                if let gimli::CieOrFde::Fde(partial) = entry
                    && let Ok(fde) = partial.parse(gimli::EhFrame::cie_from_offset)
                {
                    out.push((fde.initial_address(), fde.len(), fde.offset()));
                }
            }
            out.sort_unstable();
            out
        });
        let i = fdes.partition_point(|f| f.0 <= pc);
        let &(start, len, offset) = fdes.get(i.checked_sub(1)?)?;
        if pc >= start.saturating_add(len) {
            return None;
        }
        let fde = eh
            .fde_from_offset(
                &bases,
                gimli::EhFrameOffset(offset),
                gimli::EhFrame::cie_from_offset,
            )
            .ok()?;
        let mut ctx = Box::new(gimli::UnwindContext::new());
        let row = fde
            .unwind_info_for_address(&eh, &bases, &mut ctx, pc)
            .ok()?;
        match row.cfa() {
            gimli::CfaRule::RegisterAndOffset { register, offset }
                if *register == gimli::X86_64::RSP =>
            {
                Some(*offset)
            }
            _ => None,
        }
    }

    /// Where the address stored into the frame slot `%rsp + disp` by the call at `site`
    /// goes next (straight-line code from `from`: a null check's fall-through, hook calls
    /// stepped over): reloaded into a register that a pointer local's location list places
    /// there, or copied on into another frame slot that is a pointer local's home (gcc
    /// describes the variable by its home, not by the temporary the call wrote).
    fn slot_followed_after(&self, site: u64, from: u64, disp: i64) -> Option<SiteVariable> {
        use iced_x86::{
            Decoder, DecoderOptions, FlowControl, InstructionInfoFactory, Mnemonic, OpAccess,
            OpKind, Register,
        };
        let (start, bytes) = self
            .code
            .iter()
            .find(|(start, bytes)| from >= *start && from < *start + bytes.len() as u64)?;
        let mut d = Decoder::with_ip(
            64,
            &bytes[(from - start) as usize..],
            from,
            DecoderOptions::NONE,
        );
        let named = |v: &PointerLocal| SiteVariable {
            name: v.name.clone(),
            elem: v.elem.clone(),
        };
        let mut info = InstructionInfoFactory::new();
        let mut holding: Vec<Register> = Vec::new();
        for _ in 0..32 {
            if !d.can_decode() {
                return None;
            }
            if !holding.is_empty()
                && let Some(v) = self.local_in_registers(site, d.ip(), &holding)
            {
                return Some(v);
            }
            let ins = d.decode();
            match ins.flow_control() {
                FlowControl::Next | FlowControl::ConditionalBranch => {}
                FlowControl::Call => {
                    holding.retain(|r| !CALL_CLOBBERED.contains(r));
                    continue;
                }
                _ => return None,
            }
            let rsp_slot = |op: u32| {
                (ins.op_kind(op) == OpKind::Memory
                    && ins.memory_base() == Register::RSP
                    && ins.memory_index() == Register::None)
                    .then(|| ins.memory_displacement64() as i64)
            };
            if ins.mnemonic() == Mnemonic::Mov && ins.op_count() == 2 {
                if ins.op0_kind() == OpKind::Register && ins.op0_register().size() == 8 {
                    let dst = ins.op0_register();
                    let holds = rsp_slot(1) == Some(disp)
                        || (ins.op1_kind() == OpKind::Register
                            && holding.contains(&ins.op1_register()));
                    holding.retain(|r| *r != dst);
                    if holds {
                        holding.push(dst);
                    }
                    continue;
                }
                if ins.op1_kind() == OpKind::Register
                    && holding.contains(&ins.op1_register())
                    && let Some(to) = rsp_slot(0)
                    && let Some(v) = self.stack_local_at(site, ins.ip(), to)
                {
                    return Some(named(v));
                }
            }
            let mut moves_rsp = false;
            for u in info.info(&ins).used_registers() {
                if matches!(
                    u.access(),
                    OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite
                ) {
                    let r = u.register().full_register();
                    moves_rsp |= r == Register::RSP;
                    holding.retain(|x| *x != r);
                }
            }
            // The slot's offset changes with `%rsp` (a push, a frame adjustment).
            if moves_rsp {
                return None;
            }
        }
        None
    }

    /// The pointer local of the function around `site` that lives at `ip` in one of the
    /// registers `regs` (its location list says so).
    fn local_in_registers(
        &self,
        site: u64,
        ip: u64,
        regs: &[iced_x86::Register],
    ) -> Option<SiteVariable> {
        use iced_x86::Register as R;
        // DWARF register numbers of x86-64.
        const DWARF: [iced_x86::Register; 16] = [
            R::RAX,
            R::RDX,
            R::RCX,
            R::RBX,
            R::RSI,
            R::RDI,
            R::RBP,
            R::RSP,
            R::R8,
            R::R9,
            R::R10,
            R::R11,
            R::R12,
            R::R13,
            R::R14,
            R::R15,
        ];
        self.locals_around(site)
            .find(|v| {
                v.in_registers.iter().any(|&(lo, hi, r)| {
                    ip >= lo
                        && ip < hi
                        && DWARF
                            .get(usize::from(r))
                            .is_some_and(|reg| regs.contains(reg))
                })
            })
            .map(|v| SiteVariable {
                name: v.name.clone(),
                elem: v.elem.clone(),
            })
    }

    /// Allocation wrappers the compiler inlined around the allocation call at `site`
    /// (link-time), innermost first, and the line of the call to the outermost of them:
    /// an inlined `static void *xmalloc(size_t)` leaves its malloc call in each caller with
    /// the wrapper's own source line; the inlined call's `DW_AT_call_line` is the caller's.
    /// A wrapper here: named by `--alloc-wrapper`, or returning a pointer while its code
    /// holds no struct pointer (a typed factory names its own blocks).
    pub fn inlined_wrappers(&self, site: u64) -> Option<(Vec<String>, String, u32)> {
        // Innermost first: the entries were read depth first, so a call inlined into
        // another comes after it.
        let index = self.inlined_by_code.get_or_init(|| {
            let mut spans = Vec::new();
            for (i, c) in self.inlined.iter().enumerate() {
                for &(lo, hi) in &c.ranges {
                    spans.push((lo, hi, i as u32));
                }
            }
            CodeSpans::new(spans)
        });
        let around: Vec<&InlinedCall> = index
            .holding(site)
            .into_iter()
            .rev()
            .map(|i| &self.inlined[i as usize])
            .collect();
        let mut names = Vec::new();
        let mut call = None;
        for c in around {
            let wrapper = self.alloc_wrappers.iter().any(|w| *w == c.name)
                || (c.returns_pointer && self.functions[c.function].types.is_empty());
            if !wrapper {
                break;
            }
            names.push(c.name.clone());
            call = Some((c.call_file.clone(), c.call_line));
        }
        let (file, line) = call?;
        Some((names, file, line))
    }

    /// `file.c` and line that name the allocation call at `site` (link-time): the line of the
    /// call to an inlined wrapper around it ([`Self::inlined_wrappers`]), else its own.
    pub fn alloc_line(&self, site: u64) -> Option<(String, u32)> {
        if let Some((_, file, line)) = self.inlined_wrappers(site) {
            return Some((file, line));
        }
        self.line_of(site).map(|(f, l)| (f.to_string(), l))
    }

    /// [`Self::resolve`] of an allocation call, its source by [`Self::alloc_line`].
    pub fn resolve_alloc(&self, site: u64) -> Resolved {
        let mut r = self.resolve(site);
        if let Some((file, line)) = self.alloc_line(site) {
            r.source = Some(format!("{file}:{line}"));
        }
        r
    }

    /// The start of the function symbol named `name` (demangled), if the program has one.
    pub fn function_named(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.start)
    }

    /// The function symbol holding code address `addr` (link-time): its start and name.
    /// A symbol without a size (`_init`, `_fini`, hand-written assembly) runs to the next
    /// one, within the code that holds it: an address past the program's code (a return
    /// address into libc, shifted by the program's bias) is in no function of it.
    pub fn function_at(&self, addr: u64) -> Option<(u64, &str)> {
        let i = self.symbols.partition_point(|s| s.start <= addr);
        let s = self.symbols.get(i.checked_sub(1)?)?;
        let next = self.symbols.get(i).map_or(u64::MAX, |n| n.start);
        let in_code = |a: u64| {
            self.code.is_empty()
                || self
                    .code
                    .iter()
                    .any(|(start, bytes)| a >= *start && a < start + bytes.len() as u64)
        };
        let unsized_holds = s.size == 0 && addr < next && in_code(addr) && in_code(s.start);
        (addr < s.start + s.size.max(1) || unsized_holds).then_some((s.start, s.name.as_str()))
    }

    /// The direct `call` instructions (link-time addresses) to the function starting at
    /// `target`, from decoding every function symbol's code once.
    pub fn calls_to(&self, target: u64) -> &[u64] {
        use iced_x86::{Decoder, DecoderOptions, FlowControl, OpKind};
        let calls = self.calls.get_or_init(|| {
            let mut by_target: HashMap<u64, Vec<u64>> = HashMap::new();
            for f in self.symbols.iter().filter(|s| s.size > 0) {
                let Some((start, bytes)) = self.code.iter().find(|(start, bytes)| {
                    f.start >= *start && f.start + f.size <= *start + bytes.len() as u64
                }) else {
                    continue;
                };
                let from = (f.start - start) as usize;
                let code = &bytes[from..from + f.size as usize];
                let mut d = Decoder::with_ip(64, code, f.start, DecoderOptions::NONE);
                while d.can_decode() {
                    let ins = d.decode();
                    if ins.flow_control() == FlowControl::Call
                        && ins.op0_kind() == OpKind::NearBranch64
                    {
                        by_target
                            .entry(ins.near_branch_target())
                            .or_default()
                            .push(ins.ip());
                    }
                }
            }
            by_target
        });
        calls.get(&target).map_or(&[], Vec::as_slice)
    }

    /// Does the function holding the call at `site` (link-time) hand the call's result back
    /// to its own caller: is the result register (or a register or frame slot it was copied
    /// into) in `%rax` at a `ret` on some path after the call (x86-64)? That is what an
    /// allocation wrapper does (`void *xmalloc(size_t n) { void *p = malloc(n); if (!p)
    /// abort(); return p; }`): its callers, not its own call, say what the block is.
    pub fn returns_result(&self, site: u64) -> bool {
        use iced_x86::{
            Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess,
            OpKind, Register,
        };
        let decode = |ip: u64| -> Option<Instruction> {
            let (start, bytes) = self
                .code
                .iter()
                .find(|(start, bytes)| ip >= *start && ip < *start + bytes.len() as u64)?;
            let mut d = Decoder::with_ip(
                64,
                &bytes[(ip - start) as usize..],
                ip,
                DecoderOptions::NONE,
            );
            let ins = d.decode();
            (!ins.is_invalid()).then_some(ins)
        };
        let Some(call) = decode(site) else {
            return false;
        };
        if call.flow_control() != FlowControl::Call {
            return false;
        }
        let volatile = CALL_CLOBBERED;
        // A frame slot: base register (%rbp or %rsp) and displacement.
        type Slot = (Register, i64);
        let slot_of = |ins: &Instruction, op: u32| -> Option<Slot> {
            (ins.op_kind(op) == OpKind::Memory
                && matches!(ins.memory_base(), Register::RBP | Register::RSP)
                && ins.memory_index() == Register::None)
                .then(|| (ins.memory_base(), ins.memory_displacement64() as i64))
        };
        let mut info = InstructionInfoFactory::new();
        let mut work: Vec<(u64, Vec<Register>, Vec<Slot>)> =
            vec![(call.next_ip(), vec![Register::RAX], Vec::new())];
        let mut seen: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut budget = 512;
        while let Some((mut ip, mut regs, mut slots)) = work.pop() {
            loop {
                budget -= 1;
                if budget == 0 {
                    return false;
                }
                if (regs.is_empty() && slots.is_empty())
                    || !self.same_function(site, ip)
                    || !seen.insert(ip)
                {
                    break;
                }
                let Some(ins) = decode(ip) else { break };
                ip = ins.next_ip();
                match ins.flow_control() {
                    FlowControl::Return => {
                        if regs.contains(&Register::RAX) {
                            return true;
                        }
                        break;
                    }
                    FlowControl::Call => {
                        // A callee keeps the callee-saved registers and the frame.
                        regs.retain(|r| !volatile.contains(r));
                        continue;
                    }
                    FlowControl::UnconditionalBranch => {
                        if ins.op0_kind() == OpKind::NearBranch64 {
                            ip = ins.near_branch_target();
                            continue;
                        }
                        break;
                    }
                    FlowControl::ConditionalBranch => {
                        work.push((ins.near_branch_target(), regs.clone(), slots.clone()));
                        continue;
                    }
                    FlowControl::Next => {}
                    _ => break,
                }
                if ins.mnemonic() == iced_x86::Mnemonic::Mov && ins.op_count() == 2 {
                    let src_reg = (ins.op1_kind() == OpKind::Register)
                        .then(|| ins.op1_register())
                        .filter(|r| r.size() == 8);
                    let from_slot = slot_of(&ins, 1);
                    let holds = src_reg.is_some_and(|r| regs.contains(&r))
                        || from_slot.is_some_and(|s| slots.contains(&s));
                    if ins.op0_kind() == OpKind::Register {
                        let dst = ins.op0_register().full_register();
                        regs.retain(|r| *r != dst);
                        if holds && ins.op0_register().size() == 8 {
                            regs.push(dst);
                        }
                        continue;
                    }
                    if let Some(to) = slot_of(&ins, 0) {
                        slots.retain(|s| *s != to);
                        if holds && src_reg.is_some() {
                            slots.push(to);
                        }
                        continue;
                    }
                }
                // Anything else that writes a register holding the result ends its holding
                // (a `test %rax,%rax` reads it only).
                for r in info.info(&ins).used_registers() {
                    if matches!(
                        r.access(),
                        OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite
                    ) {
                        let full = r.register().full_register();
                        regs.retain(|x| *x != full);
                    }
                }
            }
        }
        false
    }

    /// The element type of the pointer an access went through: the instrumentation call
    /// at `call` (link-time) gets the address in `%rdi`; the code of its function from the
    /// start up to the call is followed (straight through, x86-64) for what `%rdi` was
    /// computed from: a load of a typed pointer variable (a global, `%rip`-relative; a local
    /// in the frame, -O0), or, optimized, a local whose location list puts it in `%rdi`
    /// there; copies (`mov`) and pointer arithmetic (`lea`, `add`) keep the type. `t->hits++`
    /// through `struct tally *t` is an access to a `tally`.
    pub fn pointer_used_at(&self, call: u64) -> Option<Elem> {
        use iced_x86::{
            Decoder, DecoderOptions, FlowControl, InstructionInfoFactory, Mnemonic, OpAccess,
            OpKind, Register,
        };
        let (start, _) = self.function_at(call)?;
        if call - start > 1 << 16 {
            return None;
        }
        if let Some(v) = self.local_in_registers(call, call, &[Register::RDI])
            && v.elem.is_some()
        {
            return v.elem;
        }
        let (cstart, bytes) = self
            .code
            .iter()
            .find(|(s, b)| start >= *s && call < *s + b.len() as u64)?;
        let code = &bytes[(start - cstart) as usize..(call - cstart) as usize];
        let mut d = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
        let mut info = InstructionInfoFactory::new();
        let mut held: HashMap<Register, Elem> = HashMap::new();
        let volatile = CALL_CLOBBERED;
        while d.can_decode() {
            let ins = d.decode();
            if ins.flow_control() == FlowControl::Call {
                for r in volatile {
                    held.remove(&r);
                }
                continue;
            }
            let dst = (ins.op_count() > 0 && ins.op0_kind() == OpKind::Register)
                .then(|| ins.op0_register())
                .filter(|r| r.size() == 8);
            // A register the code did not load here may still hold a typed local: its
            // location list says so (-O2: `args` in `%rbx` across the worker's loop).
            let held_or_local = |held: &HashMap<Register, Elem>, r: Register| {
                let r = r.full_register();
                held.get(&r).cloned().or_else(|| {
                    self.local_in_registers(call, ins.ip(), &[r])
                        .and_then(|v| v.elem)
                })
            };
            let typed: Option<Option<Elem>> = match (ins.mnemonic(), dst) {
                (Mnemonic::Mov, Some(_)) if ins.op1_kind() == OpKind::Register => {
                    Some(held_or_local(&held, ins.op1_register()))
                }
                (Mnemonic::Mov, Some(_)) if ins.op1_kind() == OpKind::Memory => {
                    if ins.is_ip_rel_memory_operand() {
                        Some(
                            self.pointer_global_at(ins.ip_rel_memory_address())
                                .and_then(|g| g.elem.clone()),
                        )
                    } else if ins.memory_base() == Register::RBP
                        && ins.memory_index() == Register::None
                    {
                        let disp = ins.memory_displacement64() as i64;
                        Some(
                            self.locals_around(call)
                                .find(|v| v.rbp_offset == Some(disp))
                                .and_then(|v| v.elem.clone()),
                        )
                    } else if ins.memory_base() == Register::RSP
                        && ins.memory_index() == Register::None
                    {
                        // -O2 without a frame pointer: a local living in an `%rsp` slot.
                        let disp = ins.memory_displacement64() as i64;
                        Some(
                            self.stack_local_at(call, ins.ip(), disp)
                                .and_then(|v| v.elem.clone()),
                        )
                    } else {
                        Some(None)
                    }
                }
                // Pointer arithmetic within the object: `&t->hits`, `&table[i]`.
                (Mnemonic::Lea, Some(_))
                    if ins.memory_base() != Register::RIP
                        && ins.memory_base() != Register::None =>
                {
                    Some(held_or_local(&held, ins.memory_base()))
                }
                // An index added to the pointer, or the pointer added to an index.
                (Mnemonic::Add, Some(r)) => {
                    Some(held.get(&r.full_register()).cloned().or_else(|| {
                        (ins.op1_kind() == OpKind::Register)
                            .then(|| held.get(&ins.op1_register().full_register()).cloned())
                            .flatten()
                    }))
                }
                (Mnemonic::Sub, Some(r)) => Some(held.get(&r.full_register()).cloned()),
                _ => None,
            };
            match (typed, dst) {
                (Some(t), Some(r)) => {
                    let r = r.full_register();
                    match t {
                        Some(e) => {
                            held.insert(r, e);
                        }
                        None => {
                            held.remove(&r);
                        }
                    }
                }
                _ => {
                    for u in info.info(&ins).used_registers() {
                        if matches!(
                            u.access(),
                            OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite
                        ) {
                            held.remove(&u.register().full_register());
                        }
                    }
                }
            }
        }
        held.remove(&Register::RDI)
    }

    /// Do code addresses `a` and `b` (link-time) lie in one function (by symbol)?
    pub fn same_function(&self, a: u64, b: u64) -> bool {
        let i = self.symbols.partition_point(|s| s.start <= a);
        let j = self.symbols.partition_point(|s| s.start <= b);
        i > 0 && i == j
    }

    /// Adds pointer slots at fixed addresses (pointer members of global structs) to the
    /// pointer globals; a variable of its own at the same address keeps its name.
    pub fn add_pointer_slots(&mut self, slots: Vec<PointerGlobal>) {
        self.pointer_globals.extend(slots);
        self.pointer_globals.sort_by_key(|g| g.addr);
        self.pointer_globals.dedup_by_key(|g| g.addr);
    }

    /// The pointer global at link-time address `addr`.
    pub fn pointer_global_at(&self, addr: u64) -> Option<&PointerGlobal> {
        let i = self.pointer_globals.partition_point(|g| g.addr < addr);
        self.pointer_globals.get(i).filter(|g| g.addr == addr)
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

/// The registers a call may change (System V x86-64): what a call site's result or a value
/// held across it cannot stay in.
const CALL_CLOBBERED: [iced_x86::Register; 9] = [
    iced_x86::Register::RAX,
    iced_x86::Register::RCX,
    iced_x86::Register::RDX,
    iced_x86::Register::RSI,
    iced_x86::Register::RDI,
    iced_x86::Register::R8,
    iced_x86::Register::R9,
    iced_x86::Register::R10,
    iced_x86::Register::R11,
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

/// Typedefs and qualifiers: another name for a type, with its layout.
fn is_alias(tag: gimli::DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_typedef
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_atomic_type
    )
}

/// The type an entry refers to (`DW_AT_type`), when it is in the same unit; `None` for
/// `void`.
fn referred_type(e: &Die<'_>) -> Option<gimli::UnitOffset> {
    match e.attr_value(dw::DW_AT_type) {
        Some(AttributeValue::UnitRef(n)) => Some(n),
        _ => None,
    }
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
            tag if is_alias(tag) => {
                if tag == dw::DW_TAG_typedef && typedef_name.is_none() {
                    typedef_name = string_attr(dwarf, unit, &e, dw::DW_AT_name);
                }
                t = referred_type(&e)?;
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

/// A subprogram's frame base as an offset from `%rbp` (see `FunctionTypes`).
fn frame_base_from_rbp(unit: &Unit<'_>, entry: &Die<'_>) -> Option<i64> {
    let Some(AttributeValue::Exprloc(expr)) = entry.attr_value(dw::DW_AT_frame_base) else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let first = ops.next().ok()??;
    if !matches!(ops.next(), Ok(None)) {
        return None;
    }
    match first {
        gimli::Operation::CallFrameCFA => Some(16),
        // DWARF register 6 is %rbp on x86-64.
        gimli::Operation::Register { register } if register.0 == 6 => Some(0),
        gimli::Operation::RegisterOffset {
            register, offset, ..
        } if register.0 == 6 => Some(offset),
        _ => None,
    }
}

/// The ranges of a variable's location list whose expression is one operation that `pick`
/// accepts, with what it took from it.
fn single_op_ranges<T>(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
    pick: impl Fn(gimli::Operation<Slice<'_>>) -> Option<T>,
) -> Vec<(u64, u64, T)> {
    let mut out = Vec::new();
    let Some(value) = entry.attr_value(dw::DW_AT_location) else {
        return out;
    };
    let Ok(Some(mut list)) = dwarf.attr_locations(unit, value) else {
        return out;
    };
    while let Ok(Some(e)) = list.next() {
        let mut ops = e.data.operations(unit.encoding());
        if let Ok(Some(op)) = ops.next()
            && let Some(v) = pick(op)
            && matches!(ops.next(), Ok(None))
            && e.range.end > e.range.begin
        {
            out.push((e.range.begin, e.range.end, v));
        }
    }
    out
}

/// The ranges of a variable's location list where it is a register (`DW_OP_regN`).
fn register_ranges(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
) -> Vec<(u64, u64, u16)> {
    single_op_ranges(dwarf, unit, entry, |op| match op {
        gimli::Operation::Register { register } => Some(register.0),
        _ => None,
    })
}

/// The ranges of a variable's location list where it is in memory at `%rsp` plus an offset
/// (`DW_OP_breg7 N`).
fn rsp_ranges(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
) -> Vec<(u64, u64, i64)> {
    single_op_ranges(dwarf, unit, entry, |op| match op {
        gimli::Operation::RegisterOffset {
            register, offset, ..
        } if register.0 == 7 => Some(offset),
        _ => None,
    })
}

/// The ranges of a variable's location list where it is in its frame (`DW_OP_fbreg N`).
fn fbreg_ranges(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &Die<'_>,
) -> Vec<(u64, u64, i64)> {
    single_op_ranges(dwarf, unit, entry, |op| match op {
        gimli::Operation::FrameOffset { offset } => Some(offset),
        _ => None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum FrameBase {
    /// `DW_OP_reg7`: `%rsp` (DWARF register 7).
    Rsp,
    /// `DW_OP_call_frame_cfa`.
    Cfa,
}

/// Whether a subprogram's frame base is `base`.
fn frame_base_is(unit: &Unit<'_>, entry: &Die<'_>, base: FrameBase) -> bool {
    let Some(AttributeValue::Exprloc(expr)) = entry.attr_value(dw::DW_AT_frame_base) else {
        return false;
    };
    let mut ops = expr.operations(unit.encoding());
    let is = match ops.next() {
        Ok(Some(gimli::Operation::Register { register })) => {
            base == FrameBase::Rsp && register.0 == 7
        }
        Ok(Some(gimli::Operation::CallFrameCFA)) => base == FrameBase::Cfa,
        _ => false,
    };
    is && matches!(ops.next(), Ok(None))
}

/// The `DW_OP_fbreg` offset of a variable that lives in its function's frame.
fn fbreg_offset(unit: &Unit<'_>, entry: &Die<'_>) -> Option<i64> {
    let Some(AttributeValue::Exprloc(expr)) = entry.attr_value(dw::DW_AT_location) else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    match ops.next().ok()?? {
        gimli::Operation::FrameOffset { offset } => Some(offset),
        _ => None,
    }
}

/// An attribute of the entry, or of the entry it is an inlined copy or definition of.
fn through_origin<'a>(
    unit: &Unit<'a>,
    entry: &Die<'a>,
    at: gimli::DwAt,
) -> Option<gimli::Attribute<Slice<'a>>> {
    let mut e = entry.clone();
    for _ in 0..4 {
        if let Some(a) = e.attr(at) {
            return Some(a.clone());
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

/// The base name of file `index` of the unit's line program (`DW_AT_decl_file`).
fn file_base(dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>, index: u64) -> String {
    let Some(program) = &unit.line_program else {
        return String::new();
    };
    program
        .header()
        .file(index)
        .and_then(|f| dwarf.attr_string(unit, f.path_name()).ok())
        .map(|s| {
            let s = String::from_utf8_lossy(s.slice()).into_owned();
            s.rsplit('/').next().unwrap_or("").to_string()
        })
        .unwrap_or_default()
}

/// Whether type `t` is a pointer, and if so what it points to: `Some(None)` for a pointer
/// whose target says nothing (`void *`), `None` for a type that is no pointer.
fn pointer_elem(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    mut t: gimli::UnitOffset,
) -> Option<Option<Elem>> {
    for _ in 0..16 {
        let e = unit.entry(t).ok()?;
        match e.tag() {
            tag if is_alias(tag) => t = referred_type(&e)?,
            dw::DW_TAG_pointer_type => {
                return Some(referred_type(&e).and_then(|n| elem_of(dwarf, unit, n, 0)));
            }
            _ => return None,
        }
    }
    None
}

/// The element a pointer's target type makes: a struct, or a scalar named by the first
/// typedef on the way (`size_t`), else by its base type (`double`, `_Bool`).
fn elem_of(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    mut t: gimli::UnitOffset,
    depth: u32,
) -> Option<Elem> {
    let mut typedef_name: Option<String> = None;
    for _ in 0..16 {
        let e = unit.entry(t).ok()?;
        match e.tag() {
            tag if is_alias(tag) => {
                if tag == dw::DW_TAG_typedef && typedef_name.is_none() {
                    typedef_name = string_attr(dwarf, unit, &e, dw::DW_AT_name);
                }
                t = referred_type(&e)?;
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                if e.attr(dw::DW_AT_declaration).is_some() {
                    return None;
                }
                let size = attr_u64(&e, dw::DW_AT_byte_size).filter(|&s| s > 0)?;
                // An anonymous struct by the typedef that names it (`lreg_args`).
                let name = string_attr(dwarf, unit, &e, dw::DW_AT_name)
                    .filter(|n| !n.is_empty())
                    .or(typedef_name)?;
                return Some(Elem {
                    name,
                    size,
                    kind: ElemKind::Struct,
                });
            }
            dw::DW_TAG_base_type | dw::DW_TAG_enumeration_type => {
                let size = attr_u64(&e, dw::DW_AT_byte_size)?;
                let base = string_attr(dwarf, unit, &e, dw::DW_AT_name).unwrap_or_default();
                let kind = if e.tag() == dw::DW_TAG_enumeration_type {
                    ElemKind::Int
                } else {
                    match e.attr_value(dw::DW_AT_encoding) {
                        Some(AttributeValue::Encoding(x)) if x == dw::DW_ATE_float => {
                            ElemKind::Float
                        }
                        Some(AttributeValue::Encoding(x)) if x == dw::DW_ATE_boolean => {
                            ElemKind::Bool
                        }
                        Some(AttributeValue::Encoding(x))
                            if x == dw::DW_ATE_signed_char || x == dw::DW_ATE_unsigned_char =>
                        {
                            ElemKind::Char
                        }
                        _ => ElemKind::Int,
                    }
                };
                let name = typedef_name.unwrap_or(if base.is_empty() {
                    "enum".to_string()
                } else {
                    base
                });
                return (size > 0).then_some(Elem { name, size, kind });
            }
            dw::DW_TAG_pointer_type => {
                let inner = match e.attr_value(dw::DW_AT_type) {
                    Some(AttributeValue::UnitRef(n)) if depth < 4 => {
                        elem_of(dwarf, unit, n, depth + 1).map(|i| i.name)
                    }
                    _ => None,
                };
                let size = attr_u64(&e, dw::DW_AT_byte_size).unwrap_or(8);
                let name = typedef_name
                    .unwrap_or_else(|| format!("{} *", inner.unwrap_or_else(|| "void".into())));
                return Some(Elem {
                    name,
                    size,
                    kind: ElemKind::Pointer,
                });
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

#[cfg(test)]
mod has_dwarf_tests {
    use super::DebugInfo;

    /// The quick check before a run agrees with the full read after it: on objects the
    /// compilers wrote (tests/data/dwarf/build.sh), with their DWARF and with it stripped.
    #[test]
    fn the_quick_check_agrees_with_the_full_read() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dwarf/bin");
        let mut seen = 0;
        for name in ["atomics-clang-dwarf5.o", "atomics-gcc-dwarf4.o"] {
            let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
            assert!(DebugInfo::has_dwarf(&bytes).unwrap(), "{name}");
            assert!(DebugInfo::read(&bytes).unwrap().has_dwarf, "{name}");
            seen += 1;
        }
        assert_eq!(seen, 2);
        // Not ELF: the same error either way.
        let not_elf = b"#!/bin/sh\necho hi\n";
        assert_eq!(
            DebugInfo::has_dwarf(not_elf).unwrap_err(),
            DebugInfo::read(not_elf).err().unwrap()
        );
    }
}

#[cfg(test)]
mod code_spans_tests {
    use super::CodeSpans;

    #[test]
    fn spans_holding_an_address_come_in_index_order_nested_or_not() {
        // A function [0x100, 0x200) split in two pieces, one nested in a long one, one apart.
        let s = CodeSpans::new(vec![
            (0x100, 0x180, 2),
            (0x190, 0x200, 2),
            (0x000, 0x1000, 0),
            (0x150, 0x160, 1),
            (0x2000, 0x2100, 3),
        ]);
        assert_eq!(s.holding(0x155), [0, 1, 2]);
        assert_eq!(s.holding(0x185), [0]);
        assert_eq!(s.holding(0x1f0), [0, 2]);
        assert_eq!(s.holding(0x200), [0]);
        assert_eq!(s.holding(0x2000), [3]);
        assert_eq!(s.holding(0x1800), Vec::<u32>::new());
        assert_eq!(CodeSpans::default().holding(5), Vec::<u32>::new());
    }
}
