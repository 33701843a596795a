//! The instruction behind an evidence row: `perf c2c` gives each access's code address
//! (`update_load_avg+940`, or a raw address); in the kernel image (a `vmlinux` or a `.ko`
//! with symbols, or any ELF object) the instruction there has a memory operand whose
//! displacement is the member offset within the struct its base register points to.
//! Decoded with iced-x86 (x86-64) or yaxpeax-arm (AArch64), by the ELF's machine.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpAccess, OpKind, Register};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use serde::Serialize;

use super::{InputFile, LoadError};

/// The memory operand of one decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryOperand {
    /// Signed displacement: the member offset when the base register points to the struct.
    pub displacement: i64,
    /// Bytes accessed, when the instruction says.
    pub size: Option<u32>,
    /// Base register (`rdi`), empty when none.
    pub base: String,
    /// Index register, empty when none.
    pub index: String,
    pub reads: bool,
    pub writes: bool,
    /// `mov [rdi+0x100]`, for the report.
    pub instruction: String,
    /// The struct and member the access was typed as from the image's DWARF (the base
    /// register's type at this instruction, [`super::typing`]): exact where the displacement
    /// alone assumes the register points to the struct's start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typed: Option<super::typing::TypedAccess>,
}

/// The instruction sets whose memory operands lineup reads, by the ELF machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isa {
    X86_64,
    Aarch64,
}

impl Isa {
    /// The ISA of an ELF `e_machine` (`EM_X86_64` 62, `EM_AARCH64` 183).
    pub fn from_elf_machine(machine: u16) -> Option<Isa> {
        match machine {
            62 => Some(Isa::X86_64),
            183 => Some(Isa::Aarch64),
            _ => None,
        }
    }

    fn from_object(arch: object::Architecture) -> Option<Isa> {
        match arch {
            object::Architecture::X86_64 => Some(Isa::X86_64),
            object::Architecture::Aarch64 => Some(Isa::Aarch64),
            _ => None,
        }
    }

    /// The memory operand of the instruction at `code[at..]` (at address `ip`); `code[..at]`
    /// is the code before it in the same function, as far as known.
    pub fn decode(self, code: &[u8], at: usize, ip: u64) -> Option<MemoryOperand> {
        match self {
            Isa::X86_64 => decode_operand(code.get(at..)?, ip),
            Isa::Aarch64 => decode_operand_aarch64(code, at),
        }
    }
}

/// The one line that refuses code of another machine.
fn unsupported_machine(what: &str) -> String {
    format!("{what} code: lineup decodes only x86-64 and AArch64 instructions")
}

/// Decodes the instruction at the start of `bytes` (at address `ip`) and returns its memory
/// operand; `None` for an instruction without one, or one relative to the stack or to the
/// instruction pointer (a local or a global, not a struct member through a pointer).
pub fn decode_operand(bytes: &[u8], ip: u64) -> Option<MemoryOperand> {
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let ins = decoder.decode();
    if ins.is_invalid() {
        return None;
    }
    let has_memory = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory);
    if !has_memory {
        return None;
    }
    let base = ins.memory_base();
    if matches!(
        base,
        Register::RIP | Register::EIP | Register::RSP | Register::ESP
    ) {
        return None;
    }
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(&ins);
    let (mut reads, mut writes) = (false, false);
    for m in info.used_memory() {
        match m.access() {
            OpAccess::Read | OpAccess::CondRead => reads = true,
            OpAccess::Write | OpAccess::CondWrite => writes = true,
            OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                reads = true;
                writes = true
            }
            _ => {}
        }
    }
    let size = ins.memory_size().size();
    let displacement = ins.memory_displacement64() as i64;
    let reg = |r: Register| {
        if r == Register::None {
            String::new()
        } else {
            format!("{r:?}").to_lowercase()
        }
    };
    let mut addr = reg(base);
    if ins.memory_index() != Register::None {
        addr.push_str(&format!(
            "+{}*{}",
            reg(ins.memory_index()),
            ins.memory_index_scale()
        ));
    }
    let instruction = format!(
        "{} [{addr}{}{:#x}]",
        format!("{:?}", ins.mnemonic()).to_lowercase(),
        if displacement < 0 { "-" } else { "+" },
        displacement.unsigned_abs()
    );
    Some(MemoryOperand {
        displacement,
        size: (size > 0).then_some(size as u32),
        base: reg(base),
        index: reg(ins.memory_index()),
        reads,
        writes,
        instruction,
        typed: None,
    })
}

/// AArch64 (A64) atomic read-modify-write mnemonics, without their ordering and size
/// suffixes: they read and write the location.
const A64_ATOMICS: [&str; 11] = [
    "ldadd", "ldclr", "ldeor", "ldset", "ldsmax", "ldsmin", "ldumax", "ldumin", "swp", "cas",
    "stadd",
];

/// One A64 instruction (code is always little-endian on AArch64).
fn a64_at(code: &[u8], at: usize) -> Option<yaxpeax_arm::armv8::a64::Instruction> {
    use yaxpeax_arch::{Decoder as _, U8Reader};
    let mut reader = U8Reader::new(code.get(at..at + 4)?);
    yaxpeax_arm::armv8::a64::InstDecoder::default()
        .decode(&mut reader)
        .ok()
}

/// Decodes the A64 instruction at `code[at..]` and returns its memory operand, as
/// [`decode_operand`] does for x86-64. The immediate is the byte offset (yaxpeax-arm scales
/// `imm12`/`imm7` by the access size): `[x0, #16]` and pre-index `[x0, #16]!` access `x0+16`;
/// post-index `[x0], #16` accesses `x0` itself, so its displacement is 0.
///
/// The exclusive, acquire/release and atomic forms (`ldxr`, `stlr`, `ldadd`, `cas`) take no
/// offset: the compiler puts the member's address in a register first (`add x0, x0, #0x38`).
/// So the code before the access (`code[..at]`, the same function) is walked back to the
/// instructions that made the base register, folding `add`/`sub` immediates and `mov`s into
/// the displacement, until something else wrote it, the code could not fall through
/// (`b`, `ret`), or 16 instructions. `sp`-based operands (locals), PC-relative literals
/// (globals) and prefetches are `None`.
pub fn decode_operand_aarch64(code: &[u8], at: usize) -> Option<MemoryOperand> {
    use yaxpeax_arm::armv8::a64::{Operand, SIMDSizeCode, SizeCode};
    let ins = a64_at(code, at)?;
    let mnemonic = ins.opcode.to_string();
    if mnemonic.starts_with("prf") {
        return None;
    }
    let (base, index, displacement) = ins.operands.iter().find_map(|o| match *o {
        Operand::RegPreIndex(rn, off, _) => Some((rn, None, off as i64)),
        Operand::RegPostIndex(rn, _) => Some((rn, None, 0)),
        Operand::RegPostIndexReg(rn, _) => Some((rn, None, 0)),
        Operand::RegRegOffset(rn, rm, ..) => Some((rn, Some(rm), 0)),
        _ => None,
    })?;
    let (base, displacement, made_by) = fold_base(code, at, base, displacement);
    if base == 31 {
        // The stack pointer: a local, not a member through a pointer.
        return None;
    }
    let reg_size = |o: &Operand| -> Option<u32> {
        match *o {
            Operand::Register(SizeCode::W, _) | Operand::RegisterOrSP(SizeCode::W, _) => Some(4),
            Operand::Register(SizeCode::X, _) | Operand::RegisterOrSP(SizeCode::X, _) => Some(8),
            Operand::SIMDRegister(s, _) => Some(match s {
                SIMDSizeCode::B => 1,
                SIMDSizeCode::H => 2,
                SIMDSizeCode::S => 4,
                SIMDSizeCode::D => 8,
                SIMDSizeCode::Q => 16,
            }),
            _ => None,
        }
    };
    let atomic = A64_ATOMICS.iter().any(|a| mnemonic.starts_with(a));
    // Store-exclusives name their status register first (`stxr w2, x1, [x0]`).
    let exclusive_store = ["stxr", "stlxr", "stxp", "stlxp"]
        .iter()
        .any(|p| mnemonic.starts_with(p));
    let pair = [
        "ldp", "stp", "ldnp", "stnp", "ldxp", "stxp", "ldaxp", "stlxp", "casp",
    ]
    .iter()
    .any(|p| mnemonic.starts_with(p));
    let data = &ins.operands[usize::from(exclusive_store)];
    // Size suffixes: `ldrb`/`stlrh`/`ldaddalb`/`ldrsw`; else the data register's width.
    // `ldrab` is a pointer-authenticated 8-byte load, not a byte.
    let element = if mnemonic.ends_with("sw") {
        Some(4)
    } else if mnemonic.ends_with('b') && !mnemonic.starts_with("ldra") {
        Some(1)
    } else if mnemonic.ends_with('h') {
        Some(2)
    } else {
        reg_size(data)
    };
    let size = element.map(|e| if pair { 2 * e } else { e });
    let (reads, writes) = if atomic {
        (true, true)
    } else if mnemonic.starts_with("st") {
        (false, true)
    } else if mnemonic.starts_with("ld") {
        (true, false)
    } else {
        return None;
    };
    Some(MemoryOperand {
        displacement,
        size,
        base: format!("x{base}"),
        index: index.map(|r| format!("x{r}")).unwrap_or_default(),
        reads,
        writes,
        instruction: made_by
            .iter()
            .rev()
            .chain(std::iter::once(&ins.to_string()))
            .cloned()
            .collect::<Vec<_>>()
            .join("; "),
        typed: None,
    })
}

/// Walks back from the A64 access at `code[at..]` to the instructions that computed its base
/// register `base`: returns the register the struct pointer was in, the displacement with
/// their immediates added, and those instructions (nearest first).
fn fold_base(
    code: &[u8],
    at: usize,
    mut base: u16,
    mut displacement: i64,
) -> (u16, i64, Vec<String>) {
    use yaxpeax_arm::armv8::a64::{Opcode, Operand, ShiftStyle, SizeCode};
    let mut made_by = Vec::new();
    let mut pos = at;
    while base != 31 && pos >= 4 && at - pos < LOOKBACK {
        pos -= 4;
        let Some(ins) = a64_at(code, pos) else { break };
        let m = ins.opcode.to_string();
        // Code before an unconditional branch or a return does not fall through to here.
        if matches!(m.as_str(), "b" | "br" | "ret" | "eret") || m.starts_with("bra") {
            break;
        }
        // A call may change the argument and temporary registers (x0-x18).
        if (m == "bl" || m.starts_with("blr")) && base < 19 {
            break;
        }
        // An access that writes the base back changes it in a way not followed here.
        let writes_back = ins.operands.iter().any(|o| {
            matches!(*o, Operand::RegPreIndex(r, _, true) | Operand::RegPostIndex(r, _) | Operand::RegPostIndexReg(r, _) if r == base)
        });
        if writes_back {
            break;
        }
        let reg = |o: &Operand| match *o {
            Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => Some(r),
            _ => None,
        };
        // Stores, compares, tests and branches read their first register; loads write
        // their first (and a pair's second).
        let reads_first = m.starts_with("st")
            || m.starts_with("cmp")
            || m.starts_with("cmn")
            || m.starts_with("tst")
            || m.starts_with("cb")
            || m.starts_with("tb")
            || m.starts_with("b.")
            || m.starts_with("prf");
        let pair_load = m.starts_with("ldp") || m.starts_with("ldxp") || m.starts_with("ldaxp");
        let writes_base = (!reads_first && reg(&ins.operands[0]) == Some(base))
            || (pair_load && reg(&ins.operands[1]) == Some(base));
        if !writes_base {
            continue;
        }
        let source = match (ins.opcode, ins.operands[1], ins.operands[2]) {
            (Opcode::ADD, Operand::RegisterOrSP(SizeCode::X, s), Operand::Immediate(i)) => {
                Some((s, i64::from(i)))
            }
            (Opcode::ADD, Operand::RegisterOrSP(SizeCode::X, s), Operand::ImmShift(i, 12)) => {
                Some((s, i64::from(i) << 12))
            }
            (Opcode::SUB, Operand::RegisterOrSP(SizeCode::X, s), Operand::Immediate(i)) => {
                Some((s, -i64::from(i)))
            }
            (Opcode::SUB, Operand::RegisterOrSP(SizeCode::X, s), Operand::ImmShift(i, 12)) => {
                Some((s, -(i64::from(i) << 12)))
            }
            // `mov x3, x0`
            (
                Opcode::ORR,
                Operand::Register(SizeCode::X, 31),
                Operand::RegShift(ShiftStyle::LSL, 0, SizeCode::X, s),
            ) => Some((s, 0)),
            _ => None,
        };
        let Some((s, add)) = source else { break };
        made_by.push(ins.to_string());
        base = s;
        displacement += add;
    }
    (base, displacement, made_by)
}

/// An ELF image with symbols: where each function's code is.
pub struct CodeImage {
    file: InputFile,
    /// Function name → (section index, address within the image's address space).
    symbols: HashMap<String, (usize, u64)>,
    /// Executable sections: (index, address, size).
    sections: Vec<(usize, u64, u64)>,
    isa: Isa,
}

/// Longest x86-64 instruction (A64's are 4 bytes).
const MAX_INSTRUCTION: usize = 15;
/// Code read before an A64 access, to find the `add` that made its base register
/// ([`decode_operand_aarch64`]): 16 instructions.
const LOOKBACK: usize = 64;

impl CodeImage {
    /// Opens an ELF file with a symbol table (a `vmlinux`, a `.ko`, a program, an object).
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let file = InputFile::open(path)?;
        let parts = {
            let obj = object::File::parse(file.bytes())
                .map_err(|e| LoadError::new(path, format!("not an ELF object: {e}")))?;
            let Some(isa) = Isa::from_object(obj.architecture()) else {
                return Err(LoadError::new(
                    path,
                    unsupported_machine(&format!("{:?}", obj.architecture())),
                ));
            };
            let mut symbols = HashMap::new();
            for s in obj.symbols() {
                if s.kind() != SymbolKind::Text {
                    continue;
                }
                let (Ok(name), Some(idx)) = (s.name(), s.section_index()) else {
                    continue;
                };
                symbols
                    .entry(name.to_string())
                    .or_insert((idx.0, s.address()));
            }
            if symbols.is_empty() {
                return Err(LoadError::new(
                    path,
                    "no function symbols (a stripped image cannot place symbol+offset)",
                ));
            }
            let sections = obj
                .sections()
                .filter(|s| s.kind() == object::SectionKind::Text)
                .map(|s| (s.index().0, s.address(), s.size()))
                .collect();
            (symbols, sections, isa)
        };
        let (symbols, sections, isa) = parts;
        Ok(CodeImage {
            file,
            symbols,
            sections,
            isa,
        })
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The instruction set of its code.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The address of `symbol` in the image.
    pub fn symbol_address(&self, symbol: &str) -> Option<u64> {
        self.symbols.get(symbol).map(|s| s.1)
    }

    /// The code at `address`: `(bytes, at)` with the instruction at `bytes[at..]`, and up
    /// to [`LOOKBACK`] bytes before it that are still in the section and at or after
    /// `function` (where the caller knows the function's start).
    fn bytes(&self, section: usize, address: u64, function: Option<u64>) -> Option<(&[u8], usize)> {
        let obj = object::File::parse(self.file.bytes()).ok()?;
        let sec = obj.section_by_index(object::SectionIndex(section)).ok()?;
        let data = sec.data().ok()?;
        let at = usize::try_from(address.checked_sub(sec.address())?).ok()?;
        let end = (at + MAX_INSTRUCTION).min(data.len());
        let floor = function
            .and_then(|f| usize::try_from(f.checked_sub(sec.address())?).ok())
            .unwrap_or(0)
            .min(at);
        let start = at.saturating_sub(LOOKBACK).max(floor);
        (at < end).then(|| (&data[start..end], at - start))
    }

    /// The memory operand of the instruction at `symbol+offset`.
    pub fn operand_at_symbol(&self, symbol: &str, offset: u64) -> Option<MemoryOperand> {
        let &(section, address) = self.symbols.get(symbol)?;
        let ip = address + offset;
        let (code, at) = self.bytes(section, ip, Some(address))?;
        self.isa.decode(code, at, ip)
    }

    /// The memory operand of the instruction at image address `address` (a linked image:
    /// `vmlinux`, a program).
    pub fn operand_at_address(&self, address: u64) -> Option<MemoryOperand> {
        let &(section, _, _) = self
            .sections
            .iter()
            .find(|(_, a, s)| *a <= address && address < a + s)?;
        let (code, at) = self.bytes(section, address, None)?;
        self.isa.decode(code, at, address)
    }
}

/// `/proc/kallsyms`: runtime addresses of kernel functions, to turn a raw code address into
/// `symbol+offset` on a kernel with KASLR.
pub struct Kallsyms {
    /// (address, name), sorted by address; text symbols only.
    symbols: Vec<(u64, String)>,
    by_name: HashMap<String, u64>,
}

impl Kallsyms {
    pub fn parse(path: &Path, text: &str) -> Result<Self, LoadError> {
        let mut symbols = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(a) = u64::from_str_radix(addr, 16) else {
                return Err(LoadError::new(path, format!("not kallsyms: '{line}'")));
            };
            symbols.push((a, name.to_string()));
        }
        if symbols.is_empty() {
            return Err(LoadError::new(path, "no text symbols: not a kallsyms file"));
        }
        if symbols.iter().all(|s| s.0 == 0) {
            return Err(LoadError::new(
                path,
                "every address is 0: read /proc/kallsyms as root (kptr_restrict hides them)",
            ));
        }
        symbols.sort();
        let mut by_name = HashMap::new();
        for (a, n) in &symbols {
            by_name.entry(n.clone()).or_insert(*a);
        }
        Ok(Kallsyms { symbols, by_name })
    }

    /// Runtime address of function `name`.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// `(symbol, offset)` of runtime address `address`.
    pub fn locate(&self, address: u64) -> Option<(&str, u64)> {
        let i = self.symbols.partition_point(|s| s.0 <= address);
        let (a, name) = self.symbols.get(i.checked_sub(1)?)?;
        let off = address - a;
        // A function is rarely larger than this; further away the address is not in it.
        (off < 1 << 20).then_some((name.as_str(), off))
    }
}

/// Decoded memory operands of evidence rows, by (line address, row index in the line).
pub type Decoded = BTreeMap<(u64, usize), MemoryOperand>;

/// Decodes the instruction of every row of `profile`'s raw lines that names its code:
/// `symbol+offset` directly; a raw address through `kallsyms` when given, else as an
/// address of the image (a kernel without KASLR, a program that is not position
/// independent).
///
/// Where the image has DWARF, each row is also typed from its instruction
/// ([`super::typing`]): the operand's `typed` names the struct and member offset.
pub fn decode_rows(
    code: &CodeSource,
    kallsyms: Option<&Kallsyms>,
    profile: &crate::profile::Profile,
) -> Decoded {
    decode_and_type_rows(code, kallsyms, profile).0
}

/// [`decode_rows`], and what share of the rows whose code lies in the image was typed from
/// its instruction and why the rest was not (`None` where the image cannot be typed: no
/// x86-64 image with DWARF).
pub fn decode_and_type_rows(
    code: &CodeSource,
    kallsyms: Option<&Kallsyms>,
    profile: &crate::profile::Profile,
) -> (Decoded, Option<super::typing::Coverage>) {
    let mut out = Decoded::new();
    let typer = match code {
        CodeSource::Image(i) if i.isa == Isa::X86_64 => super::typing::Typer::new(&i.file).ok(),
        _ => None,
    };
    let mut coverage = super::typing::Coverage::default();
    for line in &profile.lines {
        for (i, a) in line.accesses.iter().enumerate() {
            let Some(loc) = &a.code else { continue };
            let mut op = match (&loc.symbol, loc.symbol_offset, loc.address) {
                (Some(sym), Some(off), _) => {
                    code.operand_at_symbol(function_part(sym), off, kallsyms)
                }
                (_, _, Some(addr)) => code.operand_at_address(addr, kallsyms),
                _ => None,
            };
            if let (Some(t), CodeSource::Image(image)) = (&typer, code) {
                let at = match (&loc.symbol, loc.symbol_offset, loc.address) {
                    (Some(sym), Some(off), _) => {
                        image.symbol_address(function_part(sym)).map(|s| s + off)
                    }
                    (_, _, Some(addr)) => match kallsyms {
                        Some(k) => k
                            .locate(addr)
                            .and_then(|(s, off)| Some(image.symbol_address(s)? + off)),
                        None => Some(addr),
                    },
                    _ => None,
                };
                // Rows whose code is not in the image (another module, libc) are not
                // counted: the image could not have typed them.
                if let Some(pc) = at {
                    let result = t.type_at(pc);
                    coverage.add(a.counts.accesses().max(1e-9), &result);
                    if let Some(op) = &mut op {
                        op.typed = result.ok();
                    }
                }
            }
            if let Some(op) = op {
                out.insert((line.address, i), op);
            }
        }
    }
    (out, typer.map(|_| coverage))
}

/// Where instructions come from: an ELF image with symbols, or the live kernel's memory
/// (`/proc/kcore`, an ELF core whose segments map kernel addresses) placed by kallsyms.
pub enum CodeSource {
    Image(CodeImage),
    Core(KernelCore),
}

impl CodeSource {
    /// Opens `path`: an ELF core (`/proc/kcore`) needs `kallsyms` to find functions.
    pub fn open(path: &Path, has_kallsyms: bool) -> Result<Self, LoadError> {
        let mut head = [0u8; 18];
        {
            use std::io::Read;
            let mut f =
                std::fs::File::open(path).map_err(|e| LoadError::new(path, e.to_string()))?;
            f.read_exact(&mut head)
                .map_err(|_| LoadError::new(path, "too short for an ELF file"))?;
        }
        if head.starts_with(b"\x7fELF") && u16::from_le_bytes([head[16], head[17]]) == 4 {
            if !has_kallsyms {
                return Err(LoadError::new(
                    path,
                    "a kernel core (/proc/kcore) has no symbols: give --kallsyms /proc/kallsyms",
                ));
            }
            return Ok(CodeSource::Core(KernelCore::open(path)?));
        }
        Ok(CodeSource::Image(CodeImage::open(path)?))
    }

    pub fn operand_at_symbol(
        &self,
        symbol: &str,
        offset: u64,
        kallsyms: Option<&Kallsyms>,
    ) -> Option<MemoryOperand> {
        match self {
            CodeSource::Image(i) => i.operand_at_symbol(symbol, offset),
            CodeSource::Core(c) => {
                let at = kallsyms?.address_of(symbol)? + offset;
                c.operand_at(at)
            }
        }
    }

    pub fn operand_at_address(
        &self,
        address: u64,
        kallsyms: Option<&Kallsyms>,
    ) -> Option<MemoryOperand> {
        match (self, kallsyms) {
            (CodeSource::Image(i), Some(k)) => {
                let (sym, off) = k.locate(address)?;
                i.operand_at_symbol(sym, off)
            }
            (CodeSource::Image(i), None) => i.operand_at_address(address),
            (CodeSource::Core(c), _) => c.operand_at(address),
        }
    }
}

/// The running kernel's memory as `/proc/kcore` shows it: an ELF core whose `PT_LOAD`
/// segments map kernel virtual addresses to file offsets. Read at offsets, never mapped
/// (the file is as large as the address space).
pub struct KernelCore {
    file: std::fs::File,
    /// (virtual address, size in the file, file offset)
    segments: Vec<(u64, u64, u64)>,
    isa: Isa,
}

impl KernelCore {
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(path).map_err(|e| LoadError::new(path, e.to_string()))?;
        let bad = |what: &str| {
            LoadError::new(path, format!("not a 64-bit little-endian ELF core: {what}"))
        };
        let mut eh = [0u8; 64];
        file.read_exact_at(&mut eh, 0)
            .map_err(|_| bad("short header"))?;
        if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
            return Err(bad("class or byte order"));
        }
        let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let machine = u16_at(&eh, 18);
        let Some(isa) = Isa::from_elf_machine(machine) else {
            return Err(LoadError::new(
                path,
                unsupported_machine(&format!("ELF machine {machine}")),
            ));
        };
        let u64_at =
            |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let phoff = u64_at(&eh, 0x20);
        let phentsize = u16_at(&eh, 0x36) as u64;
        let phnum = u16_at(&eh, 0x38) as u64;
        if phentsize < 56 || phnum == 0 || phnum > 1 << 16 {
            return Err(bad("program headers"));
        }
        let mut segments = Vec::new();
        for i in 0..phnum {
            let mut ph = [0u8; 56];
            file.read_exact_at(&mut ph, phoff + i * phentsize)
                .map_err(|_| bad("program header past the end"))?;
            if u32::from_le_bytes(ph[..4].try_into().expect("4 bytes")) != 1 {
                continue;
            }
            segments.push((u64_at(&ph, 16), u64_at(&ph, 32), u64_at(&ph, 8)));
        }
        if segments.is_empty() {
            return Err(bad("no loadable segments"));
        }
        Ok(KernelCore {
            file,
            segments,
            isa,
        })
    }

    /// The memory operand of the instruction at kernel address `address`.
    pub fn operand_at(&self, address: u64) -> Option<MemoryOperand> {
        use std::os::unix::fs::FileExt;
        let &(vaddr, size, offset) = self
            .segments
            .iter()
            .find(|(v, s, _)| *v <= address && address - v < *s)?;
        let into = address - vaddr;
        let before = into.min(LOOKBACK as u64);
        let avail = (size - into).min(MAX_INSTRUCTION as u64) + before;
        let mut buf = vec![0u8; avail as usize];
        let n = self.file.read_at(&mut buf, offset + into - before).ok()?;
        buf.truncate(n);
        let at = before as usize;
        if n <= at {
            return None;
        }
        self.isa.decode(&buf, at, address)
    }
}

/// `foo` of `foo+0x10`; local symbols keep their suffix (`foo.isra.0` is its own symbol).
fn function_part(symbol: &str) -> &str {
    symbol.split('+').next().unwrap_or(symbol)
}
