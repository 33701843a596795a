//! The instruction behind an evidence row: `perf c2c` gives each access's code address
//! (`update_load_avg+940`, or a raw address); in the kernel image (a `vmlinux` or a `.ko`
//! with symbols, or any ELF object) the instruction there has a memory operand whose
//! displacement is the member offset within the struct its base register points to.
//! Decoded with iced-x86 (x86-64).

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
    })
}

/// An ELF image with symbols: where each function's code is.
pub struct CodeImage {
    file: InputFile,
    /// Function name → (section index, address within the image's address space).
    symbols: HashMap<String, (usize, u64)>,
    /// Executable sections: (index, address, size).
    sections: Vec<(usize, u64, u64)>,
}

/// Longest x86-64 instruction.
const MAX_INSTRUCTION: usize = 15;

impl CodeImage {
    /// Opens an ELF file with a symbol table (a `vmlinux`, a `.ko`, a program, an object).
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let file = InputFile::open(path)?;
        let (symbols, sections) = {
            let obj = object::File::parse(file.bytes())
                .map_err(|e| LoadError::new(path, format!("not an ELF object: {e}")))?;
            if obj.architecture() != object::Architecture::X86_64 {
                return Err(LoadError::new(
                    path,
                    format!(
                        "{:?} code: only x86-64 instructions are decoded",
                        obj.architecture()
                    ),
                ));
            }
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
            (symbols, sections)
        };
        Ok(CodeImage {
            file,
            symbols,
            sections,
        })
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The address of `symbol` in the image.
    pub fn symbol_address(&self, symbol: &str) -> Option<u64> {
        self.symbols.get(symbol).map(|s| s.1)
    }

    fn bytes(&self, section: usize, address: u64) -> Option<&[u8]> {
        let obj = object::File::parse(self.file.bytes()).ok()?;
        let sec = obj.section_by_index(object::SectionIndex(section)).ok()?;
        let data = sec.data().ok()?;
        let at = usize::try_from(address.checked_sub(sec.address())?).ok()?;
        let end = (at + MAX_INSTRUCTION).min(data.len());
        (at < end).then(|| &data[at..end])
    }

    /// The memory operand of the instruction at `symbol+offset`.
    pub fn operand_at_symbol(&self, symbol: &str, offset: u64) -> Option<MemoryOperand> {
        let &(section, address) = self.symbols.get(symbol)?;
        let ip = address + offset;
        decode_operand(self.bytes(section, ip)?, ip)
    }

    /// The memory operand of the instruction at image address `address` (a linked image:
    /// `vmlinux`, a program).
    pub fn operand_at_address(&self, address: u64) -> Option<MemoryOperand> {
        let &(section, _, _) = self
            .sections
            .iter()
            .find(|(_, a, s)| *a <= address && address < a + s)?;
        decode_operand(self.bytes(section, address)?, address)
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
pub fn decode_rows(
    code: &CodeSource,
    kallsyms: Option<&Kallsyms>,
    profile: &crate::profile::Profile,
) -> Decoded {
    let mut out = Decoded::new();
    for line in &profile.lines {
        for (i, a) in line.accesses.iter().enumerate() {
            let Some(loc) = &a.code else { continue };
            let op = match (&loc.symbol, loc.symbol_offset, loc.address) {
                (Some(sym), Some(off), _) => {
                    code.operand_at_symbol(function_part(sym), off, kallsyms)
                }
                (_, _, Some(addr)) => code.operand_at_address(addr, kallsyms),
                _ => None,
            };
            if let Some(op) = op {
                out.insert((line.address, i), op);
            }
        }
    }
    out
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
        Ok(KernelCore { file, segments })
    }

    /// The memory operand of the instruction at kernel address `address`.
    pub fn operand_at(&self, address: u64) -> Option<MemoryOperand> {
        use std::os::unix::fs::FileExt;
        let &(vaddr, size, offset) = self
            .segments
            .iter()
            .find(|(v, s, _)| *v <= address && address - v < *s)?;
        let avail = (size - (address - vaddr)).min(MAX_INSTRUCTION as u64) as usize;
        let mut buf = vec![0u8; avail];
        let n = self
            .file
            .read_at(&mut buf, offset + (address - vaddr))
            .ok()?;
        buf.truncate(n);
        decode_operand(&buf, address)
    }
}

/// `foo` of `foo+0x10`; local symbols keep their suffix (`foo.isra.0` is its own symbol).
fn function_part(symbol: &str) -> &str {
    symbol.split('+').next().unwrap_or(symbol)
}
