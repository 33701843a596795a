//! The type graph: what C types are made of, independent of where they were read from.
//!
//! Readers (BTF, DWARF) fill a [`Types`] arena; the layout model and everything after it read
//! only this. Names borrow from the input file (`'a`) so a 5 MB kernel BTF is not copied.

pub mod cname;
pub mod walk;

use walk::Guard;

/// Index into [`Types::types`]. Id 0 is always `void`, as in BTF.
pub type TypeId = u32;
pub const VOID: TypeId = 0;

/// A name from the input that is not UTF-8 (a Latin-1 identifier, a damaged string table),
/// kept with its invalid bytes replaced by U+FFFD rather than dropped: a struct must not
/// disappear from the output, nor a member print nameless, for one odd byte. Names are
/// interned for the life of the process (types borrow their names from the input, which a
/// replaced name no longer is); past a bound on the memory that takes, a fixed placeholder
/// stands in.
pub fn lossy_name(bytes: &[u8]) -> &'static str {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    const MAX_BYTES: usize = 1 << 20;
    static NAMES: Mutex<(BTreeSet<&'static str>, usize)> = Mutex::new((BTreeSet::new(), 0));
    let name = String::from_utf8_lossy(bytes);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = names.0.get(name.as_ref()) {
        return known;
    }
    if names.1 + name.len() > MAX_BYTES {
        return "<non-UTF-8 name>";
    }
    let kept: &'static str = Box::leak(name.into_owned().into_boxed_str());
    names.0.insert(kept);
    names.1 += kept.len();
    kept
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qualifier {
    Const,
    Volatile,
    Restrict,
    Atomic,
}

impl Qualifier {
    pub fn keyword(self) -> &'static str {
        match self {
            Qualifier::Const => "const",
            Qualifier::Volatile => "volatile",
            Qualifier::Restrict => "restrict",
            Qualifier::Atomic => "_Atomic",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    Btf,
    Dwarf,
}

/// Where a type was declared, when the reader knows (DWARF). Used to tell apart two different
/// structs that share a name in different compile units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    pub unit: String,
    pub file: String,
    pub line: u64,
}

#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// Empty for anonymous members (inline anonymous struct/union, unnamed bitfield).
    pub name: &'a str,
    pub ty: TypeId,
    /// Offset of the member from the start of the enclosing struct, in bits.
    pub bit_offset: u64,
    /// Width of a bitfield in bits; 0 when the member is not a bitfield.
    pub bitfield_size: u32,
    /// Alignment the source declared (DWARF `DW_AT_alignment`), when known.
    pub declared_align: Option<u32>,
}

impl Member<'_> {
    pub fn is_bitfield(&self) -> bool {
        self.bitfield_size != 0
    }
    pub fn byte_offset(&self) -> u64 {
        self.bit_offset / 8
    }
}

#[derive(Clone, Debug)]
pub struct Composite<'a> {
    pub size: u64,
    pub members: Vec<Member<'a>>,
    /// Alignment the source declared for the whole type (DWARF 5 `DW_AT_alignment`), when known.
    pub declared_align: Option<u32>,
    /// A declaration without a body (`struct foo;`): size and members are unknown.
    pub is_declaration: bool,
    pub origin: Option<Box<Origin>>,
}

#[derive(Clone, Debug)]
pub enum Kind<'a> {
    Void,
    Int {
        size: u32,
        signed: bool,
        is_char: bool,
        is_bool: bool,
    },
    Float {
        size: u32,
    },
    Pointer {
        target: TypeId,
    },
    /// `count` is 0 for flexible or unsized arrays (`char data[]`).
    Array {
        elem: TypeId,
        count: u64,
    },
    Struct(Composite<'a>),
    Union(Composite<'a>),
    Enum {
        size: u32,
        signed: bool,
        values: Vec<Enumerator<'a>>,
    },
    /// A forward declaration (`struct foo;` in BTF).
    Fwd {
        is_union: bool,
    },
    Typedef {
        target: TypeId,
    },
    Qualified {
        qualifier: Qualifier,
        target: TypeId,
    },
    /// BTF type tag (`__user`, `__percpu`, `__rcu`): transparent for layout.
    TypeTag {
        target: TypeId,
        tag: &'a str,
    },
    FuncProto {
        ret: TypeId,
        params: Vec<TypeId>,
        variadic: bool,
    },
    /// Anything a layout never needs to look into (functions, variables, sections, decl tags).
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enumerator<'a> {
    pub name: &'a str,
    /// Signed enums store the value's two's-complement bits here.
    pub value: u64,
}

#[derive(Clone, Debug)]
pub struct Type<'a> {
    /// Empty when the type is anonymous.
    pub name: &'a str,
    pub kind: Kind<'a>,
}

/// A function and its prototype ([`Kind::FuncProto`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function<'a> {
    pub name: &'a str,
    pub proto: TypeId,
}

/// All types of one input, indexed by [`TypeId`].
#[derive(Clone, Debug)]
pub struct Types<'a> {
    pub types: Vec<Type<'a>>,
    /// Size of a data pointer on the target, in bytes.
    pub pointer_size: u32,
    /// Which format the types were read from. BTF records no alignment attributes (the
    /// layout model infers them from holes, as pahole does); DWARF records them.
    pub source: SourceFormat,
    /// What the reader could not do and the user must know (types it knows are elsewhere):
    /// printed by the command line as warnings.
    pub warnings: Vec<String>,
    /// Functions with their prototypes (BTF `FUNC` records), for binding evidence rows to
    /// the types their functions take; empty when the input records none.
    pub functions: Vec<Function<'a>>,
    /// Types of per-CPU variables (BTF's `.data..percpu` section: `struct rq runqueues`),
    /// as the variables declare them: one instance per CPU, already split.
    pub per_cpu: Vec<TypeId>,
    /// Types of the image's other global variables (BTF's other data sections), so that a
    /// per-CPU type known nowhere else can be counted ([`Types::per_cpu_instances`]).
    pub globals: Vec<TypeId>,
    /// log2 of each type's natural alignment, computed on first use.
    align_memo: std::sync::OnceLock<Vec<u8>>,
}

impl<'a> Types<'a> {
    pub fn new(pointer_size: u32) -> Self {
        Types {
            types: vec![Type {
                name: "void",
                kind: Kind::Void,
            }],
            pointer_size,
            source: SourceFormat::Btf,
            warnings: Vec::new(),
            functions: Vec::new(),
            per_cpu: Vec::new(),
            globals: Vec::new(),
            align_memo: std::sync::OnceLock::new(),
        }
    }

    pub fn push(&mut self, ty: Type<'a>) -> TypeId {
        // Alignments computed so far do not cover the new type.
        self.align_memo.take();
        self.types.push(ty);
        (self.types.len() - 1) as TypeId
    }

    pub fn get(&self, id: TypeId) -> &Type<'a> {
        self.types.get(id as usize).unwrap_or(&self.types[0])
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }

    /// Follows typedefs, qualifiers and type tags to the type that decides size and layout.
    pub fn resolve(&self, mut id: TypeId) -> TypeId {
        for _ in walk::chain() {
            match self.get(id).kind {
                Kind::Typedef { target }
                | Kind::Qualified { target, .. }
                | Kind::TypeTag { target, .. } => id = target,
                _ => return id,
            }
        }
        id
    }

    /// Whether `id` is the type of a per-CPU variable (arrays of it included).
    pub fn is_per_cpu(&self, id: TypeId) -> bool {
        let id = self.resolve(id);
        self.per_cpu
            .iter()
            .any(|&v| self.resolve(self.strip_arrays(self.resolve(v))) == id)
    }

    /// `id` behind arrays (and typedefs, qualifiers): the element type, and how many of it.
    fn elements(&self, id: TypeId) -> (TypeId, u64) {
        let mut id = self.resolve(id);
        let mut n = 1u64;
        for _ in walk::chain() {
            match self.get(id).kind {
                Kind::Array { elem, count } => {
                    n = n.saturating_mul(count);
                    id = self.resolve(elem);
                }
                _ => break,
            }
        }
        (id, n)
    }

    /// Copies of `id` each CPU has, where the image shows every instance of it to be per-CPU
    /// data: the per-CPU variables of the type (an array counting each element), when no
    /// other global declares it and no struct or union embeds it. None where it is no per-CPU
    /// variable's type, or where other instances exist that the image cannot count. A heap
    /// allocation of the type is beyond what BTF shows.
    pub fn per_cpu_instances(&self, id: TypeId) -> Option<u64> {
        let id = self.resolve(id);
        let copies: u64 = self
            .per_cpu
            .iter()
            .map(|&v| self.elements(v))
            .filter(|&(t, _)| t == id)
            .map(|(_, n)| n)
            .fold(0, u64::saturating_add);
        if copies == 0 || self.globals.iter().any(|&g| self.elements(g).0 == id) {
            return None;
        }
        let embedded = self.types.iter().any(|t| match &t.kind {
            Kind::Struct(c) | Kind::Union(c) => {
                c.members.iter().any(|m| self.elements(m.ty).0 == id)
            }
            _ => false,
        });
        (!embedded).then_some(copies)
    }

    /// Follows qualifiers and type tags, but not typedefs.
    pub fn strip_qualifiers(&self, mut id: TypeId) -> TypeId {
        for _ in walk::chain() {
            match self.get(id).kind {
                Kind::Qualified { target, .. } | Kind::TypeTag { target, .. } => id = target,
                _ => return id,
            }
        }
        id
    }

    /// Follows arrays (to their element), qualifiers and type tags, but not typedefs.
    pub fn strip_arrays(&self, mut id: TypeId) -> TypeId {
        for _ in walk::chain() {
            match self.get(id).kind {
                Kind::Qualified { target, .. } | Kind::TypeTag { target, .. } => id = target,
                Kind::Array { elem, .. } => id = elem,
                _ => return id,
            }
        }
        id
    }

    /// Size in bytes of a value of this type; 0 for void, functions and unknown sizes.
    pub fn size_of(&self, id: TypeId) -> u64 {
        self.size_of_guarded(id, &mut Guard::new())
    }

    fn size_of_guarded(&self, id: TypeId, g: &mut Guard) -> u64 {
        match &self.get(self.resolve(id)).kind {
            Kind::Int { size, .. } | Kind::Float { size } | Kind::Enum { size, .. } => *size as u64,
            Kind::Pointer { .. } => self.pointer_size as u64,
            Kind::Array { elem, count } => {
                let elem_size = g.nested(0, |g| self.size_of_guarded(*elem, g));
                count.saturating_mul(elem_size)
            }
            Kind::Struct(c) | Kind::Union(c) => c.size,
            _ => 0,
        }
    }

    /// The alignment the C ABI gives this type on its own (what `_Alignof` would say without
    /// attributes), as the largest scalar alignment inside it. Declared alignments win.
    /// Computed for all types on first use; readers must have finished adding types.
    pub fn natural_align(&self, id: TypeId) -> u64 {
        let memo = self.align_memo.get_or_init(|| {
            let mut memo = vec![0u8; self.types.len()];
            for id in 0..self.types.len() {
                self.align_into(id as TypeId, &mut memo, &mut Guard::new());
            }
            memo
        });
        match memo.get(id as usize) {
            Some(&log2) => 1 << log2,
            None => 1,
        }
    }

    /// Fills `memo[id]` with log2 of the natural alignment (0 in `memo` means "not yet", which
    /// is also log2 of 1: recomputing an alignment of 1 is cheap and harmless).
    fn align_into(&self, id: TypeId, memo: &mut [u8], g: &mut Guard) -> u64 {
        if let Some(&log2) = memo.get(id as usize)
            && log2 != 0
        {
            return 1 << log2;
        }
        let align = match &self.get(id).kind {
            Kind::Int { size, .. } | Kind::Float { size } | Kind::Enum { size, .. } => {
                // x86-64 and arm64: scalars align to their size, up to 16 (long double, __int128).
                (*size as u64).clamp(1, 16).next_power_of_two()
            }
            Kind::Pointer { .. } => self.pointer_size as u64,
            Kind::Typedef { target }
            | Kind::Qualified { target, .. }
            | Kind::TypeTag { target, .. } => g.nested(1, |g| self.align_into(*target, memo, g)),
            Kind::Array { elem, .. } => g.nested(1, |g| self.align_into(*elem, memo, g)),
            Kind::Struct(c) | Kind::Union(c) => {
                let mut a = c.declared_align.map(u64::from).unwrap_or(1);
                for m in &c.members {
                    let ma = match m.declared_align {
                        Some(d) => d as u64,
                        None => g.nested(1, |g| self.align_into(m.ty, memo, g)),
                    };
                    a = a.max(ma);
                }
                a
            }
            _ => 1,
        };
        if let Some(slot) = memo.get_mut(id as usize) {
            *slot = align.trailing_zeros() as u8;
        }
        align
    }

    pub fn composite(&self, id: TypeId) -> Option<&Composite<'a>> {
        match &self.get(id).kind {
            Kind::Struct(c) | Kind::Union(c) => Some(c),
            _ => None,
        }
    }

    pub fn is_union(&self, id: TypeId) -> bool {
        matches!(self.get(id).kind, Kind::Union(_))
    }

    /// Ids of every struct and union with a body, in input order.
    pub fn composites(&self) -> impl Iterator<Item = TypeId> + '_ {
        self.types
            .iter()
            .enumerate()
            .filter(|(_, t)| match &t.kind {
                Kind::Struct(c) | Kind::Union(c) => !c.is_declaration,
                _ => false,
            })
            .map(|(i, _)| i as TypeId)
    }

    /// Every defined struct or union called `name`. Several when different definitions share
    /// a name (two compile units, or BTF that kept both).
    ///
    /// With no struct of that name, a typedef of that name that leads to a defined struct or
    /// union (`typedef struct { ... } lreg_args;`, `typedef struct foo foo_t;`) finds it: C
    /// code names such types only through the typedef.
    pub fn find_composites(&self, name: &str) -> Vec<TypeId> {
        let direct: Vec<TypeId> = self
            .composites()
            .filter(|&id| self.get(id).name == name)
            .collect();
        if !direct.is_empty() || name.is_empty() {
            return direct;
        }
        let mut out: Vec<TypeId> = Vec::new();
        for t in self.types.iter().filter(|t| t.name == name) {
            let Kind::Typedef { target } = t.kind else {
                continue;
            };
            if let Some(id) = self.composite_behind(target)
                && !out.contains(&id)
            {
                out.push(id);
            }
        }
        out
    }

    /// The defined struct or union that `id` names through typedefs and qualifiers.
    fn composite_behind(&self, mut id: TypeId) -> Option<TypeId> {
        // Bounded: a malformed file can hold a typedef cycle.
        for _ in 0..64 {
            match &self.types.get(id as usize)?.kind {
                Kind::Typedef { target }
                | Kind::Qualified { target, .. }
                | Kind::TypeTag { target, .. } => id = *target,
                Kind::Struct(c) | Kind::Union(c) => return (!c.is_declaration).then_some(id),
                _ => return None,
            }
        }
        None
    }

    /// The name of a typedef that leads to the anonymous struct or union `id`, if any.
    pub fn typedef_name_of(&self, id: TypeId) -> Option<&'a str> {
        self.types.iter().find_map(|t| match t.kind {
            Kind::Typedef { target }
                if !t.name.is_empty() && self.composite_behind(target) == Some(id) =>
            {
                Some(t.name)
            }
            _ => None,
        })
    }

    /// Up to `n` struct/union names close to `name`, best first, for "did you mean".
    pub fn similar_composite_names(&self, name: &str, n: usize) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .composites()
            .map(|id| self.get(id).name)
            .filter(|c| !c.is_empty())
            .map(|c| {
                let mut score = strsim::jaro_winkler(name, c);
                if c.contains(name) || name.contains(c) {
                    score += 0.1;
                }
                (score, c)
            })
            .filter(|(s, _)| *s > 0.8)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored.dedup_by(|a, b| a.1 == b.1);
        scored
            .into_iter()
            .take(n)
            .map(|(_, c)| c.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(types: &mut Types<'static>, name: &'static str, size: u32) -> TypeId {
        types.push(Type {
            name,
            kind: Kind::Int {
                size,
                signed: true,
                is_char: false,
                is_bool: false,
            },
        })
    }

    /// A per-CPU variable's type counts its copies per CPU only where the image shows no
    /// other instance: another global of it, or a struct embedding it, makes it unknown.
    #[test]
    fn per_cpu_instances_only_where_nothing_else_holds_the_type() {
        let mut t = Types::new(8);
        let i32_ = int(&mut t, "int", 4);
        let member = |ty: TypeId| Member {
            name: "m",
            ty,
            bit_offset: 0,
            bitfield_size: 0,
            declared_align: None,
        };
        let composite = |members: Vec<Member<'static>>| {
            Kind::Struct(Composite {
                size: 4,
                members,
                declared_align: None,
                is_declaration: false,
                origin: None,
            })
        };
        let pcpu = t.push(Type {
            name: "pcpu",
            kind: composite(vec![member(i32_)]),
        });
        let pair = t.push(Type {
            name: "",
            kind: Kind::Array {
                elem: pcpu,
                count: 2,
            },
        });
        let plain = t.push(Type {
            name: "plain",
            kind: composite(vec![member(i32_)]),
        });
        t.per_cpu.push(pair);
        assert_eq!(t.per_cpu_instances(pcpu), Some(2));
        assert_eq!(t.per_cpu_instances(plain), None);
        t.globals.push(pcpu);
        assert_eq!(t.per_cpu_instances(pcpu), None);
        t.globals.clear();
        t.push(Type {
            name: "outer",
            kind: composite(vec![member(pcpu)]),
        });
        assert_eq!(t.per_cpu_instances(pcpu), None);
    }

    #[test]
    fn sizes_and_alignment_follow_typedefs_arrays_and_members() {
        let mut t = Types::new(8);
        let i32_ = int(&mut t, "int", 4);
        let td = t.push(Type {
            name: "s32",
            kind: Kind::Typedef { target: i32_ },
        });
        let arr = t.push(Type {
            name: "",
            kind: Kind::Array { elem: td, count: 3 },
        });
        let ptr = t.push(Type {
            name: "",
            kind: Kind::Pointer { target: arr },
        });
        let s = t.push(Type {
            name: "s",
            kind: Kind::Struct(Composite {
                size: 24,
                members: vec![
                    Member {
                        name: "a",
                        ty: arr,
                        bit_offset: 0,
                        bitfield_size: 0,
                        declared_align: None,
                    },
                    Member {
                        name: "p",
                        ty: ptr,
                        bit_offset: 128,
                        bitfield_size: 0,
                        declared_align: None,
                    },
                ],
                declared_align: None,
                is_declaration: false,
                origin: None,
            }),
        });
        assert_eq!(t.size_of(arr), 12);
        assert_eq!(t.size_of(ptr), 8);
        assert_eq!(t.natural_align(arr), 4);
        assert_eq!(t.natural_align(s), 8);
        assert_eq!(t.size_of(s), 24);
        assert_eq!(t.composites().collect::<Vec<_>>(), vec![s]);
    }

    #[test]
    fn typedef_cycle_does_not_hang() {
        let mut t = Types::new(8);
        // Corrupted input: a typedef that points at itself.
        t.push(Type {
            name: "loop",
            kind: Kind::Typedef { target: 1 },
        });
        assert_eq!(t.size_of(1), 0);
        assert_eq!(t.natural_align(1), 1);
    }
}
